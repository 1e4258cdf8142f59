from __future__ import annotations

import pytest

from verity.methods.local.program import (
    And,
    Decomposition,
    Not,
    Or,
    ProgramError,
    Step,
    Var,
    parse_deduction,
    parse_program,
    resolve,
    variables,
)


def test_precedence_is_not_then_and_then_or() -> None:
    expr = parse_deduction("f1 or not f2 and f3")
    assert expr == Or((Var("f1"), And((Not(Var("f2")), Var("f3")))))
    assert str(expr) == "f1 or (not f2 and f3)"


def test_parentheses_and_case() -> None:
    expr = parse_deduction(" NOT (f1 Or f2) AND f3 ")
    assert expr == And((Not(Or((Var("f1"), Var("f2")))), Var("f3")))
    assert variables(expr) == {"f1", "f2", "f3"}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"f1": True, "f2": False, "f3": True}, True),  # not(T or F) = F ... or f1 and f3 = T
        ({"f1": False, "f2": False, "f3": True}, True),  # not(F or F) = T
        ({"f1": False, "f2": True, "f3": True}, False),  # not(T) = F, f1 and f3 = F
        ({"f1": True, "f2": True, "f3": False}, False),
    ],
)
def test_evaluation_against_a_truth_table(env: dict[str, bool], expected: bool) -> None:
    assert parse_deduction("not (f1 or f2) or f1 and f3").evaluate(env) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("f1 and", "ends too early"),
        ("(f1 or f2", "ends too early"),
        ("f1 or f2)", r"unexpected '\)'"),
        ("f1 && f2", "unexpected '&&'"),
        ("__import__('os')", "unexpected"),
        ("f1 f2", "unexpected 'f2'"),
        ("a1 and f1", "unexpected 'a1'"),
    ],
)
def test_bad_deductions_are_program_errors(text: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message):
        parse_deduction(text)


def program(questions: list[str], facts: list[str], deduction: str) -> Decomposition:
    return Decomposition.model_construct(
        questions=[Step(text=q) for q in questions],
        facts=[Step(text=f) for f in facts],
        deduction=deduction,
    )


def test_program_names_variables_in_order() -> None:
    parsed = parse_program(
        program(
            ["Who wrote X?", "Where was {q1} born?"],
            ["{q2} is in Europe.", "X is old."],
            "f1 and not f2",
        )
    )
    assert [(t.var, t.type) for t in parsed.subtasks] == [
        ("q1", "question"),
        ("q2", "question"),
        ("f1", "fact"),
        ("f2", "fact"),
    ]
    assert parsed.to_dict()["deduction"] == "f1 and not f2"


@pytest.mark.parametrize(
    ("questions", "facts", "deduction", "message"),
    [
        # A question may refer only to an earlier question, a fact to any question.
        (["Who is {q1}?"], ["x"], "f1", r"q1 contains '\{q1\}'.*earlier questions"),
        (["Who?"], ["{q2} is big."], "f1", r"f1 contains '\{q2\}'"),
        # Any other brace token is rejected, whatever it looks like.
        (["Who?"], ["{a1} is big."], "f1", r"f1 contains '\{a1\}'"),
        ([], ["{f1} again"], "f1", r"f1 contains '\{f1\}'"),
        (["Who?"], ["{ q1 } is big."], "f1", r"contains '\{ q1 \}'"),
        (["Who?"], ["{q01} is big."], "f1", r"contains '\{q01\}'"),
        (["Who?"], ["{} is big."], "f1", r"contains '\{\}'"),
        (["Who?"], ["{q1} is {big"], "f1", r"contains '\{'"),
        (["Who?"], ["{q1} is big}"], "f1", r"contains '\}'"),
        (["Who?", "What of {q1}?"], ["{q1} is {x}"], "f1", r"contains '\{x\}'"),
        # Every question's answer is used; every fact is in the deduction.
        (["Who?"], ["x"], "f1", "the answer of q1 is never used"),
        (["Who?", "Where is {q1}?"], ["{q1} is big."], "f1", "the answer of q2 is never used"),
        ([], ["x", "y"], "f1", "leaves out f2"),
        ([], ["x", "y", "z"], "f1 or f3", "leaves out f2"),
        ([], ["x"], "f2", "uses f2, but the facts are f1"),
        (["Who?"], ["{q1}"], "q1", "uses q1, but the facts are f1"),
        (["Who?"], [], "f1", "no fact"),
        ([], ["  "], "f1", "f1 has no text"),
        (["q"] * 6, ["f"] * 5, "f1", "at most 10"),
    ],
)
def test_invalid_programs(questions, facts, deduction, message) -> None:
    with pytest.raises(ProgramError, match=message):
        parse_program(program(questions, facts, deduction))


def test_a_valid_multi_hop_program_uses_every_part() -> None:
    parsed = parse_program(
        program(
            ["Who directed Alien?", "Where was {q1} born?", "Who directed Heat?"],
            ["{q2} is in England.", "{q1} is older than {q3}."],
            "f1 and f2",
        )
    )
    assert [t.var for t in parsed.subtasks] == ["q1", "q2", "q3", "f1", "f2"]
    # Ten sub-tasks is the cap, not over it.
    ten = program([], [f"fact {i}" for i in range(10)], " and ".join(f"f{i}" for i in range(1, 11)))
    assert len(parse_program(ten).subtasks) == 10


def test_the_answer_format_asks_the_shape_and_reading_leaves_the_rules_to_the_parser() -> None:
    schema = Decomposition.model_json_schema()
    # The format a local model's grammar follows: facts only, in the flat shape.
    assert schema["properties"]["deduction"]["pattern"].startswith("^(not )?f")
    assert schema["properties"]["facts"]["minItems"] == 1
    # Reading does not enforce them, so the parser names the broken rule for the
    # program's repair round (not the client's generic schema repair).
    read = Decomposition.model_validate_json(
        '{"questions": [], "facts": [{"text": "x"}], "deduction": "q1 and f1"}'
    )
    with pytest.raises(ProgramError, match="the deduction uses q1, but the facts are f1"):
        parse_program(read)
    empty = Decomposition.model_validate_json('{"facts": [], "deduction": "f1"}')
    with pytest.raises(ProgramError, match="no fact to verify"):
        parse_program(empty)
    shaped = Decomposition.model_validate_json(
        '{"facts": [{"text": "x"}, {"text": "y"}], "deduction": "f1 and f2."}'
    )
    with pytest.raises(ProgramError, match=r"unexpected '\.'"):
        parse_program(shaped)
    # 3.2.1 asks for "a logical expression": one in parentheses or capitals is read.
    loose = Decomposition.model_validate_json(
        '{"facts": [{"text": "x"}, {"text": "y"}, {"text": "z"}], "deduction": "(F1 OR f2) and f3"}'
    )
    assert str(parse_program(loose).deduction) == "(f1 or f2) and f3"


def test_resolve_substitutes_answers_and_leaves_unknown_references() -> None:
    assert resolve("{q1} was born in {q2}.", {"q1": "Ridley Scott", "q2": "England"}) == (
        "Ridley Scott was born in England."
    )
    assert resolve("{q3} stays", {"q1": "x"}) == "{q3} stays"


def test_the_deduction_repair_format_names_only_the_facts_there_are() -> None:
    import re

    from verity.methods.local.program import deduction_pattern

    three = deduction_pattern(3)
    assert three == "^(not )?f[1-3]( (and|or) (not )?f[1-3])*$"
    assert re.fullmatch(three, "f1 and not f3") and not re.fullmatch(three, "f1 and f4")
    ten = deduction_pattern(10)
    assert re.fullmatch(ten, "f10 or f1 and f9")
    assert not re.fullmatch(ten, "f11") and not re.fullmatch(ten, "f0")


def test_a_long_brace_token_is_quoted_cut() -> None:
    token = "{" + "x" * 60 + "}"
    with pytest.raises(ProgramError) as caught:
        parse_program(program([], [f"{token} is big."], "f1"))
    assert f"contains '{token[:37]}...'" in str(caught.value)
    assert token not in str(caught.value)
