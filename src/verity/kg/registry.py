"""Knowledge graphs by name.

    make_kg("wikidata")           # live Wikidata (network)
    make_kg("kg-local")           # the default offline graph ($VERITY_KG_FILE)
    make_kg("kg-local:mine")      # a store loaded with `verity kg load FILE --name mine`

A spec is ``NAME`` or ``NAME:ARGUMENT``. Names are entry points in the ``verity.kg``
group, each a factory taking the optional argument; verity's own graphs are registered the
same way in its ``pyproject.toml``. Knowledge graphs are not evidence sources (they return
facts, not passages), so they have a registry of their own.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points
from typing import Any

from verity.errors import ConfigError, UnknownNameError
from verity.kg.base import KnowledgeGraph

GROUP = "verity.kg"


@cache
def _registry() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def kg_names() -> list[str]:
    """Every registered knowledge-graph name."""
    return sorted(_registry())


def make_kg(spec: str) -> KnowledgeGraph:
    """Build the knowledge graph a spec names; files and stores are checked now.

    `UnknownNameError` for a name no one registered; `ConfigError` for a bad argument,
    a missing graph file or an unknown store.
    """
    name, _, arg = spec.strip().partition(":")
    try:
        entry = _registry()[name]
    except KeyError:
        raise UnknownNameError("knowledge graph", name or spec, kg_names()) from None
    factory = entry.load()
    graph: KnowledgeGraph = factory(arg or None)
    return graph


# -- factories of the built-in graphs (registered as entry points) -------------------------


def wikidata(arg: str | None) -> KnowledgeGraph:
    """The live Wikidata: search API and Query Service."""
    from verity.kg.wikidata import WikidataGraph

    if arg:
        raise ConfigError("wikidata takes no argument")
    return WikidataGraph()


def kg_local(arg: str | None) -> KnowledgeGraph:
    """The default offline graph, or with an argument the store of that name."""
    from verity.kg.local import LocalGraph
    from verity.kg.store import DEFAULT_STORE

    return LocalGraph(arg or DEFAULT_STORE)
