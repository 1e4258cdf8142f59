"""Web-search providers as evidence sources, one module per provider.

Each class implements `verity.sources.base.Source`: it asks the provider for a few more
results than ``k`` when a filter applies, then enforces the date cutoff and the domain
exclusions itself with `apply_filters`, whatever the provider did with them. Keys are read
from environment variables whose names are configurable, at construction.

    from verity.sources.websearch import PROVIDERS
    source = PROVIDERS["brave"]()            # BraveSearch, reads BRAVE_API_KEY
    hits = source.search("Eiffel Tower height", k=5, before=date(2020, 1, 1))
"""

from __future__ import annotations

from collections.abc import Callable

from verity.sources.base import Source
from verity.sources.websearch.brave import BraveSearch
from verity.sources.websearch.ddgs import DdgsSearch
from verity.sources.websearch.searxng import SearxngSearch
from verity.sources.websearch.serper import SerperSearch
from verity.sources.websearch.tavily import TavilySearch

__all__ = [
    "PROVIDERS",
    "BraveSearch",
    "DdgsSearch",
    "SearxngSearch",
    "SerperSearch",
    "TavilySearch",
]

#: Provider name -> class, the names used in configuration files and ``to_dict()["type"]``.
PROVIDERS: dict[str, Callable[..., Source]] = {
    "brave": BraveSearch,
    "ddgs": DdgsSearch,
    "searxng": SearxngSearch,
    "serper": SerperSearch,
    "tavily": TavilySearch,
}
