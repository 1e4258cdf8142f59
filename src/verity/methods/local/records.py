"""LoCal's solutions as they ran, and their records in the trace.

A `Solution` is one iteration's program, answers and v; `Judged` holds the evaluating
agents' answers. The record functions give the trace entries; `deciding` picks the
solution a verdict rests on, and `counts_line` the explanation's last line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verity.domain import Evidence
from verity.methods.local.program import Program
from verity.methods.local.render import summary
from verity.methods.local.updater import ConfidenceUpdater, UpdateStep


@dataclass
class SubTaskResult:
    """One sub-task as it ran."""

    var: str
    type: str
    text: str
    answer: bool | str
    reason: str = ""
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Solution:
    """One iteration's program, its answers and v."""

    program: Program
    results: list[SubTaskResult]
    v: bool
    demos_sent: int


@dataclass
class Judged:
    """The evaluating agents' answers for one solution (None: the agent is ablated)."""

    logical: bool | None = None
    logical_reason: str = ""
    conflict: bool | None = None
    conflict_reason: str = ""


def judged_p_l(judged: Judged, v: bool) -> bool | None:
    """p_l = not (L(d) XOR v) (3.2.5): the logical agent accepts when it reaches v."""
    return None if judged.logical is None else not (judged.logical ^ v)


def solution_record(solution: Solution) -> dict[str, Any]:
    """A solution's trace fields: program, sub-tasks with answers and evidence, d, v."""
    return {
        "program": solution.program.to_dict(),
        "subtasks": [
            {
                "var": r.var,
                "type": r.type,
                "text": r.text,
                "answer": r.answer,
                "reason": r.reason,
                "evidence": [ev.ref for ev in r.evidence],
            }
            for r in solution.results
        ],
        "solution": summary(solution.results),
        "predicted": solution.v,
        "demos_sent": solution.demos_sent,
    }


def evaluated_record(
    index: int, solution: Solution, judged: Judged, step: UpdateStep
) -> dict[str, Any]:
    """The trace entry of an evaluated iteration: the solution, the judges, the counts."""
    return {
        "iteration": index + 1,
        **solution_record(solution),
        "logical": judged.logical,
        "logical_reason": judged.logical_reason,
        "counterfactual_conflict": judged.conflict,
        "counterfactual_reason": judged.conflict_reason,
        "p_l": judged_p_l(judged, solution.v),
        "p_c": judged.conflict,
        "accepted": step.accepted,
        "counted": step.counted,
        "pos": step.pos,
        "neg": step.neg,
        "final": step.final,
    }


def deciding_iteration(iterations: Sequence[Mapping[str, Any]], label: bool) -> int:
    """The iteration whose solution the verdict rests on, for the explanation.

    The final one when both evaluators accepted; else the last solution that counted for
    the label with its own v equal to it (one acceptance, or no evaluators); else the last
    one that counted for it by rejection (its v is the opposite, and the counts line says
    so).
    """
    evaluated = [it for it in iterations if "error" not in it]
    for it in evaluated:
        if it["final"]:
            return int(it["iteration"])
    counted = [it for it in evaluated if it["counted"] is label]
    agreeing = [it for it in counted if it["predicted"] is label]
    return int((agreeing or counted)[-1]["iteration"])


def counts_line(updater: ConfidenceUpdater, label: bool, deciding: int) -> str:
    """The explanation's last line: how the counts gave the label, and what is shown."""
    if updater.final is not None:
        return (
            f"Both evaluators accepted the solution of iteration {deciding}; "
            f"#POS = {updater.pos}, #NEG = {updater.neg} before it."
        )
    tie = " (a tie is False, Algorithm 1)" if updater.pos == updater.neg else ""
    return (
        f"No solution was accepted by both evaluators in {updater.iterations} iteration(s): "
        f"#POS = {updater.pos}, #NEG = {updater.neg}, so the label is "
        f"{'true' if label else 'false'}{tie}; shown: iteration {deciding}."
    )
