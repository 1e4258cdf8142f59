"""LoCal's agents as declared steps: decomposer, two reasoners, two evaluators.

Each agent is one `Step` (instruction, template, typed output); `method.py` wires them.
Section numbers refer to the LoCal paper (Ma et al., WWW 2025). The paper gives no
prompt text; each instruction asks what its section describes, in verity's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from verity.errors import BadInputError
from verity.llm.step import Shot, Step
from verity.methods.local.program import (
    MAX_SUBTASKS,
    Decomposition,
    ProgramError,
    parse_program,
)

# -- 3.2.1 decomposing agent ---------------------------------------------------------------

# The instruction states every rule `program.parse_program` holds a program to, in the
# format the demonstrations use: questions q1.., facts f1.., {qN} references, at most
# MAX_SUBTASKS sub-tasks, at least one fact, and the deduction's shape (the pattern the
# answer format carries: names joined by lower-case operators, single spaces, no
# parentheses). A model that breaks one is told which in the repair round.
DECOMPOSE = Step(
    name="local.decompose",
    instruction=(
        "You break a claim into simple sub-tasks to check it one step at a time. Write "
        '"questions": one-hop questions, each answered by a short phrase (a name, place, '
        'date or number), named q1, q2, ... in order; and "facts": single statements, each '
        "true or false, named f1, f2, ... in order. Write at least one fact, and at most "
        f"{MAX_SUBTASKS} sub-tasks in all. A question may use an earlier question's answer "
        "as {q1}, {q2}, ...; a fact may use any question's answer so. Braces hold nothing "
        "else, and every question's answer is used by a later sub-task. Then write the "
        '"deduction", true exactly when the claim is, over the facts only, with every '
        'fact in it: fact names joined by "and" or "or", each possibly preceded by "not", '
        'in lower case with single spaces and no parentheses ("and" binds tighter), for '
        "example: f1 and not f2 or f3. Answer with JSON only."
    ),
    template="Claim: {claim}",
    output=Decomposition,
)

# -- 3.2.3 reasoning agents ------------------------------------------------------------------

# A bound on a reason in the answer format only: a small local model's grammar then ends a
# rambling reason and still writes the verdict, instead of running out of tokens (512)
# before it. Not enforced on validation, so a longer reason from another model is kept.
# 800 characters is about twice the paper's longest evaluator text (Table 6).
REASON_CHARS = 800


def _reason() -> Any:
    return Field(json_schema_extra={"maxLength": REASON_CHARS})


class FactAnswer(BaseModel):
    """The fact-verification agent's answer: a boolean, after a short reason."""

    reason: str = _reason()
    answer: bool


class QuestionAnswer(BaseModel):
    """The question-answering agent's answer: a short phrase."""

    answer: str


VERIFY_FACT = Step(
    name="local.verify_fact",
    instruction=(
        "You verify one simple statement. Compare it with the evidence and decide whether "
        "it is true. If there is no evidence, use your own knowledge. Give a one-sentence "
        "reason, then the answer true or false."
    ),
    template="Evidence:\n{evidence}\n\nStatement: {statement}",
    output=FactAnswer,
)

ANSWER_QUESTION = Step(
    name="local.answer_question",
    instruction=(
        "You answer one simple question with a short phrase (a name, a date, a number, a "
        "place) taken from the evidence. If there is no evidence, use your own knowledge."
    ),
    template="Evidence:\n{evidence}\n\nQuestion: {question}",
    output=QuestionAnswer,
)

# -- 3.2.4 evaluating agents ----------------------------------------------------------------


class LogicalJudgement(BaseModel):
    """The logically evaluating agent's own verdict from the solution, L(d)."""

    reason: str = _reason()
    claim_is_true: bool


class CounterfactualJudgement(BaseModel):
    """The counterfactually evaluating agent's answer, C(d, not v)."""

    reason: str = _reason()
    contradiction: bool


# Both evaluators see d: the sub-tasks and their answers, references resolved, with
# neither the deduction nor v (3.2.4). L(d) must work out the verdict itself.
LOGICAL_EVAL = Step(
    name="local.logical_eval",
    instruction=(
        "You check the logic of a fact-checking solution. The solution lists the "
        "sub-tasks a claim was broken into, each with the answer it received; it gives no "
        "verdict. First work out whether the sub-tasks, taken together, say the same as "
        "the claim. Then reason from the answers to your own verdict: is the claim true?"
    ),
    template="Claim: {claim}\n\nSolution:\n{solution}",
    output=LogicalJudgement,
)

COUNTERFACTUAL_EVAL = Step(
    name="local.counterfactual_eval",
    instruction=(
        "You test a fact-checking solution against a verdict you are told to assume. The "
        "solution lists the sub-tasks a claim was broken into, each with the answer it "
        "received. Take the assumed verdict as given and look for a conflict between it "
        "and the answers. Say whether the assumed verdict contradicts the solution."
    ),
    template=(
        "Claim: {claim}\n\nSolution:\n{solution}\n\nAssume the claim is {assumed}. Does this "
        "assumption contradict the solution?"
    ),
    output=CounterfactualJudgement,
    trusted=("assumed",),
)


# -- demonstrations (4.3: 20 per dataset) ------------------------------------------------------

#: The dataset each built-in demonstration set is for; any other dataset, and claims
#: checked outside a benchmark, use the general set.
SET_FOR_DATASET = {"hover": "hover", "feverous-s": "feverous"}
SETS = ("hover", "feverous", "general")


@cache
def _builtin() -> dict[str, Any]:
    text = resources.files("verity.methods.local").joinpath("demos.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def set_for(dataset: str | None) -> str:
    """The built-in set for a benchmark dataset (the general set when there is none)."""
    return SET_FOR_DATASET.get(dataset or "", "general")


def demos(name: str) -> list[dict[str, Any]]:
    """The demonstrations of a built-in set, in order."""
    demos_of: list[dict[str, Any]] = _builtin()["sets"][name]["demos"]
    return demos_of


def load_demos_file(path: str | Path) -> list[dict[str, Any]]:
    """Demonstrations from a JSON file (``{"demos": [...]}``), each checked as a program.

    For a reader who has a dataset's training split: each demo has ``claim``,
    ``questions``, ``facts``, ``deduction`` and, to keep it out of benchmark samples,
    ``dataset`` and ``id``.
    """
    try:
        data = json.loads(Path(path).read_text("utf-8"))
        items = data["demos"]
        if not isinstance(items, list):
            raise TypeError("demos is not a list")
        for number, demo in enumerate(items, start=1):
            _check(demo, number)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadInputError(f"demonstrations file {str(path)!r}: {exc}") from None
    return items


def _check(demo: Mapping[str, Any], number: int) -> None:
    try:
        parse_program(_answer(demo))
        if not str(demo["claim"]).strip():
            raise ValueError("empty claim")
    except (ValidationError, ProgramError, KeyError, ValueError) as exc:
        raise ValueError(f"demonstration {number} is not a valid program: {exc}") from None


def _answer(demo: Mapping[str, Any]) -> Decomposition:
    return Decomposition(
        questions=demo.get("questions", []), facts=demo["facts"], deduction=demo["deduction"]
    )


def shots(items: list[dict[str, Any]], limit: int) -> list[Shot]:
    """The first ``limit`` demonstrations as decomposer turns."""
    return [({"claim": demo["claim"]}, _answer(demo)) for demo in items[:limit]]


def ids_of(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(dataset, example id) of demonstrations drawn from a benchmark dataset."""
    return {(d["dataset"], str(d["id"])) for d in items if d.get("dataset") and "id" in d}


def demonstration_ids() -> set[tuple[str, str]]:
    """Every built-in demonstration drawn from a benchmark: never in an evaluation sample."""
    out: set[tuple[str, str]] = set()
    for name in SETS:
        dataset = _builtin()["sets"][name]["dataset"]
        if dataset:
            out |= {(dataset, str(d["id"])) for d in demos(name)}
    return out


def claims_of(items: list[dict[str, Any]]) -> set[str]:
    """The claims of some demonstrations."""
    return {str(d["claim"]) for d in items}


def demonstration_claims() -> set[str]:
    """The claim of every built-in demonstration, in every set.

    Any set can be chosen on any dataset (``demo_set``), so a benchmark leaves out the
    near copies of all of them.
    """
    return {claim for name in SETS for claim in claims_of(demos(name))}
