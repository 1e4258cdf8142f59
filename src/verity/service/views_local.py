"""LoCal's reasoning for the web page: each iteration's program, answers and judges.

    view = local_view(verdict.trace.model_dump(mode="json"))
    view.iterations[0].deduction                 # 'f1'
    view.iterations[0].subtasks[0].answer        # 'Ridley Scott'
    view.deciding                                # the iteration the explanation shows

The fields follow the trace records of `verity.methods.local.records`: per iteration the
program (sub-tasks with their answers and the evidence each read), v, the logical and
the counterfactual evaluation and the #POS / #NEG counts after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from verity.service.views_common import (
    flag,
    integer,
    records,
    safe_href,
    text,
    yes_no,
)


@dataclass(frozen=True)
class SubtaskView:
    """One question or fact with its answer, its reason and the passages it read."""

    var: str
    kind: str
    text: str
    answer: str
    reason: str
    evidence: tuple[tuple[str, str | None], ...]  # (reference, http(s) link or None)


@dataclass(frozen=True)
class IterationView:
    """One LoCal iteration: the solution, the two evaluations and the counts."""

    number: int
    subtasks: tuple[SubtaskView, ...]
    deduction: str
    predicted: str
    logical: str  # L(d), the logical agent's truth value
    logical_accepts: str  # p_l
    logical_reason: str
    conflict: str  # p_c: assuming not-v contradicts the solution
    conflict_reason: str
    accepted: int
    pos: int
    neg: int
    final: bool
    error: str
    deciding: bool


@dataclass(frozen=True)
class LocalView:
    """LoCal's iterations and how they were counted."""

    iterations: tuple[IterationView, ...]
    setting: str
    pos: int
    neg: int
    deciding: int
    kind: Literal["local"] = "local"


def _answer(value: object) -> str:
    return text(value, 500) if value is not None else "-"


def _subtask(record: Mapping[str, Any]) -> SubtaskView:
    refs = [r for r in record.get("evidence", []) if isinstance(r, str)][:10]
    return SubtaskView(
        var=text(record.get("var"), 10),
        kind=text(record.get("type"), 20),
        text=text(record.get("text"), 1000),
        answer=_answer(record.get("answer")),
        reason=text(record.get("reason"), 2000),
        evidence=tuple((text(r, 300), safe_href(r)) for r in refs),
    )


def local_view(trace: Mapping[str, Any]) -> LocalView:
    """LoCal's part of the page from its trace."""
    deciding = integer(trace.get("deciding_iteration"))
    iterations = []
    for it in records(trace.get("iterations")):
        number = integer(it.get("iteration"))
        program = it.get("program")
        deduction = program.get("deduction") if isinstance(program, Mapping) else None
        iterations.append(
            IterationView(
                number=number,
                subtasks=tuple(_subtask(s) for s in records(it.get("subtasks"), 10)),
                deduction=text(deduction, 300),
                predicted=_answer(flag(it.get("predicted"))),
                logical=_answer(flag(it.get("logical"))),
                logical_accepts=yes_no(it.get("p_l")),
                logical_reason=text(it.get("logical_reason"), 2000),
                conflict=yes_no(it.get("counterfactual_conflict")),
                conflict_reason=text(it.get("counterfactual_reason"), 2000),
                accepted=integer(it.get("accepted")),
                pos=integer(it.get("pos")),
                neg=integer(it.get("neg")),
                final=it.get("final") is True,
                error=text(it.get("error"), 1000),
                deciding=number == deciding,
            )
        )
    return LocalView(
        iterations=tuple(iterations),
        setting=text(trace.get("setting"), 40),
        pos=integer(trace.get("pos")),
        neg=integer(trace.get("neg")),
        deciding=deciding,
    )
