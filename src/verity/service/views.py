"""What the web pages show of a verdict: plain, typed data made from its JSON record.

    record = verdict.to_json_dict()          # what `verity check --json` prints
    view = verdict_view(record)
    view.label, view.confidence               # 'REFUTED', '0.48'
    [e.href for e in view.evidence]           # http(s) links only, else None
    view.reasoning.kind                       # 'toe': the template that draws it
    [(p.text, p.status) for p in view.grounding.pieces]   # the explanation, by sentence

The functions here are pure: a record in, frozen dataclasses out, nothing escaped (the
templates escape every text). Each method's own reasoning (LoCal's program, ZoFia's
debate, WKGFC's subgraph, ToE's tree) comes from its trace keys, read by the module named
after it; a method without one shows the generic parts only. A grounded verdict
(`verity.grounding`) shows its explanation cut into pieces at the sentences' offsets, each
with its status and links to the passages it cites: the cutting is done here, so that a
template never slices a string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from verity.domain import FACTUAL_STATUSES, Usage
from verity.llm.prices import cost_text
from verity.service.views_common import (
    fixed,
    fraction,
    integer,
    mapping,
    number,
    records,
    safe_href,
    strings,
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
# A grounding's statuses in words (`verity.grounding.check`): the page says each in text,
# its colour only helps. A status not among them is shown as not checked.
_STATUS_WORDS = {
    "supported": "supported",
    "contradicted": "contradicted",
    "unsupported": "not supported",
    "no_claim": "no claim",
    "unchecked": "not checked",
}
# What each flag of a grounding tells a reader (`verity.grounding.check.settle`).
_FLAG_WORDS = {
    "contradicts_label": "the explanation argues for another verdict",
    "contradicted_sentence": "a sentence is contradicted by what it may lean on",
    "nothing_supports": "no sentence that states a fact is supported",
}
# Ids of references are short ("1", "T3"); any other character of one is "_" in an anchor.
_NOT_IN_ANCHOR = re.compile(r"[^A-Za-z0-9_-]")


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
    # The ids a grounded explanation cites this passage by, when not its number here
    # (``rag`` keeps the numbers its prompt showed: its second passage may be ``[3]``).
    cited_as: tuple[str, ...] = ()


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
class CiteLink:
    """A reference one sentence leans on, and where on the page it is."""

    id: str
    href: str | None  # '#evidence-2', '#reference-T3'; None: the verdict holds no such one
    cited: bool  # the sentence names it; else the checker found it


@dataclass(frozen=True)
class Piece:
    """A run of the explanation: one sentence with its status and links, or text between."""

    text: str
    status: str  # a key of _STATUS_WORDS; '' for the text between sentences
    words: str  # the status in words
    links: tuple[CiteLink, ...]
    number: int  # the sentence's place in the grounding, from 1; 0 between sentences


@dataclass(frozen=True)
class ReferenceView:
    """A reference the checker read that is none of the evidence passages (a graph fact)."""

    id: str
    anchor: str
    kind: str
    title: str
    text: str


@dataclass(frozen=True)
class GroundingView:
    """How the explanation stands on what it cites (`verity.grounding`), for the page."""

    mode: str
    checker: str
    pieces: tuple[Piece, ...]
    references: tuple[ReferenceView, ...]
    supported: int
    factual: int
    share: str  # '0.50'; '' when no sentence states a fact
    argues_against: bool  # the checker said the explanation argues for another label
    flags: tuple[tuple[str, str], ...]  # each flag's name and what it means
    ungrounded: bool  # strict mode and flagged: the page says so above the label
    error: str
    calls: int  # the checker's own calls and tokens, counted apart from the method's
    tokens: int


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
    grounding: GroundingView | None = None


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
    explanation = text(record.get("explanation"))
    evidence = evidence_views(record.get("evidence"), trace)
    grounding = None
    if isinstance(record.get("grounding"), Mapping):
        grounding, evidence = grounding_view(
            record["grounding"], explanation, record.get("evidence"), evidence
        )
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
        explanation=explanation,
        evidence=evidence,
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
        grounding=grounding,
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


def grounding_view(
    grounding: Mapping[str, Any],
    explanation: str,
    items: object,
    evidence: tuple[EvidenceView, ...],
) -> tuple[GroundingView, tuple[EvidenceView, ...]]:
    """The grounding for the page, and the evidence told the ids it is cited by.

    ``explanation`` is the text the page shows (cut at `TEXT_CAP`): a sentence whose span
    does not hold its own text there (past the cut, or a record edited by hand) is shown
    as plain text, never as a slice of something else.
    """
    anchors, cited_as, others = reference_anchors(records(grounding.get("references")), items)
    sentences = records(grounding.get("sentences"))
    statuses = [_status(s.get("status")) for s in sentences]
    factual = sum(status in FACTUAL_STATUSES for status in statuses)
    share = fraction(grounding.get("grounded_share"))
    flags = strings(grounding.get("flags"), cap=8, size=60)
    mode = "strict" if grounding.get("mode") == "strict" else "on"
    usage = mapping(grounding.get("usage"))
    view = GroundingView(
        mode=mode,
        checker=text(grounding.get("checker"), 120),
        pieces=explanation_pieces(explanation, sentences, anchors),
        references=others,
        supported=statuses.count("supported"),
        factual=factual,
        share="" if share is None or not factual else f"{share:.2f}",
        argues_against=grounding.get("consistent_with_label") is False,
        flags=tuple((name, _FLAG_WORDS.get(name, "")) for name in flags),
        ungrounded=mode == "strict" and bool(flags),
        error=text(grounding.get("error"), 300),
        calls=integer(usage.get("llm_calls")),
        tokens=integer(usage.get("prompt_tokens")) + integer(usage.get("completion_tokens")),
    )
    told = tuple(
        replace(ev, cited_as=cited_as[ev.number])
        if cited_as.get(ev.number, (str(ev.number),)) != (str(ev.number),)
        else ev
        for ev in evidence
    )
    return view, told


def reference_anchors(
    references: list[Mapping[str, Any]], items: object
) -> tuple[dict[str, str], dict[int, tuple[str, ...]], tuple[ReferenceView, ...]]:
    """Where each reference id points on the page: its evidence passage, else its own item.

    A reference is the passage whose text it holds (`verity.grounding.cite.passages` keeps
    a passage's text with its spaces made single, cut to 1,500 characters), each passage
    taken once, in order; a reference that is no passage (a graph fact, a sub-task) is
    listed with the grounding. Returns the anchors by upper-cased id, the ids of each
    passage by its number, and the references listed apart.
    """
    passages = [
        " ".join(ev["text"].split()) if isinstance(ev.get("text"), str) else ""
        for ev in records(items)
    ]
    taken: set[int] = set()
    anchors: dict[str, str] = {}
    cited_as: dict[int, tuple[str, ...]] = {}
    others: list[ReferenceView] = []
    for ref in references:
        ident = text(ref.get("id"), 20)
        key = ident.upper()
        if not ident or key in anchors:
            continue  # the first reference of an id is the one cited, as the checker keys them
        body = " ".join(ref["text"].split()) if isinstance(ref.get("text"), str) else ""
        number_ = _passage_of(body, passages, taken)
        if number_ is not None:
            taken.add(number_)
            anchors[key] = f"#evidence-{number_}"
            cited_as[number_] = (*cited_as.get(number_, ()), ident)
            continue
        anchor = "reference-" + _NOT_IN_ANCHOR.sub("_", ident)
        anchors[key] = "#" + anchor
        others.append(
            ReferenceView(
                id=ident,
                anchor=anchor,
                kind=text(ref.get("kind"), 30),
                title=text(ref.get("title"), 300),
                text=text(ref.get("text"), SNIPPET_CAP),
            )
        )
    return anchors, cited_as, tuple(others)


def _passage_of(body: str, passages: list[str], taken: set[int]) -> int | None:
    """The number (from 1) of the first passage not yet taken whose text ``body`` holds."""
    if not body:
        return None
    cut = body.endswith("…")
    for number_, passage in enumerate(passages, start=1):
        if number_ in taken:
            continue
        if passage == body or (cut and passage.startswith(body[:-1])):
            return number_
    return None


def explanation_pieces(
    explanation: str, sentences: list[Mapping[str, Any]], anchors: Mapping[str, str]
) -> tuple[Piece, ...]:
    """The explanation cut at its sentences' offsets: each sentence, and the text between."""
    pieces: list[Piece] = []
    at = 0
    for number_, sentence in enumerate(sentences, start=1):
        start, end = sentence.get("start"), sentence.get("end")
        if not (_offset(start) and _offset(end)) or not at <= start <= end <= len(explanation):
            continue
        if explanation[start:end] != sentence.get("text"):
            continue
        if start > at:
            pieces.append(Piece(explanation[at:start], "", "", (), 0))
        status = _status(sentence.get("status"))
        pieces.append(
            Piece(
                text=explanation[start:end],
                status=status,
                words=_STATUS_WORDS[status],
                links=_links(sentence, anchors),
                number=number_,
            )
        )
        at = end
    if not pieces:
        return ()
    if at < len(explanation):
        pieces.append(Piece(explanation[at:], "", "", (), 0))
    return tuple(pieces)


def _offset(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _status(value: object) -> str:
    return value if isinstance(value, str) and value in _STATUS_WORDS else "unchecked"


def _links(sentence: Mapping[str, Any], anchors: Mapping[str, str]) -> tuple[CiteLink, ...]:
    """The ids the sentence cites, then those the checker found that it does not cite."""
    cites = strings(sentence.get("cites"), cap=16, size=20)
    found = [i for i in strings(sentence.get("found"), cap=16, size=20) if i not in cites]
    return tuple(
        CiteLink(id=ident, href=anchors.get(ident.upper()), cited=named)
        for ident, named in [(i, True) for i in cites] + [(i, False) for i in found]
    )


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
