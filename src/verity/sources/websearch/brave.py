"""Brave Web Search API as an evidence source.

Usage:

    source = BraveSearch()                       # reads BRAVE_API_KEY
    hits = source.search("Eiffel Tower height", k=5, before=date(2020, 1, 1))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from typing import Any

import httpx
from pydantic import Field

from verity.domain import Evidence
from verity.sources.websearch.common import (
    KeyedSearch,
    Payload,
    fetch_count,
    fit_query,
    parse_date,
    rank_score,
    to_evidence,
)

ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
SERVICE = "Brave Search"
MAX_COUNT = 20  # the API's upper bound for `count`
# Brave's API documentation on `q` (Web Search, query parameters): "Maximum of 400
# characters and 50 words in the query";
# https://api-dashboard.search.brave.com/api-reference/web/search/get
MAX_QUERY_CHARS = 400  # the documented "maximum of 400 characters" of `q`
MAX_QUERY_WORDS = 50  # the documented maximum of "50 words" in `q`


class _Result(Payload):
    title: str | None = None
    url: str | None = None
    description: str | None = None
    page_age: str | None = None
    age: str | None = None


class _Web(Payload):
    results: list[_Result] = Field(default_factory=list)


class _Response(Payload):
    # Absent when Brave found no web results at all.
    web: _Web = Field(default_factory=_Web)


class BraveSearch(KeyedSearch):
    """Web results from the Brave Search API, with a date cutoff sent as ``freshness``.

    Excluded domains go into the query as ``-site:`` operators (the API has no parameter
    for them), in the order given and only as many as keep ``q`` within Brave's documented
    limits of 400 characters and 50 words; a query over a limit by itself is cut at a word
    boundary, never inside a quoted phrase. Results from every excluded domain, including
    those left out of the query, are dropped afterwards all the same. The date of a result
    is its ``page_age``, else its ``age``. Score is rank-based: 1 for the first result, 1/2
    for the second, and so on.

        source = BraveSearch(api_key_env="MY_BRAVE_KEY")
        hits = source.search("who built the Eiffel Tower", k=3, exclude_domains=["x.com"])
    """

    kind = "brave"
    service = SERVICE

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = "BRAVE_API_KEY",
        name: str = "brave",
    ) -> None:
        super().__init__(client=client, api_key_env=api_key_env, name=name)

    def _candidates(
        self, text: str, k: int, *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterable[Evidence | None]:
        # `q` must stay within Brave's documented limits, so the operators that do not fit
        # stay out of it; the full exclusion list still filters the results afterwards, in
        # `WebSearch.search`.
        query = fit_query(
            text, exclude_domains, max_chars=MAX_QUERY_CHARS, max_words=MAX_QUERY_WORDS
        )
        params: dict[str, Any] = {
            "q": query.text,
            "count": fetch_count(k, before=before, exclude_domains=exclude_domains, cap=MAX_COUNT),
        }
        if before is not None:
            # freshness is an inclusive range, so it ends the day before the cutoff.
            last = before - timedelta(days=1)
            params["freshness"] = f"1970-01-01to{last.isoformat()}"
        answer = self._fetch(
            _Response,
            "GET",
            ENDPOINT,
            params=params,
            headers={"Accept": "application/json", "X-Subscription-Token": self._key},
        )
        return (
            to_evidence(
                source=self.name,
                title=hit.title,
                url=hit.url,
                text=hit.description,
                score=rank_score(rank),
                published=parse_date(hit.page_age) or parse_date(hit.age),
            )
            for rank, hit in enumerate(answer.web.results)
        )
