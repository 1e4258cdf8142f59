"""programfc's program parser and executor: the ProgramFC format, bad programs, the repair rule."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from verity.domain import Claim, Label, Message
from verity.errors import ModelOutputError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.methods.baselines.programfc.program import ProgramError, parse_program
from verity.testing import FakeChatModel

# A program written the way ProgramFC's prompts show it: scaffolding, an f-string, quotes.
WRITTEN = """```python
# The claim is that the director of Alien was born in England.
def program():
    answer_1 = Question("Who directed Alien?")
    fact_1 = Verify(f"{answer_1} was born in England.")
    fact_2 = Verify('Alien was released in 1979.')
    label = Predict(fact_1 and fact_2)
```"""


def test_a_program_in_programfc_s_format_is_read_call_by_call() -> None:
    program = parse_program(WRITTEN)
    assert [(c.var, c.kind, c.text) for c in program.calls] == [
        ("answer_1", "question", "Who directed Alien?"),
        ("fact_1", "verify", "{answer_1} was born in England."),
        ("fact_2", "verify", "Alien was released in 1979."),
    ]
    assert program.calls[1].references == ("answer_1",)
    assert program.calls[1].resolved({"answer_1": "Ridley Scott"}) == (
        "Ridley Scott was born in England."
    )
    assert program.predict.expression == "fact_1 and fact_2"
    assert program.predict.evaluate({"fact_1": True, "fact_2": True}) is True
    assert program.predict.evaluate({"fact_1": True, "fact_2": False}) is False


def test_the_first_predict_ends_the_program_and_what_follows_is_not_read() -> None:
    # ProgramFC cut generation where the next example began ("# The claim is").
    text = (
        'fact_1 = Verify("A.")\nlabel = Predict(fact_1)\n'
        "# The claim is that B.\nThe claim is true, I think.\nlabel = Predict(fact_9)"
    )
    program = parse_program(text)
    assert [c.var for c in program.calls] == ["fact_1"]
    assert program.predict.expression == "fact_1"


def test_a_lower_case_predict_is_read_as_programfc_s_own_prompt_writes_it() -> None:
    program = parse_program('fact_1 = Verify("A.")\nlabel = predict(fact_1)')
    assert program.predict.evaluate({"fact_1": False}) is False


@pytest.mark.parametrize(
    ("expression", "facts", "expected"),
    [
        # and binds tighter than or: True or (False and False) = True.
        ("fact_1 or fact_2 and fact_3", (True, False, False), True),
        # parentheses override it: (True or False) and False = False.
        ("(fact_1 or fact_2) and fact_3", (True, False, False), False),
        # not binds tightest: (not True) or True = True.
        ("not fact_1 or fact_2", (True, True, True), True),
        ("not (fact_1 or fact_2)", (True, False, False), False),
        ("not not fact_3", (False, False, True), True),
        ("fact_1 and fact_2 and fact_3", (True, True, False), False),
    ],
)
def test_predict_evaluates_its_logical_expression(
    expression: str, facts: tuple[bool, bool, bool], expected: bool
) -> None:
    text = "\n".join(f'fact_{i} = Verify("S{i}.")' for i in (1, 2, 3))
    program = parse_program(f"{text}\nlabel = Predict({expression})")
    values = dict(zip(("fact_1", "fact_2", "fact_3"), facts, strict=True))
    assert program.predict.evaluate(values) is expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('fact_1 = Verify("A.")', "no label = Predict"),
        ('answer_1 = Question("Who?")\nlabel = Predict(answer_1)', "no earlier Verify defines"),
        ('fact_1 = Verify("A.")\nlabel = Predict(fact_1 and fact_2)', "fact_2, which no earlier"),
        ('fact_1 = Verify("{answer_1} is tall.")\nlabel = Predict(fact_1)', "{answer_1}, which no"),
        (
            'fact_1 = Verify("A.")\nfact_2 = Verify("{fact_1} again.")\nlabel = Predict(fact_2)',
            "{fact_1}, which no earlier Question",
        ),
        (
            'fact_1 = Verify("{answer_1} is tall.")\nanswer_1 = Question("Who?")\n'
            "label = Predict(fact_1)",
            "{answer_1}, which no earlier Question",
        ),
        ('fact_1 = Verify("A.")\nThe claim is true.\nlabel = Predict(fact_1)', "line 2 is not"),
        ('fact_1 = Verify("A.")\nfact_1 = Verify("B.")\nlabel = Predict(fact_1)', "set twice"),
        ('fact_1 = Verify("  ")\nlabel = Predict(fact_1)', "empty text"),
        ('answer_1 = Question("Who?")\nlabel = Predict()', "no argument"),
        ('fact_1 = Verify("A.")\nlabel = Predict(fact_1 and)', "ends too early"),
        ('fact_1 = Verify("A.")\nlabel = Predict((fact_1)', "unclosed parenthesis"),
        ('fact_1 = Verify("A.")\nlabel = Predict(fact_1 fact_1)', "unexpected 'fact_1'"),
        ('fact_1 = Verify("A.")\nlabel = Predict(fact_1 == 1)', "cannot read '== 1'"),
        ('label = Verify("A.")\nlabel = Predict(label)', "set by Predict only"),
        # Never evaluated as Python: a call inside Predict is just unreadable text.
        ('fact_1 = Verify("A.")\nlabel = Predict(__import__("os"))', "cannot read"),
        ('answer_1 = Question("Who?")\nlabel = Predict(not answer_1)', "no earlier Verify"),
    ],
)
def test_a_bad_program_is_rejected_with_the_rule_it_breaks(text: str, error: str) -> None:
    with pytest.raises(ProgramError) as caught:
        parse_program(text)
    assert error in str(caught.value)


def test_the_number_of_calls_and_the_length_of_a_text_are_capped() -> None:
    # 12 calls are allowed, a 13th is not; a text of 400 characters is, 401 is not.
    twelve = "\n".join(f'fact_{i} = Verify("S{i}.")' for i in range(1, 13))
    assert len(parse_program(twelve + "\nlabel = Predict(fact_1)").calls) == 12
    with pytest.raises(ProgramError, match="more than 12 calls"):
        parse_program(twelve + '\nfact_13 = Verify("S.")\nlabel = Predict(fact_1)')
    assert parse_program(f'fact_1 = Verify("{"a" * 400}")\nlabel = Predict(fact_1)')
    with pytest.raises(ProgramError, match="longer than 400 characters"):
        parse_program(f'fact_1 = Verify("{"a" * 401}")\nlabel = Predict(fact_1)')


# -- execution: the repair round and the no-vote fallback -----------------------------------


class Script:
    """A fake model's answers per kind of call (program, question, verify), in order."""

    def __init__(self, programs: Sequence[str], answers: Sequence[str], truths: Sequence[bool]):
        self.queues: dict[str, list[str]] = {
            "program": list(programs),
            "question": [json.dumps({"answer": a}) for a in answers],
            "verify": [json.dumps({"answer": t}) for t in truths],
        }

    def __call__(self, messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        system = messages[0].content
        kind = (
            "program"
            if system.startswith("You turn a claim")
            else ("question" if "simple question" in system else "verify")
        )
        return self.queues[kind].pop(0)


def _fake(script: Script) -> tuple[ModelSet, FakeChatModel]:
    fake = FakeChatModel(script, model="fake-programfc-exec")
    return ModelSet(ModelClient(fake)), fake


CLAIM = Claim(text="The director of Alien was born in England.")
GOOD = 'answer_1 = Question("Who directed Alien?")\nfact_1 = Verify("{answer_1} is English.")\n'


def test_an_undefined_variable_is_sent_back_once_and_the_repaired_program_runs() -> None:
    broken = GOOD + "label = Predict(fact_2)"
    fixed = GOOD + "label = Predict(fact_1)"
    models, fake = _fake(Script([broken, fixed], ["Ridley Scott"], [True]))
    verdict = load_method("programfc", models=models).verify(CLAIM)
    assert [c.step for c in verdict.trace.calls] == [
        "programfc.program",
        "programfc.program.repair",
        "programfc.question",
        "programfc.verify",
    ]
    repair = fake.requests[1][0]
    assert repair[-2].role == "assistant" and repair[-2].content == broken
    assert "<error>Predict names fact_2, which no earlier Verify defines</error>" in (
        repair[-1].content
    )
    assert verdict.label is Label.SUPPORTED
    assert verdict.trace.model_dump()["programs"][0]["text"] == fixed


def test_a_repair_that_parrots_the_feedback_casts_no_vote() -> None:
    broken = GOOD + "label = Predict(fact_2)"
    parrot = 'That program cannot be run: fact_1 = Verify("A.")\nlabel = Predict(fact_1)'
    models, _ = _fake(Script([broken, parrot], [], []))
    with pytest.raises(ModelOutputError, match="repeats the feedback"):
        load_method("programfc", models=models).verify(CLAIM)


def test_when_no_program_can_vote_the_check_fails_rather_than_guess() -> None:
    # ProgramFC's code picks a random label here; verity fails the check instead.
    bad = 'fact_1 = Verify("A.")'
    models, _ = _fake(Script([bad, bad], [], []))
    with pytest.raises(ModelOutputError, match="no program could be executed"):
        load_method("programfc", models=models).verify(CLAIM)


def test_a_long_answer_is_capped_before_it_fills_a_later_statement() -> None:
    models, fake = _fake(Script([GOOD + "label = Predict(fact_1)"], ["x" * 500], [False]))
    verdict = load_method("programfc", models=models).verify(CLAIM)
    statement = fake.requests[2][0][-1].content
    assert "x" * 200 + " is English." in statement and "x" * 201 not in statement
    assert verdict.label is Label.REFUTED
