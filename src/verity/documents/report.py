"""A document's result as Markdown: the summary, then each claim where it was said.

    text = markdown(result)      # what `verity check --document ... --report FILE` writes

Everything that came from the document, a model or a source (sentences, claims,
explanations, titles, URLs) is escaped to inert text (`verity.markdown`), so the report
renders as what it says wherever it is opened.
"""

from __future__ import annotations

from verity.documents.types import ClaimResult, DocumentVerdict
from verity.markdown import md

# Characters of an explanation shown per claim; the JSON keeps all of it.
EXPLANATION_CHARS = 1_200
EVIDENCE_SHOWN = 5


def markdown(result: DocumentVerdict) -> str:
    """The whole report: a heading, the summary, the claims in document order."""
    doc = result.document
    title = md(doc.title) if doc.title.strip() else "Document"
    out = [f"# {title}", ""]
    if doc.url:
        out.append(f"Source: {md(doc.url)}  ")
    if doc.date:
        out.append(f"Written: {doc.date.isoformat()}  ")
    out += [
        f"Checked with `{md(result.method)}`; claims extracted by `{md(result.extractor)}`.",
        "",
        "## Summary",
        "",
    ]
    counts = ", ".join(f"{md(k)}: {v}" for k, v in result.summary.counts.items())
    out.append(
        f"{result.summary.claims} claim(s) from {len(result.sentences)} sentence(s). {counts}."
    )
    over = result.settings.get("claims_over_cap", 0)
    if isinstance(over, int) and over:
        out.append(f"{over} more claim(s) were found and not checked (the per-document cap).")
    failed_sentences = [n for n in result.sentences if n.outcome == "failed"]
    if failed_sentences:
        out.append(f"{len(failed_sentences)} sentence(s) could not be read; a rerun tries again.")
    if result.summary.in_doubt:
        out.append("Most in doubt: " + ", ".join(result.summary.in_doubt) + ".")
    if result.article is not None:
        out.append(
            f"Whole article ({md(result.article.method)}): **{result.article.label.value}**."
        )
    elif result.article_error:
        out.append(f"Whole article: failed ({md(result.article_error)}).")
    out += ["", "## Claims", ""]
    for r in result.claims:
        out += _claim(result, r)
    return "\n".join(out).rstrip() + "\n"


def _claim(result: DocumentVerdict, r: ClaimResult) -> list[str]:
    claim = r.claim
    text = result.document.text
    head = f"### {claim.id}: {r.label}"
    if r.verdict is not None and r.verdict.confidence is not None:
        head += f" ({r.verdict.confidence:.2f})"
    lines = [head, "", f"Claim: {md(claim.text)}", ""]
    for n, span in enumerate(claim.spans):
        where = "Said" if n < len(claim.sentences) else "Context"
        lines.append(f"- {where} at {span.start}-{span.end}: > {md(text[span.start : span.end])}")
    lines.append("")
    if r.error:
        lines += [f"Check failed: {md(r.error)}", ""]
    verdict = r.verdict
    if verdict is None:
        return lines
    if verdict.explanation.strip():
        shown = verdict.explanation.strip()
        if len(shown) > EXPLANATION_CHARS:
            shown = shown[: EXPLANATION_CHARS - 1] + "…"
        lines += [f"Why: {md(shown)}", ""]
    for n, ev in enumerate(verdict.evidence[:EVIDENCE_SHOWN], start=1):
        where = f" ({md(ev.url)})" if ev.url else ""
        lines.append(f"{n}. {md(ev.title or ev.source)}{where}")
    if verdict.evidence:
        lines.append("")
    grounding = verdict.grounding
    if grounding is not None and grounding.grounded_share is not None:
        lines += [f"Grounded share: {grounding.grounded_share:.2f}", ""]
    return lines
