"""initKGRetrieval's first half (paper sections 4.1, 4.2): claim entities to QIDs.

Mentions are spaCy's named entities; when none of them links to an item (or there are
none), its noun chunks are tried. Dates and amounts are left out, as no item stands for
them. Each mention is linked to its best match; the seeds are the first frontier of the
beam search (`verity.methods.wkgfc.expand`), whose N pruned hops complete the initial
retrieval.

Each mention is looked up on its own (4.2: one ``wbsearchentities`` request per entity),
so the lookups go out at once, in worker threads. They are merged in the mentions' order:
when two mentions link to one item, its seed keeps the first mention's match, as when
they are looked up one by one.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from verity import schedule
from verity.kg.base import EntityMatch, KnowledgeGraph
from verity.methods.wkgfc.subgraph import Subgraph
from verity.nlp.ner import EntityRecognizer, noun_chunks

# Entity types that name values rather than things with a Wikidata item.
VALUE_TYPES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})

# A noun chunk's leading determiner is not part of any item's name ("the banana").
DETERMINER = re.compile(r"^(the|a|an|this|that|these|those)\s+", re.IGNORECASE)


def _unique(found: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(m.strip() for m in found if m.strip()))


async def _link(
    names: Sequence[str], graph: KnowledgeGraph
) -> tuple[dict[str, EntityMatch], list[str]]:
    seeds: dict[str, EntityMatch] = {}
    unlinked: list[str] = []
    found = await schedule.gather(*(asyncio.to_thread(graph.link, name, 1) for name in names))
    for name, matches in zip(names, found, strict=True):
        if matches:
            seeds.setdefault(matches[0].qid, matches[0])
        else:
            unlinked.append(name)
    return seeds, unlinked


def _entities(text: str, recognizer: EntityRecognizer) -> list[str]:
    found = [span.text for span in recognizer.extract(text) if span.label not in VALUE_TYPES]
    return _unique(found)


def _chunks(text: str, recognizer: EntityRecognizer) -> list[str]:
    return _unique([DETERMINER.sub("", c) for c in noun_chunks(text, recognizer.model)])


async def link_mentions(
    text: str, graph: KnowledgeGraph, recognizer: EntityRecognizer
) -> tuple[dict[str, EntityMatch], list[str]]:
    """Seeds by QID and the mentions that found no item; noun chunks if no entity links."""
    seeds, unlinked = await _link(await asyncio.to_thread(_entities, text, recognizer), graph)
    if not seeds:
        chunks = await asyncio.to_thread(_chunks, text, recognizer)
        seeds, more = await _link([c for c in chunks if c not in unlinked], graph)
        unlinked += more
    return seeds, unlinked


async def seed_subgraph(
    text: str, graph: KnowledgeGraph, recognizer: EntityRecognizer
) -> tuple[Subgraph, list[str]]:
    """A subgraph holding the claim's seeds as its frontier, and the mentions not linked."""
    seeds, unlinked = await link_mentions(text, graph, recognizer)
    return Subgraph(seeds=list(seeds.values()), frontier=list(seeds)), unlinked
