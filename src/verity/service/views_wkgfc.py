"""WKGFC's reasoning for the web page: linked entities, the subgraph drawn, the agent's steps.

    view = wkgfc_view(verdict.trace.model_dump(mode="json"))
    view.seeds[0].label              # 'Alice Smith'
    view.graph.nodes, view.graph.edges
    [a.action for a in view.actions] # ['initKGRetrieval', 'expandKG', 'webSearch', 'verdict']

The fields follow WKGFC's trace (`verity.methods.wkgfc.method`): ``subgraph`` (seeds and
facts with their QIDs, PIDs and hop), ``actions`` (each step, its reason and what it
observed) and ``web`` (each search and the passages kept).
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
    wikidata_href,
)
from verity.service.views_graph import Fact, GraphView, layout


@dataclass(frozen=True)
class EntityView:
    """A seed: the claim's words, the entity they were linked to and how."""

    qid: str
    label: str
    matched: str
    text: str
    href: str | None


@dataclass(frozen=True)
class FactView:
    """One statement of the subgraph, as a table row."""

    subject: str
    subject_href: str | None
    prop: str
    prop_href: str | None
    object: str
    object_href: str | None
    hop: int


@dataclass(frozen=True)
class ActionView:
    """One step of the episode: the action, why, with what, and what came of it."""

    number: int
    action: str
    reason: str
    target: str
    summary: str
    taken: bool


@dataclass(frozen=True)
class SearchView:
    """One web search and the passages its filter kept, with their confidence."""

    query: str
    found: int
    kept: tuple[tuple[str, str | None, str], ...]  # (title, link, confidence)
    error: str


@dataclass(frozen=True)
class WkgfcView:
    """WKGFC's part of the page."""

    mode: str
    seeds: tuple[EntityView, ...]
    unlinked: tuple[str, ...]
    facts: tuple[FactView, ...]
    graph: GraphView
    actions: tuple[ActionView, ...]
    searches: tuple[SearchView, ...]
    forced: bool
    citations: str
    kind: Literal["wkgfc"] = "wkgfc"


def _named(label: str, ident: str) -> str:
    return f"{label} ({ident})" if label and label != ident else ident


def _fact(f: Mapping[str, Any]) -> tuple[Fact, FactView]:
    subject, obj, pid = (
        text(f.get("subject"), 40),
        text(f.get("object"), 300),
        text(f.get("pid"), 40),
    )
    subject_label = text(f.get("subject_label"), 300)
    object_label, prop_label = text(f.get("object_label"), 300), text(f.get("property_label"), 200)
    entity = f.get("object_kind") == "entity"
    drawn = Fact(subject, subject_label, prop_label or pid, obj, object_label, entity)
    row = FactView(
        subject=_named(subject_label, subject),
        subject_href=wikidata_href(subject),
        prop=_named(prop_label, pid),
        prop_href=wikidata_href(pid),
        object=_named(object_label, obj) if entity else (object_label or obj),
        object_href=wikidata_href(obj) if entity else safe_href(obj),
        hop=integer(f.get("hop")),
    )
    return drawn, row


def _target(action: Mapping[str, Any]) -> str:
    if action.get("query"):
        return text(action.get("query"), 300)
    return ", ".join(strings(action.get("entities"), 10, 40))


def wkgfc_view(trace: Mapping[str, Any]) -> WkgfcView:
    """WKGFC's part of the page from its trace."""
    sub = mapping(trace.get("subgraph"))
    seeds = tuple(
        EntityView(
            qid=text(s.get("qid"), 40),
            label=text(s.get("label"), 300),
            matched=text(s.get("matched"), 20),
            text=text(s.get("text"), 300),
            href=wikidata_href(s.get("qid")),
        )
        for s in records(sub.get("seeds"), 40)
    )
    pairs = [_fact(f) for f in records(sub.get("facts"))]
    first = records(trace.get("actions"), 1)
    observed = mapping(first[0].get("observation")) if first else {}
    citations = mapping(trace.get("citations"))
    return WkgfcView(
        mode=text(trace.get("mode"), 40),
        seeds=seeds,
        unlinked=tuple(strings(observed.get("unlinked"), 20, 200)),
        facts=tuple(row for _, row in pairs),
        graph=layout(
            [s.qid for s in seeds], [drawn for drawn, _ in pairs], {s.qid: s.label for s in seeds}
        ),
        actions=tuple(
            ActionView(
                number=number,
                action=text(a.get("action"), 40),
                reason=text(a.get("reason"), 2000),
                target=_target(a),
                summary=text(a.get("summary"), 300),
                taken=a.get("taken") is not False,
            )
            for number, a in enumerate(records(trace.get("actions"), 40), start=1)
        ),
        searches=tuple(
            SearchView(
                query=text(w.get("query"), 500),
                found=integer(w.get("found")),
                kept=tuple(
                    (
                        text(k.get("title"), 300) or text(k.get("ref"), 300),
                        safe_href(k.get("ref")),
                        fixed(k.get("confidence")),
                    )
                    for k in records(w.get("kept"), 20)
                ),
                error=text(w.get("error"), 500),
            )
            for w in records(trace.get("web"), 20)
        ),
        forced=trace.get("forced_verdict") is True,
        citations=(
            f"{integer(citations.get('valid'))} of {integer(citations.get('cited'))} valid"
            if citations
            else ""
        ),
    )
