"""DuckDuckGo and other engines through the ``ddgs`` package, as an evidence source.

Needs the optional extra: ``pip install 'verity[web]'``.

    source = DdgsSearch()
    hits = source.search("Eiffel Tower height", k=5, exclude_domains=["wikipedia.org"])
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from verity.domain import Evidence
from verity.errors import ConfigError, SourceUnavailableError
from verity.sources.websearch.common import (
    WebSearch,
    fetch_count,
    query_with_exclusions,
    rank_score,
    to_evidence,
)

#: ``search_fn(query, max_results)`` returns dicts with ``title``, ``href`` and ``body``.
SearchFn = Callable[[str, int], Sequence[Mapping[str, Any]]]

_INSTALL_HINT = "the DuckDuckGo source needs the ddgs package: pip install 'verity[web]'"


def _ddgs_text(query: str, max_results: int) -> Sequence[Mapping[str, Any]]:
    """Run a text search with ddgs; its failures become `SourceUnavailableError`."""
    try:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException
    except ImportError as exc:
        raise ConfigError(_INSTALL_HINT) from exc
    try:
        results: Sequence[Mapping[str, Any]] = DDGS().text(
            query, max_results=max_results, timelimit=None
        )
    except DDGSException as exc:
        raise SourceUnavailableError(f"DuckDuckGo search failed: {exc}") from exc
    return results


class DdgsSearch(WebSearch):
    """Web results from the ``ddgs`` metasearch package (DuckDuckGo and friends); no key.

    ``ddgs`` has no date cutoff and returns no dates, so a cutoff cannot remove anything
    here: every result is kept, as `apply_filters` keeps undated passages. Excluded domains
    go into the query as ``-site:`` operators and are enforced on the answer. Score is
    rank-based (1, 1/2, 1/3...). ``ddgs`` does not use httpx, so tests inject
    ``search_fn`` instead of a transport.

        fake = lambda q, n: [{"title": "T", "href": "https://a.org", "body": "B"}]
        hits = DdgsSearch(search_fn=fake).search("anything", k=1)
    """

    kind = "ddgs"

    def __init__(self, *, search_fn: SearchFn | None = None, name: str = "ddgs") -> None:
        # Check now that the package is there, import it only when searching.
        if search_fn is None and importlib.util.find_spec("ddgs") is None:
            raise ConfigError(_INSTALL_HINT)
        self._search_fn: SearchFn = search_fn if search_fn is not None else _ddgs_text
        self.name = name

    def _candidates(
        self, text: str, k: int, *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterable[Evidence | None]:
        results = self._search_fn(
            query_with_exclusions(text, exclude_domains),
            fetch_count(k, before=before, exclude_domains=exclude_domains),
        )
        return (
            to_evidence(
                source=self.name,
                title=hit.get("title"),
                url=hit.get("href"),
                text=hit.get("body"),
                score=rank_score(rank),
                published=None,
            )
            for rank, hit in enumerate(results)
        )
