"""What each LoCal agent is shown, how a malformed deduction is repaired, and the rule each
variant's manifest states, with a scripted fake model (the model is not the point)."""

from __future__ import annotations

import json

import pytest

from verity.domain import Claim, Evidence, Label, Message
from verity.errors import ModelOutputError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.methods.local import agents
from verity.testing import FakeChatModel

CLAIM = Claim(text="Alien came out in 1979.")
GOLD = [Evidence(text="Alien is a 1979 film by Ridley Scott.", title="Alien", source="gold")]


def one_fact(deduction: str) -> dict[str, object]:
    return {"questions": [], "facts": [{"text": "Alien came out in 1979."}], "deduction": deduction}


class FakeScript:
    """Answers each step by the schema it asks for; decompositions are consumed in order."""

    def __init__(self, decompositions: list[object], logical: bool = True, conflict: bool = True):
        self.decompositions = list(decompositions)
        self.logical, self.conflict = logical, conflict

    def __call__(self, messages: list[Message], schema: dict | None) -> str:
        title = schema["title"] if schema else "text"
        if title == "Decomposition":
            item = self.decompositions.pop(0)
            return item if isinstance(item, str) else json.dumps(item)
        if title == "Deduction":
            item = self.decompositions.pop(0)
            assert isinstance(item, dict)
            return json.dumps({"deduction": item["deduction"]})
        if title == "QuestionAnswer":
            return json.dumps({"answer": "Ridley Scott"})
        if title == "FactAnswer":
            return json.dumps({"reason": "r", "answer": True})
        if title == "LogicalJudgement":
            return json.dumps({"reason": "l", "claim_is_true": self.logical})
        return json.dumps({"reason": "c", "contradiction": self.conflict})


def run(script: FakeScript, name: str = "local", dataset: str | None = None, **config: object):
    fake = FakeChatModel(script)
    method = load_method(name, models=ModelSet(ModelClient(fake)), **config)
    if dataset is not None:
        method.use_dataset(dataset)
    return method, method.verify(CLAIM, evidence=GOLD), fake


def requests_for(fake: FakeChatModel, title: str) -> list[list[Message]]:
    return [
        messages for messages, _, schema in fake.requests if schema and schema["title"] == title
    ]


# -- 3.2.4: L(d) takes d, never v ------------------------------------------------------------


def test_the_logical_evaluator_is_shown_nothing_that_depends_on_v() -> None:
    # The same sub-task with the same answer (true), so the same d, under two deductions:
    # "f1" gives v = true, "not f1" gives v = false. Whatever wording a prompt might give
    # v in, the logical agent's request must be the same in both.
    _, kept, kept_fake = run(FakeScript([one_fact("f1")]), max_iterations=1)
    _, flipped, flipped_fake = run(FakeScript([one_fact("not f1")]), max_iterations=1)
    v_kept = kept.trace.model_dump()["iterations"][0]["predicted"]
    v_flipped = flipped.trace.model_dump()["iterations"][0]["predicted"]
    assert (v_kept, v_flipped) == (True, False)
    (seen_kept,) = requests_for(kept_fake, "LogicalJudgement")
    (seen_flipped,) = requests_for(flipped_fake, "LogicalJudgement")
    assert [m.content for m in seen_kept] == [m.content for m in seen_flipped]
    # No assumed verdict either, in any case: that is the counterfactual agent's input.
    assert not any("assum" in m.content.lower() for m in seen_kept)
    # The counterfactual agent is told not v, so its requests do differ: the comparison
    # above can see a v that reaches a prompt.
    (cf_kept,) = requests_for(kept_fake, "CounterfactualJudgement")
    (cf_flipped,) = requests_for(flipped_fake, "CounterfactualJudgement")
    assert [m.content for m in cf_kept] != [m.content for m in cf_flipped]


# -- 4.3: reasoners and evaluators zero-shot -------------------------------------------------


def test_reasoners_and_evaluators_get_no_demonstrations() -> None:
    program = {
        "questions": [{"text": "Who directed Alien?"}],
        "facts": [{"text": "{q1} directed a film in 1979."}],
        "deduction": "f1",
    }
    _, _, fake = run(FakeScript([program]), dataset="hover", max_iterations=1)
    claims = [demo["claim"] for demo in agents.demos("hover")]
    titles = ["QuestionAnswer", "FactAnswer", "LogicalJudgement", "CounterfactualJudgement"]
    for title in titles:
        (messages,) = requests_for(fake, title)
        # Zero-shot: the instruction, then the one request; no demonstration turns.
        assert [m.role for m in messages] == ["system", "user"]
        assert not any(claim in m.content for claim in claims for m in messages)
    # The decomposer, by contrast, is shown its 20 (3.2.1, 4.3).
    (decomposer,) = requests_for(fake, "Decomposition")
    assert [m.role for m in decomposer] == ["system"] + ["user", "assistant"] * 20 + ["user"]


# -- a malformed deduction goes to the program's own repair round ----------------------------


@pytest.mark.parametrize(
    ("deduction", "named"),
    [
        ("f1 and q1", "the deduction uses q1, but the facts are f1"),
        ("f1.", "unexpected '.'"),
        ("f1 & f1", "unexpected '&'"),
    ],
)
def test_a_deduction_of_the_wrong_shape_gets_the_program_repair_round(
    deduction: str, named: str
) -> None:
    script = FakeScript([one_fact(deduction), {"deduction": "f1"}])
    _, verdict, fake = run(script, max_iterations=1)
    assert verdict.label is Label.SUPPORTED
    steps = [call.step for call in verdict.trace.calls]
    assert steps[:2] == ["local.decompose", "local.decompose.repair"]
    # The sub-tasks were valid, so only the deduction is asked again, with the rule named.
    (repair,) = requests_for(fake, "Deduction")
    assert named in repair[-1].content
    assert "Write only the deduction again, over f1 to f1" in repair[-1].content


# -- the rule each variant runs, as its manifest states it (5.2) -----------------------------


@pytest.mark.parametrize(
    ("name", "evaluator"),
    [("local/no-logical", "counterfactual"), ("local/no-counterfactual", "logical")],
)
def test_with_one_evaluator_the_manifest_states_its_acceptance_is_final(
    name: str, evaluator: str
) -> None:
    # The remaining evaluator accepts, the ablated one would not have been asked: the
    # solution is final after one iteration, which is what the manifest must say.
    method, verdict, _ = run(FakeScript([one_fact("f1")] * 3), name=name)
    assert verdict.trace.model_dump()["iterations_used"] == 1 and verdict.confidence == 1.0
    rule = method.to_dict()["iterations_rule"]
    assert rule.startswith(f"{evaluator} evaluator alone")
    assert "accepts -> v final" in rule and "rejects -> count not v" in rule
    assert "both evaluators" not in rule


def test_with_one_evaluator_a_rejection_counts_not_v() -> None:
    # Logical alone, L(d) = false against v = true: rejected, counts NEG each time.
    method, verdict, _ = run(
        FakeScript([one_fact("f1")] * 3, logical=False), name="local/no-counterfactual"
    )
    trace = verdict.trace.model_dump()
    assert (trace["iterations_used"], trace["pos"], trace["neg"]) == (3, 0, 3)
    assert verdict.label is Label.REFUTED
    assert "rejects -> count not v" in method.to_dict()["iterations_rule"]


def test_the_full_method_states_algorithm_1() -> None:
    # One acceptance (C finds no conflict) counts v; three of them: POS 3, True, 3/3.
    method, verdict, _ = run(FakeScript([one_fact("f1")] * 3, conflict=False))
    trace = verdict.trace.model_dump()
    assert (trace["pos"], trace["neg"]) == (3, 0) and verdict.label is Label.SUPPORTED
    rule = method.to_dict()["iterations_rule"]
    assert rule.startswith("Algorithm 1: both evaluators accept -> v final")
    assert "one accepts -> count v" in rule and "none accepts -> count not v" in rule
    assert "a tie is False" in rule


def test_a_repaired_deduction_is_judged_by_the_parser_not_by_its_format() -> None:
    # One fact; the repair names f2, which the format's pattern (f1 only) would not let a
    # grammar write. Read as it is, the parser names the fault and the iteration ends:
    # one repair round, not a second one from the client's schema check.
    script = FakeScript([one_fact("f1 or"), {"deduction": "f1 or f2"}])
    fake = FakeChatModel(script)
    method = load_method("local", models=ModelSet(ModelClient(fake)), max_iterations=1)
    with pytest.raises(ModelOutputError, match="after one repair round: the deduction uses f2"):
        method.verify(CLAIM, evidence=GOLD)
    titles = [schema["title"] for _, _, schema in fake.requests if schema]
    assert titles == ["Decomposition", "Deduction"]
