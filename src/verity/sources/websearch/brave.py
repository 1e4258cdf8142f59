"""Brave Web Search API as an evidence source.

Usage:

    source = BraveSearch()                       # reads BRAVE_API_KEY
    hits = source.search("Eiffel Tower height", k=5, before=date(2020, 1, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from verity.domain import Evidence
from verity.http import shared_http_client
from verity.sources.base import apply_filters
from verity.sources.websearch.common import (
    check_query,
    fetch_count,
    parse_date,
    parse_payload,
    query_with_exclusions,
    rank_score,
    read_key,
    request_json,
    to_evidence,
)

ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
SERVICE = "Brave Search"
MAX_COUNT = 20  # the API's upper bound for `count`


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: str | None = None
    url: str | None = None
    description: str | None = None
    page_age: str | None = None
    age: str | None = None


class _Web(BaseModel):
    model_config = ConfigDict(extra="ignore")

    results: list[_Result] = Field(default_factory=list)


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")

    # Absent when Brave found no web results at all.
    web: _Web = Field(default_factory=_Web)


class BraveSearch:
    """Web results from the Brave Search API, with a date cutoff sent as ``freshness``.

    Excluded domains go into the query as ``-site:`` operators (the API has no parameter
    for them). The date of a result is its ``page_age``, else its ``age``. Score is
    rank-based: 1 for the first result, 1/2 for the second, and so on.

        source = BraveSearch(api_key_env="MY_BRAVE_KEY")
        hits = source.search("who built the Eiffel Tower", k=3, exclude_domains=["x.com"])
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = "BRAVE_API_KEY",
        name: str = "brave",
    ) -> None:
        self._key = read_key(SERVICE, api_key_env)
        self.api_key_env = api_key_env
        self.name = name
        self._client = client if client is not None else shared_http_client()

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` results, best first, none dated on or after ``before``."""
        text = check_query(query, k)
        params: dict[str, Any] = {
            "q": query_with_exclusions(text, exclude_domains),
            "count": fetch_count(k, before=before, exclude_domains=exclude_domains, cap=MAX_COUNT),
        }
        if before is not None:
            # freshness is an inclusive range, so it ends the day before the cutoff.
            last = before - timedelta(days=1)
            params["freshness"] = f"1970-01-01to{last.isoformat()}"
        payload = request_json(
            self._client,
            SERVICE,
            "GET",
            ENDPOINT,
            key_env=self.api_key_env,
            params=params,
            headers={"Accept": "application/json", "X-Subscription-Token": self._key},
        )
        results = parse_payload(_Response, payload, SERVICE).web.results
        candidates = (
            to_evidence(
                source=self.name,
                title=hit.title,
                url=hit.url,
                text=hit.description,
                score=rank_score(rank),
                published=parse_date(hit.page_age) or parse_date(hit.age),
            )
            for rank, hit in enumerate(results)
        )
        return apply_filters(
            (ev for ev in candidates if ev is not None),
            k,
            before=before,
            exclude_domains=exclude_domains,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration; the key appears only as its variable's name."""
        return {"type": "brave", "name": self.name, "api_key_env": self.api_key_env}
