"""What a LoCal explanation may cite: the deciding solution's sub-tasks, then its passages.

    results = cited_results(solution.results)     # var "q1" shown as "[S1] q1"
    refs = subtask_references(verdict)            # S1.., then the passages [1]..[n]

The explanation lists the sub-tasks of the deciding iteration in order, one a line; each
line names its sub-task ``[S1]``, ``[S2]``... so that the grounding check reads the line
against that sub-task's record (its text, answer and, for a fact, the verifier's reason).
The passages the sub-tasks read follow as ``[1]``..``[n]``, in the verdict's order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from verity.domain import Reference, Verdict
from verity.grounding.cite import passages, reference
from verity.methods.local.records import SubTaskResult


def subtask_id(number: int) -> str:
    """The id the explanation cites the ``number``-th sub-task by (from 1)."""
    return f"S{number}"


def cited_results(results: Sequence[SubTaskResult]) -> list[SubTaskResult]:
    """The results as the explanation shows them: each name led by its sub-task's id.

    Only the shown name changes; the program, the prompts and v were settled before.
    """
    return [
        dataclasses.replace(r, var=f"[{subtask_id(n)}] {r.var}")
        for n, r in enumerate(results, start=1)
    ]


def subtask_references(verdict: Verdict) -> list[Reference]:
    """The deciding iteration's sub-tasks as ``S1``..``Sn``, then the verdict's passages."""
    trace = verdict.trace.model_extra or {}
    deciding = trace.get("deciding_iteration")
    chosen = next(
        (it for it in trace.get("iterations") or [] if it.get("iteration") == deciding), None
    )
    subtasks: list[Mapping[str, Any]] = list(chosen.get("subtasks") or []) if chosen else []
    found = [
        reference(subtask_id(n), _record(sub), "subtask", str(sub.get("var", "")))
        for n, sub in enumerate(subtasks, start=1)
    ]
    return found + passages(verdict)


def _record(sub: Mapping[str, Any]) -> str:
    answer = sub.get("answer")
    shown = ("true" if answer else "false") if isinstance(answer, bool) else str(answer)
    if sub.get("type") == "fact":
        reason = str(sub.get("reason") or "").strip()
        return f"Statement: {sub.get('text', '')} Answer: {shown}." + (
            f" Reason: {reason}" if reason else ""
        )
    return f"Question: {sub.get('text', '')} Answer: {shown}"
