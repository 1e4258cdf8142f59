"""A grounding as a Markdown section, for the Markdown rendering a method keeps in its trace.

    section = markdown(verdict.grounding, label="REFUTED")
    verdict = with_section(verdict)        # ``trace.markdown`` gains the section, if it has one

LoCal, ZoFia and ToE keep a Markdown account of their reasoning in ``trace.markdown``,
written before the verdict is grounded; `with_section` adds the grounding after it: each
sentence with its status and the ids it cites and the checker found, the grounded share,
whether the explanation argues for its label, and the flags. Sentences, ids and the error
come from a model or a method's sources, so every one is escaped to inert text.
"""

from __future__ import annotations

from verity.domain import FACTUAL_STATUSES, Grounding, Verdict
from verity.markdown import md

_STATUS = {
    "supported": "supported",
    "contradicted": "**contradicted**",
    "unsupported": "**not supported**",
    "no_claim": "no claim",
    "unchecked": "not checked",
}
_ARGUES = {True: "yes", False: "**no, it argues for another verdict**", None: "unclear"}


def markdown(grounding: Grounding, label: str) -> str:
    """The ``## Grounding`` section: a warning line or two, the summary, then each sentence."""
    out = ["## Grounding", ""]
    if grounding.mode == "strict" and grounding.flags:
        out += [f"**UNGROUNDED** ({', '.join(md(f) for f in grounding.flags)}).", ""]
    if grounding.consistent_with_label is False:
        out += [f"**Warning:** the explanation argues against {md(label)}.", ""]
    if grounding.error:
        out += [f"Not checked: {md(grounding.error)}", ""]
    factual = [s for s in grounding.sentences if s.status in FACTUAL_STATUSES]
    supported = sum(s.status == "supported" for s in factual)
    share = "-" if grounding.grounded_share is None else f"{grounding.grounded_share:.2f}"
    out += [
        f"- Checked by: {md(grounding.checker)} ({grounding.mode}), "
        f"{grounding.usage.llm_calls} call(s) counted apart from the method's",
        f"- Grounded share: {share} ({supported} of {len(factual)} factual sentence(s) supported)",
        f"- Argues for the label {md(label)}: {_ARGUES[grounding.consistent_with_label]}",
        f"- Flags: {', '.join(md(f) for f in grounding.flags) or 'none'}",
    ]
    if not grounding.sentences:
        return "\n".join(out)
    out += ["", "| # | sentence | status | cites | found |", "|---|---|---|---|---|"]
    for n, sentence in enumerate(grounding.sentences, start=1):
        out.append(
            f"| {n} | {md(sentence.text)} | {_STATUS[sentence.status]} "
            f"| {_ids(sentence.cites)} | {_ids(sentence.found)} |"
        )
    return "\n".join(out)


def with_section(verdict: Verdict) -> Verdict:
    """The verdict with its grounding added to the Markdown its trace keeps, if any.

    A trace without ``markdown`` (most methods) is left as it is: the grounding is in the
    verdict's JSON either way.
    """
    trace = verdict.trace.model_extra or {}
    kept = trace.get("markdown")
    if verdict.grounding is None or not isinstance(kept, str):
        return verdict
    section = markdown(verdict.grounding, verdict.label.value)
    updated = verdict.trace.model_copy(update={"markdown": kept.rstrip() + "\n\n" + section})
    return verdict.model_copy(update={"trace": updated})


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(md(f"[{i}]") for i in ids) or "-"
