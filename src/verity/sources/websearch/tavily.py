"""Tavily search API as an evidence source.

Usage:

    source = TavilySearch()                      # reads TAVILY_API_KEY
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
    parse_date,
    rank_score,
    to_evidence,
)

ENDPOINT = "https://api.tavily.com/search"
SERVICE = "Tavily"
MAX_COUNT = 20  # the API's upper bound for `max_results`


class _Result(Payload):
    title: str | None = None
    url: str | None = None
    content: str | None = None
    score: float | None = None
    published_date: str | None = None


class _Response(Payload):
    results: list[_Result] = Field(default_factory=list)


class TavilySearch(KeyedSearch):
    """Results from the Tavily search API, which takes both the cutoff and the exclusions.

    The cutoff is sent as ``end_date`` (the day before ``before``) and excluded domains as
    ``exclude_domains``; both are enforced again on the answer. The score is Tavily's own
    relevance score (0 to 1). ``search_depth`` is ``basic`` (1 credit) unless set.

        source = TavilySearch(search_depth="advanced")
        hits = source.search("who built the Eiffel Tower", k=3, exclude_domains=["x.com"])
    """

    kind = "tavily"
    service = SERVICE

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = "TAVILY_API_KEY",
        search_depth: str = "basic",
        name: str = "tavily",
    ) -> None:
        super().__init__(client=client, api_key_env=api_key_env, name=name)
        self.search_depth = search_depth

    def _candidates(
        self, text: str, k: int, *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterable[Evidence | None]:
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
        answer = self._fetch(
            _Response, "POST", ENDPOINT, json=body, headers={"Authorization": f"Bearer {self._key}"}
        )
        return (
            to_evidence(
                source=self.name,
                title=hit.title,
                url=hit.url,
                text=hit.content,
                score=hit.score if hit.score is not None else rank_score(rank),
                published=parse_date(hit.published_date),
            )
            for rank, hit in enumerate(answer.results)
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration; the key appears only as its variable's name."""
        return {**super().to_dict(), "search_depth": self.search_depth}
