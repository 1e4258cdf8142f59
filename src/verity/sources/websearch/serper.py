"""Serper (Google results) as an evidence source.

Usage:

    source = SerperSearch()                      # reads SERPER_API_KEY
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

ENDPOINT = "https://google.serper.dev/search"
SERVICE = "Serper"
MAX_COUNT = 100  # Google's upper bound for `num`


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: str | None = None
    link: str | None = None
    snippet: str | None = None
    date: str | None = None
    position: int | None = None


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")

    # Absent when Google found nothing; answer boxes and the like are ignored.
    organic: list[_Result] = Field(default_factory=list)


class SerperSearch:
    """Google's organic results through the Serper API, with a date cutoff sent as ``tbs``.

    Excluded domains go into the query as ``-site:`` operators (the API has no parameter
    for them). The date of a result is Google's ``date`` (``Mar 3, 2021`` or ``3 days
    ago``), present for some results only. Score is 1/position (1, 1/2, 1/3...).

        source = SerperSearch(api_key_env="MY_SERPER_KEY")
        hits = source.search("who built the Eiffel Tower", k=3, exclude_domains=["x.com"])
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = "SERPER_API_KEY",
        name: str = "serper",
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
        body: dict[str, Any] = {
            "q": query_with_exclusions(text, exclude_domains),
            "num": fetch_count(k, before=before, exclude_domains=exclude_domains, cap=MAX_COUNT),
        }
        if before is not None:
            # Google's custom date range is inclusive: it ends the day before the cutoff.
            last = before - timedelta(days=1)
            body["tbs"] = f"cdr:1,cd_max:{last:%m/%d/%Y}"
        payload = request_json(
            self._client,
            SERVICE,
            "POST",
            ENDPOINT,
            key_env=self.api_key_env,
            json=body,
            headers={"X-API-KEY": self._key},
        )
        results = parse_payload(_Response, payload, SERVICE).organic
        candidates = (
            to_evidence(
                source=self.name,
                title=hit.title,
                url=hit.link,
                text=hit.snippet,
                score=rank_score(hit.position - 1 if hit.position else rank),
                published=parse_date(hit.date),
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
        return {"type": "serper", "name": self.name, "api_key_env": self.api_key_env}
