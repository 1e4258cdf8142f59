"""Evidence sources by name.

    make_source("offline-wiki")
    make_source("corpus:climate")          # a corpus built with `verity index build`
    make_source("wikipedia:fr")            # French Wikipedia
    make_source("searxng:http://localhost:8888")

A spec is ``NAME`` or ``NAME:ARGUMENT``. Names are entry points in the ``verity.sources``
group, each a factory taking the optional argument; verity's own sources are registered
the same way in its ``pyproject.toml``.
"""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from verity.errors import ConfigError, UnknownNameError
from verity.sources.base import Source

GROUP = "verity.sources"


@cache
def _registry() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def source_names() -> list[str]:
    """Every registered source name."""
    return sorted(_registry())


def make_source(spec: str) -> Source:
    """Build the source a spec names; keys are read from the environment now."""
    name, _, arg = spec.strip().partition(":")
    try:
        entry = _registry()[name]
    except KeyError:
        raise UnknownNameError("source", name or spec, source_names()) from None
    factory = entry.load()
    source: Source = factory(arg or None)
    return source


# -- factories of the built-in sources (registered as entry points) ------------------------


def offline_wiki(arg: str | None) -> Source:
    """The embedded English Wikipedia summaries."""
    from verity.sources.offline_wiki import OfflineWiki

    if arg:
        raise ConfigError("offline-wiki takes no argument")
    return OfflineWiki()


def corpus(arg: str | None) -> Source:
    """A corpus built with ``verity index build PATH --name NAME``."""
    from verity.sources.corpus import CorpusSource

    if not arg:
        raise ConfigError("name the corpus: corpus:NAME")
    return CorpusSource(arg)


def wikipedia(arg: str | None) -> Source:
    """Live Wikipedia; the argument is a language code (default en)."""
    from verity.sources.wikipedia import WikipediaSource

    return WikipediaSource(lang=arg or "en")


def brave(arg: str | None) -> Source:
    """Brave Web Search (BRAVE_API_KEY)."""
    from verity.sources.websearch import BraveSearch

    _no_argument("brave", arg)
    return BraveSearch()


def serper(arg: str | None) -> Source:
    """Google results through Serper (SERPER_API_KEY)."""
    from verity.sources.websearch import SerperSearch

    _no_argument("serper", arg)
    return SerperSearch()


def tavily(arg: str | None) -> Source:
    """Tavily search (TAVILY_API_KEY)."""
    from verity.sources.websearch import TavilySearch

    _no_argument("tavily", arg)
    return TavilySearch()


def searxng(arg: str | None) -> Source:
    """A SearXNG instance; the argument (or SEARXNG_URL) is its base URL."""
    from verity.sources.websearch import SearxngSearch

    return SearxngSearch(base_url=arg)


def ddgs(arg: str | None) -> Source:
    """DuckDuckGo and other engines through the ddgs package (no key)."""
    from verity.sources.websearch import DdgsSearch

    _no_argument("ddgs", arg)
    return DdgsSearch()


def _no_argument(name: str, arg: str | None) -> None:
    if arg:
        raise ConfigError(f"{name} takes no argument")


# name, what it is, the environment variable it needs (if any)
BUILT_IN: tuple[tuple[str, str, str | None], ...] = (
    ("offline-wiki", "embedded English Wikipedia summaries (about 10,000), BM25", None),
    ("corpus:NAME", "your documents, built with `verity index build PATH --name NAME`", None),
    ("wikipedia[:LANG]", "live Wikipedia: search, then page summaries", None),
    ("brave", "Brave Web Search API", "BRAVE_API_KEY"),
    ("serper", "Google results via the Serper API", "SERPER_API_KEY"),
    ("tavily", "Tavily search API", "TAVILY_API_KEY"),
    ("searxng[:URL]", "a SearXNG instance (JSON output enabled)", "SEARXNG_URL"),
    ("ddgs", "DuckDuckGo metasearch via the ddgs package (pip install 'verity[web]')", None),
)


def source_status() -> list[tuple[str, str, str]]:
    """Every built-in source, what it is, and whether it is ready here."""
    from verity.sources.corpus import list_corpora

    rows = []
    for name, what, env_var in BUILT_IN:
        if name.startswith("corpus"):
            built = [c.name for c in list_corpora()]
            status = "built: " + ", ".join(built) if built else "none built yet"
        elif env_var:
            status = f"{env_var} {'set' if os.environ.get(env_var) else 'not set'}"
        else:
            status = "ready (needs network)" if name.startswith(("wikipedia", "ddgs")) else "ready"
        rows.append((name, what, status))
    known = {n.split("[")[0].split(":")[0] for n, _, _ in BUILT_IN}
    rows.extend((n, "plug-in", "registered") for n in source_names() if n not in known)
    return rows


def kg_local(arg: str | None) -> Source:
    """The offline Wikidata graph (``kg-local``) or a loaded store (``kg-local:NAME``)."""
    from verity.kg.registry import make_kg
    from verity.sources.kg import GraphSource

    return GraphSource(make_kg(f"kg-local:{arg}" if arg else "kg-local"))


def wikidata(arg: str | None) -> Source:
    """Live Wikidata as a source of facts."""
    from verity.kg.registry import make_kg
    from verity.sources.kg import GraphSource

    _no_argument("wikidata", arg)
    return GraphSource(make_kg("wikidata"))
