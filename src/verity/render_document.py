"""A document's result on the terminal: its text with each claim marked, then the claims.

    document(console, result)           # what `verity check --document FILE` prints
    marked_text(result)                 # the text alone, each claim's place styled

Every text here came from outside (the document, the claims, the models' words), so none
of it becomes markup: a ``Text`` is built from the plain strings and styled by character
ranges (``stylize(style, start, end)``) at the claims' spans. Control characters are
replaced one for one (`inert`), so the offsets still point where the spans say.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

from verity.documents.check import total_usage
from verity.documents.types import ClaimResult, DocumentVerdict
from verity.domain import Label, Usage
from verity.render import LABEL_COLOURS, text, usage_line

# A claim whose check failed (or has not run) is marked apart from every label's colour.
UNCHECKED = "bright_black"
# Characters of a claim's explanation shown under it: its first line, at most this.
EXPLANATION_CHARS = 200
# Every control character but tab and newline, and lone surrogates: a terminal would act
# on the former, and cannot write the latter.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def inert(value: str) -> str:
    r"""``value`` with each control character replaced by U+FFFD, its length unchanged.

    inert("a\x1b[31mb")   # 'a\ufffd[31mb': the escape is gone, the offsets hold
    """
    return _CONTROL.sub("\ufffd", value)


def colour(result: ClaimResult) -> str:
    """The colour of a claim's label (`verity.render`'s), or `UNCHECKED`."""
    if result.verdict is None:
        return UNCHECKED
    return LABEL_COLOURS.get(result.verdict.label, "white")


def label_style(result: ClaimResult) -> str:
    """How a claim's label word is printed."""
    return f"bold {colour(result)}"


def span_style(result: ClaimResult) -> str:
    """How the place a claim was said is marked in the text."""
    return f"underline {colour(result)}"


def marked_text(result: DocumentVerdict) -> Text:
    """The document's text with each claim's first span styled by its label's colour.

    Claims taken from one sentence share its span; the later claim's style is on top.
    """
    shown = Text(inert(result.document.text))
    for r in result.claims:
        span = r.claim.spans[0]
        shown.stylize(span_style(r), span.start, span.end)
    return shown


def document(console: Console, result: DocumentVerdict) -> None:
    """The title, the marked text, a legend, each claim, then the summary and the cost."""
    doc = result.document
    if doc.title.strip():
        console.print(text(doc.title, "bold"))
    if doc.url or doc.date:
        where = " ".join(x for x in (doc.url or "", doc.date.isoformat() if doc.date else "") if x)
        console.print(text(where, "dim"))
    console.print(marked_text(result))
    console.print(legend(result))
    console.print()
    for r in result.claims:
        console.print(claim_line(r))
        first = _first_line(r)
        if first:
            console.print(text(f"    {first}", "dim"))
    console.print()
    summary(console, result)


def legend(result: DocumentVerdict) -> Text:
    """Each label the claims have, in its colour."""
    seen: dict[str, ClaimResult] = {}
    for r in result.claims:
        seen.setdefault(r.label, r)
    shown = Text("Marked: ")
    for n, (label, r) in enumerate(seen.items()):
        if n:
            shown.append("  ")
        shown.append(label, style=span_style(r))
    if not seen:
        shown.append("no claims", style="dim")
    return shown


def claim_line(r: ClaimResult) -> Text:
    """``C3  REFUTED  0.80  <claim text>``."""
    sure = ""
    if r.verdict is not None:
        sure = "n/a" if r.verdict.confidence is None else f"{r.verdict.confidence:.2f}"
    return Text.assemble(
        (f"{r.claim.id:<4}", "bold"),
        (f"{r.label:<16}", label_style(r)),
        (f"{sure:<6}", "dim"),
        text(r.claim.text),
    )


def _first_line(r: ClaimResult) -> str:
    if r.verdict is None:
        return r.error or ""
    lines = r.verdict.explanation.strip().splitlines()
    first = lines[0].strip() if lines else ""
    return first if len(first) <= EXPLANATION_CHARS else first[: EXPLANATION_CHARS - 1] + "…"


def summary(console: Console, result: DocumentVerdict) -> None:
    """Counts per label, the claims most in doubt, the failures, and what it all cost."""
    s = result.summary
    counts = Text(f"{s.claims} claim(s) from {len(result.sentences)} sentence(s): ")
    for n, (label, count) in enumerate(s.counts.items()):
        if n:
            counts.append(", ")
        counts.append_text(text(f"{label} {count}", _count_style(label)))
    console.print(counts)
    over = result.settings.get("claims_over_cap", 0)
    if isinstance(over, int) and over:
        console.print(text(f"{over} more claim(s) found and not checked (the per-document cap)"))
    if s.in_doubt:
        console.print(text("Most in doubt: " + ", ".join(s.in_doubt)))
    for r in result.claims:
        if r.status != "checked":
            console.print(text(f"{r.claim.id} failed: {r.error or r.status}", "red"))
    for note in result.sentences:
        if note.outcome == "failed":
            console.print(text(f"sentence {note.index + 1} not read: {note.reason}", "red"))
    if result.article is not None:
        console.print(
            Text.assemble(
                "Whole text (",
                text(result.article.method),
                "): ",
                (result.article.label.value, f"bold {LABEL_COLOURS.get(result.article.label, '')}"),
            )
        )
    elif result.article_error:
        console.print(text(f"Whole text: failed ({result.article_error})", "red"))
    console.print(text("extraction: " + _short_usage(result.extraction_usage), "dim"))
    console.print(text("checks: " + usage_line(total_usage(result.claims)), "dim"))


def _short_usage(u: Usage) -> str:
    return (
        f"{u.llm_calls} model call(s), {u.prompt_tokens}+{u.completion_tokens} tokens, "
        f"{u.seconds:.1f} s in the model"
    )


def _count_style(label: str) -> str:
    if label in ("failed", "pending"):
        return UNCHECKED
    try:
        return LABEL_COLOURS.get(Label(label), "")
    except ValueError:
        return ""
