"""Knowledge graphs in Wikidata's vocabulary: entity linking and one-hop expansion.

Two backends implement one `KnowledgeGraph` protocol and run the same SPARQL templates:
``wikidata`` (the live service) and ``kg-local`` (a pyoxigraph store loaded from a file,
offline). See ``docs/kg.md``.

    from verity.kg import make_kg

    kg = make_kg("kg-local")
    [obama] = kg.link("Barack Obama", k=1)
    for rel in kg.relations([obama.qid], "out"):
        print(rel.pid, rel.label, rel.count)
    facts = kg.follow([obama.qid], ["P26"], "out")
"""

from verity.kg.base import (
    Direction,
    EntityMatch,
    KnowledgeGraph,
    MatchKind,
    QueryLog,
    QueryRecord,
    QueryStats,
    Relation,
    Triple,
)
from verity.kg.registry import kg_names, make_kg

__all__ = [
    "Direction",
    "EntityMatch",
    "KnowledgeGraph",
    "MatchKind",
    "QueryLog",
    "QueryRecord",
    "QueryStats",
    "Relation",
    "Triple",
    "kg_names",
    "make_kg",
]
