"""Tavily search API as an evidence source.

Usage:

    source = TavilySearch()                      # reads TAVILY_API_KEY
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
    rank_score,
    read_key,
    request_json,
    to_evidence,
)

ENDPOINT = "https://api.tavily.com/search"
SERVICE = "Tavily"
MAX_COUNT = 20  # the API's upper bound for `max_results`


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: str | None = None
    url: str | None = None
    content: str | None = None
    score: float | None = None
    published_date: str | None = None


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")

    results: list[_Result] = Field(default_factory=list)


class TavilySearch:
    """Results from the Tavily search API, which takes both the cutoff and the exclusions.

    The cutoff is sent as ``end_date`` (the day before ``before``) and excluded domains as
    ``exclude_domains``; both are enforced again on the answer. The score is Tavily's own
    relevance score (0 to 1). ``search_depth`` is ``basic`` (1 credit) unless set.

        source = TavilySearch(search_depth="advanced")
        hits = source.search("who built the Eiffel Tower", k=3, exclude_domains=["x.com"])
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = "TAVILY_API_KEY",
        search_depth: str = "basic",
        name: str = "tavily",
    ) -> None:
        self._key = read_key(SERVICE, api_key_env)
        self.api_key_env = api_key_env
        self.search_depth = search_depth
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
        body: dict[str, Any] = {
            "query": text,
            "max_results": fetch_count(
                k, before=before, exclude_domains=exclude_domains, cap=MAX_COUNT
            ),
            "search_depth": self.search_depth,
        }
        if exclude_domains:
            body["exclude_domains"] = [d.strip().lower() for d in exclude_domains if d.strip()]
        if before is not None:
            # Sent as the last allowed day, which is right whether Tavily's bound is
            # inclusive or not; apply_filters drops anything dated later anyway.
            body["end_date"] = (before - timedelta(days=1)).isoformat()
        payload = request_json(
            self._client,
            SERVICE,
            "POST",
            ENDPOINT,
            key_env=self.api_key_env,
            json=body,
            headers={"Authorization": f"Bearer {self._key}"},
        )
        results = parse_payload(_Response, payload, SERVICE).results
        candidates = (
            to_evidence(
                source=self.name,
                title=hit.title,
                url=hit.url,
                text=hit.content,
                score=hit.score if hit.score is not None else rank_score(rank),
                published=parse_date(hit.published_date),
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
        return {
            "type": "tavily",
            "name": self.name,
            "api_key_env": self.api_key_env,
            "search_depth": self.search_depth,
        }
