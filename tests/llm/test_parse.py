"""Reading structured answers: finding the JSON object and normalising bounded numbers."""

from __future__ import annotations

import copy
import math
import threading
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from verity.llm.parse import (
    EXCLUSIVE_MARGIN,
    MAX_NOTES,
    json_objects,
    normalise_numbers,
    parse_answer,
    parse_json_answer,
)
from verity.methods.common import ClaimJudgement, Confidence
from verity.methods.wkgfc.prompts import PassageChoice


class Answer(BaseModel):
    label: str
    score: float = Field(ge=0, le=1)


def fix(data: Any, schema: type[BaseModel]) -> tuple[Any, tuple[str, ...]]:
    done = normalise_numbers(data, schema.model_json_schema())
    return done.value, done.notes


def score_of(value: Any, schema: type[BaseModel] = Answer) -> Any:
    return fix({"score": value}, schema)[0]["score"]


# -- finding the object ------------------------------------------------------------------


def test_object_out_of_prose() -> None:
    got = parse_json_answer('Sure! {"label": "y", "score": 1} Hope it helps.', Answer)
    assert got == Answer(label="y", score=1.0)


def test_trailing_note_with_braces_is_ignored() -> None:
    got = parse_json_answer('{"label": "y", "score": 0.5}\nNote: see {source} and {x}.', Answer)
    assert got == Answer(label="y", score=0.5)


def test_fenced_answer() -> None:
    got = parse_json_answer('```json\n{"label": "x", "score": 0.5}\n```\nDone {ok}', Answer)
    assert got == Answer(label="x", score=0.5)


def test_braces_before_the_object_are_skipped() -> None:
    got = parse_json_answer('Using {evidence} and {{claim}}: {"label": "x", "score": 0.2}', Answer)
    assert got == Answer(label="x", score=0.2)


def test_an_earlier_object_that_does_not_validate_is_passed_over() -> None:
    text = 'For example {"a": 1}. My answer: {"label": "x", "score": 0.3}'
    assert parse_json_answer(text, Answer) == Answer(label="x", score=0.3)


def test_when_no_object_validates_the_first_objects_errors_are_raised() -> None:
    with pytest.raises(ValidationError) as info:
        parse_json_answer('{"label": "x"} then {"other": 1}', Answer)
    assert [e["loc"] for e in info.value.errors()] == [("score",)]


def test_an_object_inside_an_invalid_answer_is_not_taken_for_the_answer() -> None:
    with pytest.raises(ValidationError):
        parse_json_answer('{"result": {"label": "x", "score": 0.5}}', Answer)


def test_no_object_is_an_invalid_json_error() -> None:
    for text in ("", "no braces here", "[1, 2]", "{not json}", '"a string"'):
        with pytest.raises(ValidationError, match="no complete JSON object") as info:
            parse_json_answer(text, Answer)
        assert info.value.errors()[0]["type"] == "json_invalid"


def test_raw_newline_inside_a_string_is_accepted() -> None:
    got = parse_json_answer('{"label": "line one\nline two", "score": 0.5}', Answer)
    assert got.label == "line one\nline two"


def test_truncated_json_is_still_an_error() -> None:
    with pytest.raises(ValidationError):
        parse_json_answer('{"label": "cut off', Answer)


def test_search_for_object_starts_is_bounded() -> None:
    text = "{x " * 3 + '{"a": 1}'
    assert list(json_objects(text, limit=3)) == []
    assert list(json_objects(text, limit=4)) == [{"a": 1}]


def test_objects_are_found_in_order_and_never_inside_another() -> None:
    text = 'a {"a": {"b": 1}} b {"c": 2} {bad'
    assert list(json_objects(text)) == [{"a": {"b": 1}}, {"c": 2}]


def test_nesting_too_deep_to_decode_is_skipped() -> None:
    text = '{"a": ' + "[" * 100_000 + ' then {"label": "x", "score": 0.5}'
    assert parse_json_answer(text, Answer) == Answer(label="x", score=0.5)


def test_integer_too_long_to_convert_is_skipped() -> None:
    text = '{"n": ' + "9" * 5000 + '} {"label": "x", "score": 0.5}'
    assert parse_json_answer(text, Answer) == Answer(label="x", score=0.5)


# -- reading numbers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "read"),
    [
        (0.3, 0.3),
        (0, 0),
        (1, 1),  # a fraction already, not 1 %
        (1.5, 0.015),
        (85, 0.85),
        (100, 1.0),
        (100.5, 1),  # no percentage: clamped
        (-3, 0),
        (1e300, 1),
        (-math.inf, 0),
        (math.inf, 1),
        ("0.8", 0.8),
        (" 0.8 ", 0.8),
        ("85%", 0.85),
        ("85 %", 0.85),
        ("0.5%", 0.005),  # a percent sign always means a percentage
        ("150%", 1),
        ("-2", 0),
        ("1e-1", 0.1),
        (".5", 0.5),
        ("+70", 0.7),
    ],
)
def test_bounded_fraction_is_read_as_meant(given: Any, read: float) -> None:
    got = score_of(given)
    assert got == pytest.approx(read) and type(got) is not str


def test_only_1_to_100_is_a_percentage_and_the_rest_is_clamped() -> None:
    # The rule: a fraction's value in (1, 100] is a percentage; any other is clamped.
    assert fix({"score": 100}, Answer)[1] == ("score: 100 -> 1.0 (percentage)",)
    assert fix({"score": 100.5}, Answer)[1] == ("score: 100.5 -> 1 (clamped)",)
    assert fix({"score": 500}, Answer)[1] == ("score: 500 -> 1 (clamped)",)
    assert fix({"score": 1.0001}, Answer)[1] == ("score: 1.0001 -> 0.010001 (percentage)",)


@pytest.mark.parametrize(
    "given", [None, "high", "", "NaN", "nan", "inf", "1_000", "0x10", "٣", "1" * 65, [0.5], {}]
)
def test_values_that_are_not_numbers_are_left_for_validation(given: Any) -> None:
    assert score_of(given) == given
    assert fix({"score": given}, Answer)[1] == ()


def test_nan_is_left_for_validation() -> None:
    value, notes = fix({"score": math.nan}, Answer)
    assert math.isnan(value["score"]) and notes == ()
    with pytest.raises(ValidationError):
        parse_json_answer('{"label": "x", "score": NaN}', Answer)


def test_boolean_is_not_a_number() -> None:
    assert score_of(True) is True
    with pytest.raises(ValidationError, match="not a boolean") as info:
        parse_json_answer('{"label": "x", "score": true}', Answer)
    assert info.value.errors()[0]["loc"] == ("score",)


def test_notes_describe_each_change() -> None:
    _, notes = fix({"score": 85}, Answer)
    assert notes == ("score: 85 -> 0.85 (percentage)",)
    assert fix({"score": -3}, Answer)[1] == ("score: -3 -> 0 (clamped)",)
    assert fix({"score": 100}, Answer)[1] == ("score: 100 -> 1.0 (percentage)",)
    assert fix({"score": "0.8"}, Answer)[1] == ('score: "0.8" -> 0.8 (number in a string)',)
    assert fix({"score": "250%"}, Answer)[1] == (
        'score: "250%" -> 1 (number in a string, percentage, clamped)',
    )
    assert fix({"score": 0.8}, Answer)[1] == ()


def test_notes_are_capped() -> None:
    _, notes = fix({"confidence": [50] * (MAX_NOTES + 7)}, PassageChoice)
    assert len(notes) == MAX_NOTES + 1
    assert notes[0] == "confidence.0: 50 -> 0.5 (percentage)"
    assert notes[-1] == "... and 7 more"


def test_huge_integer_is_clamped_and_shown_short() -> None:
    value, notes = fix({"score": 10**400}, Answer)
    assert value == {"score": 1}
    assert notes == ("score: ~1e400 -> 1 (clamped)",)


def test_input_is_not_changed() -> None:
    data = {"label": "x", "score": 85, "extra": [1, 2]}
    before = copy.deepcopy(data)
    fix(data, Answer)
    assert data == before


class Bounded(BaseModel):
    count: int = Field(default=1, ge=1, le=5)
    positive: int = Field(default=1, gt=0)
    below: int = Field(default=0, lt=10)
    score: float = Field(default=1.0, ge=-1, le=1)
    rate: float = Field(default=0.5, gt=0, lt=1)
    weight: float = Field(default=1.0, gt=0)
    tenth: float = Field(default=1.0, gt=0, lt=10)
    big: float = Field(default=1001.0, gt=1000)
    unbounded: float = 0.0


@pytest.mark.parametrize(
    ("field", "given", "read"),
    [
        ("count", 9, 5),
        ("count", 0, 1),
        ("count", -2.5, 1),
        ("count", "3", 3),
        ("count", 3.5, 3.5),  # in range: validation decides
        ("positive", -1, 1),
        ("positive", 0, 1),
        ("below", 12, 9),
        ("below", 10, 9),
        ("score", 85, 1),  # not [0, 1]: no percentage reading
        ("score", -7, -1),
        ("rate", 500, 1 - EXCLUSIVE_MARGIN),
        ("rate", 0, EXCLUSIVE_MARGIN),
        ("rate", 40, 0.4),  # exclusive bounds 0 and 1 still make a fraction
        ("rate", 100, 1 - EXCLUSIVE_MARGIN),
        ("weight", -5, EXCLUSIVE_MARGIN),
        ("tenth", -5, 10 * EXCLUSIVE_MARGIN),  # a share of the range
        ("tenth", 12, 10 - 10 * EXCLUSIVE_MARGIN),
        ("big", 3, 1000 + 1000 * EXCLUSIVE_MARGIN),
        ("unbounded", 1e9, 1e9),
        ("unbounded", "12", "12"),  # unbounded numbers are validation's business
    ],
)
def test_bounds_of_every_kind(field: str, given: Any, read: Any) -> None:
    (value, _) = fix({field: given}, Bounded)
    expected = read if isinstance(read, str) else pytest.approx(read, rel=1e-12)
    assert value[field] == expected
    if isinstance(read, float) and field in ("rate", "weight", "tenth", "big"):
        Bounded.model_validate(value)  # just inside, never on the bound


def test_integer_in_a_string_keeps_every_digit() -> None:
    # Read as a float, it would lose its last digit.
    value, _ = fix({"positive": "9007199254740993"}, Bounded)
    assert value["positive"] == 9007199254740993


def test_exclusive_bound_too_large_for_the_margin_takes_the_next_float() -> None:
    class Narrow(BaseModel):
        x: float = Field(gt=1e16, lt=1e16 + 4)

    value, _ = fix({"x": 0}, Narrow)
    assert value["x"] == math.nextafter(1e16, math.inf)
    Narrow.model_validate(value)


class Inner(BaseModel):
    p: Confidence


class Nested(BaseModel):
    many: list[Confidence] = []
    pair: tuple[Confidence, Confidence] | None = None
    inner: Inner | None = None
    inners: list[Inner] = []
    by_name: dict[str, Confidence] = {}
    maybe: Confidence | None = None
    either: Confidence | str = 0
    flag_or_score: bool | Confidence = False


def test_nested_objects_lists_refs_and_unions_are_followed() -> None:
    data = {
        "many": [85, "0.5", 0.2],
        "pair": [50, -1],
        "inner": {"p": 42},
        "inners": [{"p": 7}, {"p": "9%"}],
        "by_name": {"a": 2},
        "maybe": 30,
    }
    value, notes = fix(data, Nested)
    assert value == {
        "many": [0.85, 0.5, 0.2],
        "pair": [0.5, 0],
        "inner": {"p": 0.42},
        "inners": [{"p": 0.07}, {"p": 0.09}],
        "by_name": {"a": 0.02},
        "maybe": 0.3,
    }
    assert 'inners.1.p: "9%" -> 0.09 (number in a string, percentage)' in notes
    Nested.model_validate(value)


def test_a_string_or_boolean_the_schema_allows_is_not_read_as_a_number() -> None:
    value, notes = fix({"either": "0.5", "flag_or_score": True}, Nested)
    assert value == {"either": "0.5", "flag_or_score": True} and notes == ()
    assert fix({"flag_or_score": 50}, Nested)[0] == {"flag_or_score": 0.5}
    got = parse_json_answer('{"either": "70", "flag_or_score": true}', Nested)
    assert got.either == "70" and got.flag_or_score is True


def test_null_in_an_optional_field_is_left_alone() -> None:
    assert fix({"maybe": None}, Nested)[0] == {"maybe": None}


def test_self_referencing_schema_and_deep_answer_do_not_exhaust_the_stack() -> None:
    class Tree(BaseModel):
        weight: Confidence = 0.5
        children: list[Tree] = []

    deep: dict[str, Any] = {"weight": 50}
    for _ in range(2000):
        deep = {"weight": 50, "children": [deep]}
    value, notes = fix(deep, Tree)
    assert value["weight"] == 0.5 and notes[0] == "weight: 50 -> 0.5 (percentage)"


def test_odd_schemas_do_not_break_the_walk() -> None:
    odd: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/Loop"},
            "b": {"$ref": "http://elsewhere/schema.json"},
            "c": {"type": "number", "minimum": True, "maximum": "1"},
            "d": {"type": ["number", "null"], "maximum": 10},
            "e": {"anyOf": [{"type": "number", "maximum": 1}, {"type": "integer", "maximum": 5}]},
            # Not a reference into $defs, though a definition has that name.
            "f": {"$ref": "Small"},
            # An infinite bound is no bound: the margin comes from the other one alone.
            "g": {"type": "number", "exclusiveMinimum": 0, "maximum": math.inf},
        },
        "$defs": {"Loop": {"$ref": "#/$defs/Loop"}, "Small": {"type": "number", "maximum": 1}},
    }
    data = {"a": 5, "b": 5, "c": 5, "d": 50, "e": 50, "f": 5, "g": -5}
    done = normalise_numbers(data, odd)
    assert done.value == {"a": 5, "b": 5, "c": 5, "d": 10, "e": 50, "f": 5, "g": EXCLUSIVE_MARGIN}
    assert done.notes == ("d: 50 -> 10 (clamped)", f"g: -5 -> {EXCLUSIVE_MARGIN!r} (clamped)")


def test_unions_of_references_to_themselves_are_unfolded_within_a_budget() -> None:
    # Unfolded without a budget, this union stands for 3**64 schemas.
    loop = {"anyOf": [{"$ref": "#/$defs/A"}] * 3}
    schema = {"$ref": "#/$defs/A", "$defs": {"A": loop}}
    worker = threading.Thread(target=normalise_numbers, args=({"a": 5}, schema), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()


# -- the schemas methods declare ---------------------------------------------------------


def test_claim_judgement_confidence_as_percentage() -> None:
    done = parse_answer(
        '{"explanation": "e", "label": "SUPPORTED", "confidence": 85}', ClaimJudgement
    )
    assert done.value.confidence == 0.85
    assert done.notes == ("confidence: 85 -> 0.85 (percentage)",)


def test_passage_choice_confidences() -> None:
    got = parse_json_answer('{"kept": [1, 2], "confidence": ["90%", 120, -0.1]}', PassageChoice)
    assert got.confidence == [0.9, 1.0, 0.0]


class Decision(BaseModel):
    reason: str
    decision: str
    confidence: Confidence


def test_decision_confidence_in_a_string() -> None:
    got = parse_json_answer(
        '{"reason": "r", "decision": "Real", "confidence": "0.7"} Note: {x}', Decision
    )
    assert got.confidence == 0.7


def test_confidence_type_keeps_its_bounds_without_the_client() -> None:
    class Judged(BaseModel):
        confidence: Confidence

    Judged.model_validate({"confidence": 1})
    with pytest.raises(ValidationError):
        Judged.model_validate({"confidence": 85})
    with pytest.raises(ValidationError):
        Judged.model_validate({"confidence": -0.1})


Score = Annotated[float, Field(ge=0, le=10)]


def test_a_zero_to_ten_score_is_clamped_not_read_as_a_percentage() -> None:
    class Rated(BaseModel):
        score: Score

    assert parse_json_answer('{"score": 50}', Rated).score == 10
    assert parse_json_answer('{"score": "5%"}', Rated).score == 5
