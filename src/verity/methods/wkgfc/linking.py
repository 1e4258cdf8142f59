"""initKGRetrieval (paper section 4.1): claim entities to QIDs, then their one-hop facts.

Mentions are spaCy's named entities, or its noun chunks when it finds none; dates and
amounts are left out, as no item stands for them. Each mention is linked to its best
match; the initial subgraph is every statement going out of and coming into the seeds,
from two SPARQL templates (``neighbours_out``, ``neighbours_in``).
"""

from __future__ import annotations

from verity.kg.base import EntityMatch, KnowledgeGraph
from verity.methods.wkgfc.subgraph import Subgraph
from verity.nlp.ner import EntityRecognizer, noun_chunks

# Entity types that name values rather than things with a Wikidata item.
VALUE_TYPES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})


def mentions(text: str, recognizer: EntityRecognizer) -> list[str]:
    """Entity mentions in order, without duplicates; noun chunks when there are none."""
    found = [span.text for span in recognizer.extract(text) if span.label not in VALUE_TYPES]
    if not found:
        found = noun_chunks(text, recognizer.model)
    return list(dict.fromkeys(m.strip() for m in found if m.strip()))


def init_retrieval(
    text: str,
    graph: KnowledgeGraph,
    recognizer: EntityRecognizer,
    *,
    limit: int,
) -> tuple[Subgraph, list[str]]:
    """The initial subgraph of a claim, and the mentions that found no entity."""
    seeds: dict[str, EntityMatch] = {}
    unlinked: list[str] = []
    for mention in mentions(text, recognizer):
        matches = graph.link(mention, k=1)
        if matches:
            seeds.setdefault(matches[0].qid, matches[0])
        else:
            unlinked.append(mention)
    sub = Subgraph(seeds=list(seeds.values()), frontier=list(seeds))
    if seeds:
        qids = list(seeds)
        sub.add(graph.neighbours(qids, "out", limit=limit))
        sub.add(graph.neighbours(qids, "in", limit=limit))
    return sub, unlinked
