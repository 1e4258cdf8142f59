"""A knowledge graph as an evidence source: the facts about the entities a query names.

    source = make_source("kg-local")              # or "wikidata", "kg-local:mine"
    source.search("Barack Obama's spouse", k=5)   # facts as passages, with their ids
    source.graph                                   # the KnowledgeGraph itself, for wkgfc

``search`` links the query's named entities (or the whole query when spaCy finds none)
and returns their outgoing facts, those sharing the most words with the query first. So
any method can read a graph, and a graph method (``wkgfc``) finds its graph among the
sources it is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

from verity.domain import Evidence
from verity.kg.base import KnowledgeGraph
from verity.kg.facts import fact_text

_WORD = re.compile(r"[a-z0-9]+")


class GraphSource:
    """A `verity.sources.base.Source` over a `KnowledgeGraph`."""

    def __init__(self, graph: KnowledgeGraph) -> None:
        self.graph = graph
        self.name = graph.name

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Facts about the entities named in ``query``; graph facts carry no date."""
        from verity.nlp.ner import EntityRecognizer

        names = [s.text for s in EntityRecognizer().extract(query)] or [query]
        qids = list(dict.fromkeys(m.qid for n in names for m in self.graph.link(n, k=1)))
        if not qids:
            return []
        words = set(_WORD.findall(query.lower()))
        facts = self.graph.neighbours(qids, "out", limit=200)
        ranked = sorted(facts, key=lambda f: -len(words & set(_WORD.findall(fact_text(f).lower()))))
        return [
            Evidence(
                text=fact_text(f),
                title=f.subject_label or f.subject,
                source=self.name,
                id=f"{f.subject}|{f.pid}|{f.object}",
                url=f"https://www.wikidata.org/wiki/{f.subject}",
            )
            for f in ranked[:k]
        ]

    def to_dict(self) -> dict[str, Any]:
        """The graph's configuration."""
        return {"type": "knowledge-graph", **self.graph.to_dict()}
