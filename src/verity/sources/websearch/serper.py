"""Serper (Google results) as an evidence source.

Usage:

    source = SerperSearch()                      # reads SERPER_API_KEY
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
    query_with_exclusions,
    rank_score,
    to_evidence,
)

ENDPOINT = "https://google.serper.dev/search"
SERVICE = "Serper"
MAX_COUNT = 100  # Google's upper bound for `num`


class _Result(Payload):
    title: str | None = None
    link: str | None = None
    snippet: str | None = None
    date: str | None = None
    position: int | None = None


class _Response(Payload):
    # Absent when Google found nothing; answer boxes and the like are ignored.
    organic: list[_Result] = Field(default_factory=list)


class SerperSearch(KeyedSearch):
    """Google's organic results through the Serper API, with a date cutoff sent as ``tbs``.

    Excluded domains go into the query as ``-site:`` operators (the API has no parameter
    for them). The date of a result is Google's ``date`` (``Mar 3, 2021`` or ``3 days
    ago``), present for some results only. Score is 1/position (1, 1/2, 1/3...).

        source = SerperSearch(api_key_env="MY_SERPER_KEY")
        hits = source.search("who built the Eiffel Tower", k=3, exclude_domains=["x.com"])
    """

    kind = "serper"
    service = SERVICE

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = "SERPER_API_KEY",
        name: str = "serper",
    ) -> None:
        super().__init__(client=client, api_key_env=api_key_env, name=name)

    def _candidates(
        self, text: str, k: int, *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterable[Evidence | None]:
        body: dict[str, Any] = {
            "q": query_with_exclusions(text, exclude_domains),
            "num": fetch_count(k, before=before, exclude_domains=exclude_domains, cap=MAX_COUNT),
        }
        if before is not None:
            # Google's custom date range is inclusive: it ends the day before the cutoff.
            last = before - timedelta(days=1)
            body["tbs"] = f"cdr:1,cd_max:{last:%m/%d/%Y}"
        answer = self._fetch(
            _Response, "POST", ENDPOINT, json=body, headers={"X-API-KEY": self._key}
        )
        return (
            to_evidence(
                source=self.name,
                title=hit.title,
                url=hit.link,
                text=hit.snippet,
                score=rank_score(hit.position - 1 if hit.position else rank),
                published=parse_date(hit.date),
            )
            for rank, hit in enumerate(answer.organic)
        )
