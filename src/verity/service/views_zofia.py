"""ZoFia's reasoning for the web page: keywords, what each agent said, the debate.

    view = zofia_view(verdict.trace.model_dump(mode="json"))
    view.keywords                       # ('the Affordable Care Act',)
    view.rounds[0].pro.rebuttal         # the pro side's first turn
    view.decision                       # 'Fake'

The fields follow ZoFia's trace (`verity.methods.zofia.method`): the keywords and their
saliency, the web query and the Wikipedia senses, the linguist's five dimensions, the
domain expert, each claim checked against the passages, and the debate round by round
with the judge's ruling after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from verity.service.views_common import (
    fixed,
    integer,
    mapping,
    records,
    safe_href,
    strings,
    text,
)


@dataclass(frozen=True)
class UnitView:
    """A candidate keyword with its NER confidence and saliency, and whether it was kept."""

    text: str
    confidence: str
    saliency: str
    chosen: bool


@dataclass(frozen=True)
class LinkView:
    """A titled link (a web result, a Wikipedia page); ``href`` None when not http(s)."""

    title: str
    href: str | None
    note: str = ""


@dataclass(frozen=True)
class ClaimView:
    """A claim from the article, how the passages judge it and why."""

    kind: str
    claim: str
    label: str
    reasoning: str
    quotes: tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class TurnView:
    """One debater's turn: the rebuttal, then the evidence points with their reasons."""

    side: str
    rebuttal: str
    points: tuple[tuple[str, str, str], ...]  # (source, evidence, reason)
    failed: bool


@dataclass(frozen=True)
class RoundView:
    """A debate round: both turns and the judge's ruling after it."""

    number: int
    turns: tuple[TurnView, ...]
    ruling: str
    forced: bool


@dataclass(frozen=True)
class ZofiaView:
    """ZoFia's part of the page."""

    keywords: tuple[str, ...]
    construction: str
    units: tuple[UnitView, ...]
    web_query: str
    web_results: tuple[LinkView, ...]
    wikipedia: tuple[LinkView, ...]
    linguist: tuple[tuple[str, str, str], ...]  # (dimension, lean, analysis)
    expert: tuple[tuple[str, str], ...]
    claims: tuple[ClaimView, ...]
    rounds: tuple[RoundView, ...]
    decision: str
    forced: bool
    warnings: tuple[str, ...]
    kind: Literal["zofia"] = "zofia"


def _units(keywords: Mapping[str, Any]) -> tuple[UnitView, ...]:
    chosen = {text(step.get("unit"), 300) for step in records(keywords.get("iterations"))}
    return tuple(
        UnitView(
            text=text(u.get("text"), 300),
            confidence=fixed(u.get("confidence"), 3),
            saliency=fixed(u.get("hierarchical"), 3),
            chosen=text(u.get("text"), 300) in chosen,
        )
        for u in records(keywords.get("units"), 60)
    )


def _wikipedia(senses: object) -> tuple[LinkView, ...]:
    shown = []
    for sense in records(senses, 40):
        keyword = text(sense.get("keyword"), 200)
        chosen = text(sense.get("chosen"), 300)
        shown.append(
            LinkView(
                title=chosen or f"no page for {keyword}",
                href=safe_href(sense.get("url")) if chosen else None,
                note=keyword,
            )
        )
    return tuple(shown)


def _turn(turn: Mapping[str, Any]) -> TurnView:
    return TurnView(
        side=text(turn.get("side"), 10),
        rebuttal=text(turn.get("rebuttal")),
        points=tuple(
            (text(p.get("source"), 100), text(p.get("evidence")), text(p.get("reason")))
            for p in records(turn.get("points"), 20)
        ),
        failed=turn.get("failed") is True,
    )


def _rounds(debate: Mapping[str, Any]) -> tuple[RoundView, ...]:
    rulings = {integer(r.get("round")): r for r in records(debate.get("rulings"))}
    turns: dict[int, list[TurnView]] = {}
    for turn in records(debate.get("turns")):
        turns.setdefault(integer(turn.get("round")), []).append(_turn(turn))
    return tuple(
        RoundView(
            number=number,
            turns=tuple(shown),
            ruling=text(mapping(rulings.get(number)).get("decision"), 40),
            forced=mapping(rulings.get(number)).get("forced") is True,
        )
        for number, shown in sorted(turns.items())
    )


def zofia_view(trace: Mapping[str, Any]) -> ZofiaView:
    """ZoFia's part of the page from its trace."""
    keywords = mapping(trace.get("keywords"))
    web = mapping(trace.get("web"))
    expert = mapping(trace.get("expert"))
    decision = mapping(trace.get("decision"))
    return ZofiaView(
        keywords=tuple(strings(keywords.get("terms"), 40)),
        construction=text(keywords.get("construction"), 40),
        units=_units(keywords),
        web_query=text(web.get("query"), 500),
        web_results=tuple(
            LinkView(
                title=text(r.get("title"), 300) or text(r.get("source"), 100),
                href=safe_href(r.get("url")),
            )
            for r in records(web.get("results"), 40)
        ),
        wikipedia=_wikipedia(trace.get("wikipedia")),
        linguist=tuple(
            (
                text(name, 40),
                text(mapping(judged).get("lean"), 20),
                text(mapping(judged).get("analysis")),
            )
            for name, judged in list(mapping(trace.get("linguist")).items())[:10]
        ),
        expert=tuple(
            (label, text(expert.get(key)))
            for label, key in (
                ("domain", "domain"),
                ("expert", "expert_role"),
                ("knowledge concordance", "knowledge_concordance"),
                ("logical integrity", "logical_integrity"),
            )
            if expert.get(key)
        ),
        claims=tuple(
            ClaimView(
                kind=text(c.get("kind"), 20),
                claim=text(c.get("claim"), 1000),
                label=text(c.get("label"), 40),
                reasoning=text(c.get("reasoning")),
                quotes=tuple(
                    (text(q.get("quote"), 500), q.get("found") is True)
                    for q in records(c.get("quotes"), 10)
                ),
            )
            for c in records(trace.get("claims"), 40)
        ),
        rounds=_rounds(mapping(trace.get("debate"))),
        decision=text(decision.get("decision"), 40),
        forced=decision.get("forced") is True,
        warnings=tuple(strings(trace.get("warnings"), 10, 500)),
    )
