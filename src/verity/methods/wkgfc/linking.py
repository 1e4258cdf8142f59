"""initKGRetrieval (paper section 4.1): claim entities to QIDs, then their one-hop facts.

Mentions are spaCy's named entities; when none of them links to an item (or there are
none), its noun chunks are tried. Dates and amounts are left out, as no item stands for
them. Each mention is linked to its best match; the initial subgraph is the statements
going out of and coming into each seed, from two SPARQL templates (``neighbours_out``,
``neighbours_in``), at most ``limit`` per seed and direction, so that one heavily linked
seed (a country, say) does not crowd out the others. The facts are then ordered by
relevance to the claim, so that a prompt which can show only some shows the closest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from verity.kg.base import EntityMatch, KnowledgeGraph, Triple
from verity.kg.facts import fact_text
from verity.methods.wkgfc.subgraph import Subgraph
from verity.nlp.ner import EntityRecognizer, noun_chunks

# Entity types that name values rather than things with a Wikidata item.
VALUE_TYPES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})

# A noun chunk's leading determiner is not part of any item's name ("the banana").
DETERMINER = re.compile(r"^(the|a|an|this|that|these|those)\s+", re.IGNORECASE)

# Scores each text against the claim, higher is closer.
Relevance = Callable[[str, Sequence[str]], Sequence[float]]


def _unique(found: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(m.strip() for m in found if m.strip()))


def _link(names: Sequence[str], graph: KnowledgeGraph) -> tuple[dict[str, EntityMatch], list[str]]:
    seeds: dict[str, EntityMatch] = {}
    unlinked: list[str] = []
    for name in names:
        matches = graph.link(name, k=1)
        if matches:
            seeds.setdefault(matches[0].qid, matches[0])
        else:
            unlinked.append(name)
    return seeds, unlinked


def link_mentions(
    text: str, graph: KnowledgeGraph, recognizer: EntityRecognizer
) -> tuple[dict[str, EntityMatch], list[str]]:
    """Seeds by QID and the mentions that found no item; noun chunks if no entity links."""
    found = [span.text for span in recognizer.extract(text) if span.label not in VALUE_TYPES]
    seeds, unlinked = _link(_unique(found), graph)
    if not seeds:
        chunks = [DETERMINER.sub("", c) for c in noun_chunks(text, recognizer.model)]
        chunks = [c for c in _unique(chunks) if c not in unlinked]
        seeds, more = _link(chunks, graph)
        unlinked += more
    return seeds, unlinked


def init_retrieval(
    text: str,
    graph: KnowledgeGraph,
    recognizer: EntityRecognizer,
    *,
    limit: int,
    relevance: Relevance | None = None,
) -> tuple[Subgraph, list[str]]:
    """The initial subgraph of a claim, and the mentions that found no entity."""
    seeds, unlinked = link_mentions(text, graph, recognizer)
    sub = Subgraph(seeds=list(seeds.values()), frontier=list(seeds))
    facts: list[Triple] = []
    for qid in seeds:
        facts.extend(graph.neighbours([qid], "out", limit=limit))
        facts.extend(graph.neighbours([qid], "in", limit=limit))
    if relevance is not None and len(facts) > 1:
        scores = relevance(text, [fact_text(f) for f in facts])
        order = sorted(range(len(facts)), key=lambda i: -float(scores[i]))
        facts = [facts[i] for i in order]
    sub.initial = len(sub.add(facts))
    return sub, unlinked
