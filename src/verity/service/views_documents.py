"""What the web pages show of a document: its text cut at the claims, the cards, the counts.

    view = document_view(job.verdict)          # DocumentView: segments, cards, summary
    progress = document_progress(text, store.events(job.id))   # rows while it runs

The document's text is cut at the claims' character offsets into plain segments; the
template writes each one as escaped text, a claim's sentence inside a focusable mark.
Nothing here builds markup: like `verity.service.views`, these make plain data for the
templates, read field by field from stored JSON that may be old or odd.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verity.service.jobs import StoredEvent
from verity.service.views import VerdictView, verdict_view
from verity.service.views_common import integer, mapping, number, records, text

# Claims shown on one page: past the extractor's own cap (100), so never reached by a
# document checked here.
MAX_CARDS = 500
# Claims listed under "most in doubt": enough to start with, the cards have the rest.
IN_DOUBT_SHOWN = 5
_SLUG = re.compile(r"[^a-z0-9]+")


def label_class(label: str) -> str:
    """The CSS class of a label: ``v-supported``, ``v-not-enough-info``, ``v-failed``.

    Any label gets a class of its own; the stylesheet colours the ones it knows and gives
    the rest a neutral look, so a label added later still shows.
    """
    slug = _SLUG.sub("-", label.lower()).strip("-")
    return f"v-{slug or 'unknown'}"


@dataclass(frozen=True)
class Segment:
    """A stretch of the document: plain text, or a sentence that claims were taken from."""

    text: str
    cards: tuple[str, ...] = ()  # the ids of the cards of its claims ('' for plain text)
    css: str = ""
    aria: str = ""


@dataclass(frozen=True)
class ClaimCard:
    """One claim as its card shows it: the verdict, the claim, where it was said."""

    anchor: str
    id: str
    label: str
    css: str
    status: str
    confidence: str
    claim: str
    said: tuple[str, ...]
    context: tuple[str, ...]
    error: str
    verdict: VerdictView | None


@dataclass(frozen=True)
class Count:
    """How many claims have one label."""

    label: str
    css: str
    count: int


@dataclass(frozen=True)
class DocumentView:
    """A checked document as its page shows it."""

    title: str
    method: str
    extractor: str
    segments: tuple[Segment, ...]
    cards: tuple[ClaimCard, ...]
    counts: tuple[Count, ...]
    in_doubt: tuple[ClaimCard, ...]
    failed: tuple[ClaimCard, ...]
    sentences: int
    complete: bool
    over_cap: int
    article_label: str
    article_css: str
    article_error: str


@dataclass(frozen=True)
class ProgressRow:
    """A claim's line while the document is checked: pending, then its label."""

    id: str
    label: str
    css: str
    sentence: str


@dataclass(frozen=True)
class DocumentProgress:
    """The claims found so far and how many have been checked."""

    total: int | None
    done: int
    rows: tuple[ProgressRow, ...]


def _spans(claim: Mapping[str, Any], size: int) -> list[tuple[int, int]]:
    found = []
    for span in records(claim.get("spans"), 50):
        start, end = integer(span.get("start")), integer(span.get("end"))
        if 0 <= start < end <= size:
            found.append((start, end))
    return found


def _said(claim: Mapping[str, Any], spans: list[tuple[int, int]]) -> int:
    """How many of the spans are where the claim was said (the rest gave it context)."""
    sentences = claim.get("sentences")
    count = len(sentences) if isinstance(sentences, list) and sentences else 1
    return min(count, len(spans))


def _card(n: int, claim: Mapping[str, Any], whole: str) -> ClaimCard:
    spans = _spans(claim, len(whole))
    said = _said(claim, spans)
    status = text(claim.get("status"), 20)
    label = text(claim.get("label"), 40) or status or "pending"
    raw = claim.get("verdict")
    verdict = verdict_view(raw) if isinstance(raw, Mapping) else None
    confidence = number(raw.get("confidence")) if isinstance(raw, Mapping) else None
    return ClaimCard(
        anchor=f"card-{n}",
        id=text(claim.get("id"), 40) or f"#{n}",
        label=label,
        css=label_class(label),
        status=status,
        confidence="" if confidence is None else f"{confidence:.2f}",
        claim=text(claim.get("text")),
        said=tuple(whole[a:b] for a, b in spans[:said]),
        context=tuple(whole[a:b] for a, b in spans[said:]),
        error=text(claim.get("error"), 500),
        verdict=verdict,
    )


def segments(
    whole: str, claims: Sequence[Mapping[str, Any]], cards: Sequence[ClaimCard]
) -> tuple[Segment, ...]:
    """The text cut at the sentences claims were said in; the rest as plain segments.

    A sentence several claims came from is one segment naming all their cards; its class
    is their label's when they agree, ``v-mixed`` when not. A span that overlaps one
    already placed is left out (sentences do not overlap; a damaged record might).
    """
    at: dict[tuple[int, int], list[ClaimCard]] = {}
    for claim, card in zip(claims, cards, strict=False):
        spans = _spans(claim, len(whole))
        for span in spans[: _said(claim, spans)]:
            at.setdefault(span, []).append(card)
    out: list[Segment] = []
    cursor = 0
    for (start, end), here in sorted(at.items()):
        if start < cursor:
            continue
        if start > cursor:
            out.append(Segment(whole[cursor:start]))
        labels = {c.label for c in here}
        css = here[0].css if len(labels) == 1 else "v-mixed"
        if len(here) == 1:
            aria = f"Claim {here[0].id}: {here[0].label}"
        else:
            aria = "Claims " + ", ".join(f"{c.id} ({c.label})" for c in here)
        out.append(Segment(whole[start:end], tuple(c.anchor for c in here), css, aria))
        cursor = end
    if cursor < len(whole):
        out.append(Segment(whole[cursor:]))
    return tuple(out)


def document_view(record: Mapping[str, Any]) -> DocumentView:
    """The page's view of a document result (`DocumentVerdict.to_json_dict`)."""
    head = mapping(record.get("document"))
    found = head.get("text")
    whole = found if isinstance(found, str) else ""
    claims = records(record.get("claims"), MAX_CARDS)
    cards = [_card(n, claim, whole) for n, claim in enumerate(claims, start=1)]
    by_id = {c.id: c for c in cards}
    summary = mapping(record.get("summary"))
    counts = mapping(summary.get("counts"))
    doubt = summary.get("in_doubt")
    article = mapping(record.get("article"))
    article_label = text(article.get("label"), 40)
    settings = mapping(record.get("settings"))
    return DocumentView(
        title=text(head.get("title"), 500),
        method=text(record.get("method"), 80),
        extractor=text(record.get("extractor"), 80),
        segments=segments(whole, claims, cards),
        cards=tuple(cards),
        counts=tuple(
            Count(text(k, 40), label_class(text(k, 40)), integer(v))
            for k, v in counts.items()
            if isinstance(v, int)
        ),
        in_doubt=_in_doubt(doubt, by_id),
        failed=tuple(c for c in cards if c.status == "failed"),
        sentences=len(records(record.get("sentences"), 100_000)),
        complete=record.get("complete") is True,
        over_cap=integer(settings.get("claims_over_cap")),
        article_label=article_label,
        article_css=label_class(article_label) if article_label else "",
        article_error=text(record.get("article_error"), 500),
    )


def _in_doubt(ids: object, cards: Mapping[str, ClaimCard]) -> tuple[ClaimCard, ...]:
    """The first claims the summary says a reader should look at (five at most)."""
    found = [cards[i] for i in (ids if isinstance(ids, list) else []) if i in cards]
    return tuple(found[:IN_DOUBT_SHOWN])


def document_progress(whole: str, stored: Sequence[StoredEvent]) -> DocumentProgress:
    """The claims' rows from the job's events so far: one per claim, pending until checked.

    Rows are numbered by the extraction's count; a claim's row is the one its id's number
    names (``C3``: the third), else the first still pending.
    """
    total: int | None = None
    outcomes: list[Mapping[str, Any]] = []
    for event in stored:
        if event.kind != "milestone":
            continue
        try:
            body = mapping(json.loads(event.json))
        except ValueError:
            continue
        data = mapping(body.get("data"))
        if body.get("name") == "document.extracted":
            total, outcomes = integer(data.get("claims")), []  # a rerun starts again
        elif body.get("name") == "document.claim":
            outcomes.append(data)
    if total is None:
        return DocumentProgress(None, 0, ())
    rows: list[ProgressRow | None] = [None] * min(total, MAX_CARDS)
    for data in outcomes:
        label = text(data.get("label"), 40) or "pending"
        claim = text(data.get("claim"), 40)
        start, end = integer(data.get("start")), integer(data.get("end"))
        sentence = whole[start:end] if 0 <= start < end <= len(whole) else ""
        row = ProgressRow(claim, label, label_class(label), sentence)
        place = _place(claim, rows)
        if place is not None:
            rows[place] = row
    shown = tuple(r or ProgressRow("", "pending", "v-pending", "") for r in rows)
    return DocumentProgress(total, sum(1 for r in rows if r is not None), shown)


def _place(claim: str, rows: list[ProgressRow | None]) -> int | None:
    digits = re.search(r"([0-9]+)$", claim)
    if digits is not None:
        n = int(digits.group(1)) - 1
        if 0 <= n < len(rows) and rows[n] is None:
            return n
    return next((i for i, r in enumerate(rows) if r is None), None)
