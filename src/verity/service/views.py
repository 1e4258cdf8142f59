"""What the web pages show of a verdict: plain, typed data made from its JSON record.

    record = verdict.to_json_dict()          # what `verity check --json` prints
    view = verdict_view(record)
    view.label, view.confidence               # 'REFUTED', '0.48'
    [e.href for e in view.evidence]           # http(s) links only, else None
    view.reasoning.kind                       # 'toe': the template that draws it

The functions here are pure: a record in, frozen dataclasses out, nothing escaped (the
templates escape every text). Each method's own reasoning (LoCal's program, ZoFia's
debate, WKGFC's subgraph, ToE's tree) comes from its trace keys, read by the module named
after it; a method without one shows the generic parts only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from verity.domain import Usage
from verity.llm.prices import cost_text
from verity.service.views_common import (
    fixed,
    fraction,
    integer,
    mapping,
    number,
    records,
    safe_href,
    text,
)
from verity.service.views_local import LocalView, local_view
from verity.service.views_toe import ToeView, toe_view
from verity.service.views_wkgfc import WkgfcView, wkgfc_view
from verity.service.views_zofia import ZofiaView, zofia_view

Reasoning = LocalView | ZofiaView | WkgfcView | ToeView

# Colour classes of the labels; the page's legend is the label itself, the colour only helps.
_TONES = {
    "SUPPORTED": "good",
    "REAL": "good",
    "REFUTED": "bad",
    "FAKE": "bad",
    "CONFLICTING": "mixed",
    "NOT_ENOUGH_INFO": "unsure",
}
_READERS: dict[str, Callable[[Mapping[str, Any]], Reasoning]] = {
    "local": local_view,
    "zofia": zofia_view,
    "wkgfc": wkgfc_view,
    "toe": toe_view,
}
SNIPPET_CAP = 600


@dataclass(frozen=True)
class EvidenceView:
    """One cited passage: where it is from, a link when it is a web page, its date."""

    number: int
    title: str
    source: str
    href: str | None
    where: str
    date: str
    snippet: str
    score: str
    details: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CallView:
    """One model call of the trace, as a table row."""

    step: str
    role: str
    model: str
    tokens: int
    seconds: str
    attempts: int
    cached: bool


@dataclass(frozen=True)
class SearchView:
    """One query a source was asked, and how many passages came back (or its error)."""

    source: str
    query: str
    results: int
    error: str


@dataclass(frozen=True)
class VerdictView:
    """Everything the verdict part of a check's page shows."""

    kind: str  # 'claim' or 'article'
    subject: str
    subject_href: str | None
    method: str
    variant: str  # what ran when it is not the paper's method ('' when it is)
    label: str
    tone: str
    confidence: str
    confidence_value: float | None
    explanation: str
    evidence: tuple[EvidenceView, ...]
    usage: tuple[tuple[str, str], ...]
    calls: tuple[CallView, ...]
    searches: tuple[SearchView, ...]
    reasoning: Reasoning | None


def verdict_view(record: Mapping[str, Any]) -> VerdictView:
    """The page's view of a verdict record (the ``--json`` shape, trace included)."""
    trace = mapping(record.get("trace"))
    method = text(record.get("method"), 80)
    article = record.get("article")
    if isinstance(article, Mapping):
        kind, subject = "article", text(article.get("title"), 500) or "(untitled article)"
        subject_href = safe_href(article.get("url"))
    else:
        kind, subject, subject_href = "claim", text(record.get("claim")), None
    raw = record.get("label")
    label = text(raw, 40) if isinstance(raw, str) and raw else "UNKNOWN"
    confidence = fraction(record.get("confidence"))
    reader = _READERS.get(method.partition("/")[0])
    # A method whose run is not its paper's (untrained, an ablation) says so in the trace.
    variant = text(trace.get("variant_kind"), 200)
    return VerdictView(
        kind=kind,
        subject=subject,
        subject_href=subject_href,
        method=method,
        variant="" if variant == "paper" else variant,
        label=label,
        tone=_TONES.get(label, "unsure"),
        confidence="n/a" if confidence is None else f"{confidence:.2f}",
        confidence_value=confidence,
        explanation=text(record.get("explanation")),
        evidence=evidence_views(record.get("evidence"), trace),
        usage=usage_rows(mapping(record.get("usage"))),
        calls=tuple(call_view(c) for c in records(trace.get("calls"))),
        searches=tuple(
            SearchView(
                source=text(r.get("source"), 100),
                query=text(r.get("query"), 500),
                results=len(records(r.get("results"))),
                error=text(r.get("error"), 500),
            )
            for r in records(trace.get("retrievals"))
        ),
        reasoning=reader(trace) if reader is not None and trace else None,
    )


def evidence_views(items: object, trace: Mapping[str, Any]) -> tuple[EvidenceView, ...]:
    """The cited passages, numbered from 1 as the explanation cites them."""
    dates = _dates(trace)
    shown = []
    for number_, ev in enumerate(records(items), start=1):
        url, ident, title = ev.get("url"), ev.get("id"), text(ev.get("title"), 300)
        source = text(ev.get("source"), 100)
        date = text(ev.get("published"), 40) or dates.get(_key(ev), "")
        metadata = mapping(ev.get("metadata"))
        shown.append(
            EvidenceView(
                number=number_,
                title=title or source or "(untitled)",
                source=source,
                href=safe_href(url),
                where=text(url, 300) or text(ident, 300),
                date=date,
                snippet=text(ev.get("text"), SNIPPET_CAP),
                score=fixed(ev.get("score"), 3) if number(ev.get("score")) is not None else "",
                details=tuple((text(k, 60), text(v, 200)) for k, v in list(metadata.items())[:8]),
            )
        )
    return tuple(shown)


def _key(ev: Mapping[str, Any]) -> tuple[str, str]:
    return (
        text(ev.get("source")),
        text(ev.get("url")) or text(ev.get("id")) or text(ev.get("title")),
    )


def _dates(trace: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Publication dates of the passages retrieved, by source and reference.

    The ``--json`` evidence list leaves the date out; the trace's retrievals keep every
    passage whole, so the date is found there.
    """
    found: dict[tuple[str, str], str] = {}
    for retrieval in records(trace.get("retrievals")):
        for ev in records(retrieval.get("results")):
            date = text(ev.get("published"), 40)
            if date:
                found.setdefault(_key(ev), date)
    return found


def usage_rows(usage: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What the check cost, as label and value pairs."""
    calls, cached = integer(usage.get("llm_calls")), integer(usage.get("cached_calls"))
    return (
        ("model calls", f"{calls}" + (f" ({cached} from the cache)" if cached else "")),
        ("calls one after another", str(integer(usage.get("critical_calls")))),
        ("prompt tokens", str(integer(usage.get("prompt_tokens")))),
        ("completion tokens", str(integer(usage.get("completion_tokens")))),
        ("seconds in the model", fixed(usage.get("seconds"), 1)),
        ("seconds in all", fixed(usage.get("wall_seconds"), 1)),
        ("cost", cost_cell(usage)),
    )


def cost_cell(usage: Mapping[str, Any]) -> str:
    """What the calls cost in US dollars, "price unknown", or '-' for a record without it."""
    if "cost" not in usage:
        return "-"  # stored before verity priced calls
    spent = number(usage.get("cost"))
    return cost_text(
        Usage(
            llm_calls=max(integer(usage.get("llm_calls")), 0),
            cached_calls=max(integer(usage.get("cached_calls")), 0),
            cost=spent if spent is not None and spent >= 0 else 0.0,
            unpriced_calls=max(integer(usage.get("unpriced_calls")), 0),
        )
    )


def call_view(call: Mapping[str, Any]) -> CallView:
    """One model call's step, model, tokens and time."""
    usage = mapping(call.get("usage"))
    return CallView(
        step=text(call.get("step"), 100),
        role=text(call.get("role"), 60),
        model=text(call.get("model"), 120),
        tokens=integer(usage.get("prompt_tokens")) + integer(usage.get("completion_tokens")),
        seconds=fixed(usage.get("seconds"), 2),
        attempts=max(1, integer(call.get("attempts"))),
        cached=call.get("cached") is True,
    )
