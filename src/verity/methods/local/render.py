"""Text renderings of LoCal solutions: the summary description d and a Markdown report.

The Markdown follows the paper's case study (Tables 4 and 6): the claim, then per iteration the
sub-tasks with their answers, the deduction and v, the two evaluations and the counters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from verity.methods.common import md
from verity.methods.local.program import Program


class _Answered(Protocol):
    var: str
    type: str
    text: str
    answer: bool | str


def _value(answer: bool | str) -> str:
    return ("true" if answer else "false") if isinstance(answer, bool) else answer


def summary(results: Sequence[_Answered]) -> str:
    """The summary description d (3.2.4): each sub-task with its answer, in order.

    References are already resolved in ``text``. The deduction and v are left out: the
    evaluating agents judge the sub-tasks and answers alone.
    """
    lines = []
    for number, r in enumerate(results, start=1):
        if r.type == "fact":
            lines.append(f"{number}. Statement: {r.text} Answer: {_value(r.answer)}")
        else:
            lines.append(f"{number}. Question: {r.text} Answer: {_value(r.answer)}")
    return "\n".join(lines)


def explanation(program: Program, results: Sequence[_Answered], v: bool, counts: str) -> str:
    """The deciding solution for a reader: sub-tasks, answers, deduction with v, counts."""
    lines = [f"{r.var} ({r.type}) {r.text} -> {_value(r.answer)}" for r in results]
    lines.append(f"Deduction: {program.deduction} = {_value(v)}")
    lines.append(counts)
    return "\n".join(lines)


def markdown(
    claim: str,
    iterations: Sequence[Mapping[str, Any]],
    label: bool,
    confidence: float,
    deciding: int | None,
) -> str:
    """A readable account of every iteration and the final count.

    Claim, sub-tasks, answers and reasons come from outside verity's code and are escaped
    (`md`), so they cannot add links, images or table cells.
    """
    out = [f"**Claim.** {md(claim)}", ""]
    for it in iterations:
        out.append(f"### Iteration {it['iteration']}")
        if it.get("error"):
            out += [f"No evaluated solution: {md(it['error'])}", ""]
            if "subtasks" not in it:
                continue
        out += ["| sub-task | type | answer |", "|---|---|---|"]
        for sub in it["subtasks"]:
            out.append(
                f"| {sub['var']}: {md(sub['text'])} | {sub['type']} | {md(_value(sub['answer']))} |"
            )
        out.append("")
        out.append(f"Deduction {it['program']['deduction']} gives v = {_value(it['predicted'])}.")
        if it.get("error"):
            out.append("")
            continue
        if it["logical"] is not None:
            out.append(
                f"Logical evaluation: L(d) = {_value(it['logical'])}, p_l = {it['p_l']}. "
                f"{md(it['logical_reason'])}"
            )
        if it["counterfactual_conflict"] is not None:
            out.append(
                f"Counterfactual evaluation: assuming the opposite contradicts the solution: "
                f"{it['counterfactual_conflict']} (p_c = {it['p_c']}). "
                f"{md(it['counterfactual_reason'])}"
            )
        out += [f"#POS = {it['pos']}, #NEG = {it['neg']}, final: {it['final']}.", ""]
    verdict = "SUPPORTED" if label else "REFUTED"
    out.append(f"**Verdict.** {verdict}, confidence {confidence:.2f}.")
    if deciding is not None:
        out.append(f"The explanation and evidence shown are those of iteration {deciding}.")
    return "\n".join(out)
