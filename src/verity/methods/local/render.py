"""Text renderings of LoCal solutions: the summary description d and a Markdown report.

The Markdown follows the paper's case study (Table 4): the claim, then per iteration the
sub-tasks with their answers, the deduction and v, the two evaluations and the counters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from verity.methods.local.program import Program


class _Answered(Protocol):
    var: str
    type: str
    text: str
    answer: bool | str


def _value(answer: bool | str) -> str:
    return ("true" if answer else "false") if isinstance(answer, bool) else answer


def solution_text(program: Program, results: Sequence[_Answered], *, with_value: bool) -> str:
    """The summary description d: sub-tasks with answers, references resolved.

    With ``with_value`` false (what the evaluating agents see) the deduction is shown
    without its value v.
    """
    lines = [f"{r.var} ({r.type}) {r.text} -> {_value(r.answer)}" for r in results]
    env = {r.var: r.answer for r in results if isinstance(r.answer, bool)}
    deduction = f"Deduction: {program.deduction}"
    if with_value:
        deduction += f" = {_value(program.deduction.evaluate(env))}"
    return "\n".join([*lines, deduction])


def markdown(
    claim: str,
    iterations: Sequence[Mapping[str, Any]],
    label: bool,
    confidence: float | None,
) -> str:
    """A readable account of every iteration and the final count."""
    out = [f"**Claim.** {claim}", ""]
    for it in iterations:
        out.append(f"### Iteration {it['iteration']}")
        if it.get("error"):
            out += [f"No solution: {it['error']}", ""]
            continue
        out += ["| sub-task | type | answer |", "|---|---|---|"]
        for sub in it["subtasks"]:
            text = str(sub["text"]).replace("|", "\\|")
            out.append(f"| {sub['var']}: {text} | {sub['type']} | {_value(sub['answer'])} |")
        out.append("")
        out.append(f"Deduction `{it['program']['deduction']}` gives v = {_value(it['predicted'])}.")
        if it["logical"] is not None:
            out.append(
                f"Logical evaluation: L(d) = {_value(it['logical'])}, p_l = {it['p_l']}. "
                f"{it['logical_reason']}"
            )
        if it["counterfactual_conflict"] is not None:
            out.append(
                f"Counterfactual evaluation: assuming the opposite contradicts the solution: "
                f"{it['counterfactual_conflict']} (p_c = {it['p_c']}). "
                f"{it['counterfactual_reason']}"
            )
        out += [f"#POS = {it['pos']}, #NEG = {it['neg']}, final: {it['final']}.", ""]
    shown = "n/a" if confidence is None else f"{confidence:.2f}"
    verdict = "SUPPORTED" if label else "REFUTED"
    out.append(f"**Verdict.** {verdict}, confidence {shown}.")
    return "\n".join(out)
