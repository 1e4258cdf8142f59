"""wikidata: the live Wikidata as a knowledge graph, over its public APIs.

Names are linked with the Wikibase ``wbsearchentities`` API and entities expanded with the
SPARQL templates of `verity.kg.templates`, sent to the Wikidata Query Service as ``GET
?query=...&format=json`` and answered in the SPARQL 1.1 JSON results format. The very same
query text runs on the offline ``kg-local`` store.

Requests go through the shared verity HTTP client (`verity.http`): a descriptive
User-Agent, as Wikimedia's policy asks, retries of 429 and 5xx answers with backoff (and
``Retry-After``), and the on-disk cache, so a repeated query costs no request. On top of
that this module spaces requests at least ``min_interval`` seconds apart (a request
answered from the cache gives its turn back) and gives each query ``timeout`` seconds
(the service itself stops a query after 60 s). Network failures, timeouts, 429 or 5xx
after the retries, and malformed answers are `SourceUnavailableError`.

    kg = WikidataGraph()
    kg.link("Barack Obama", k=3)                  # [EntityMatch(qid='Q76', ...), ...]
    kg.follow(["Q76"], ["P26"], "out")             # [Triple(... 'Michelle Obama' ...)]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verity.errors import BadInputError, ConfigError, SourceUnavailableError
from verity.http import USER_AGENT, shared_http_client
from verity.http.pacing import RateLimiter
from verity.kg.base import EntityMatch, MatchKind, QueryRecord, is_qid
from verity.kg.sparql import Row, SparqlGraph, parse_results_json

SPARQL_ENDPOINT = "https://query.wikidata.org/sparql"
API_ENDPOINT = "https://www.wikidata.org/w/api.php"
SPARQL_ACCEPT = "application/sparql-results+json"
#: wbsearchentities returns at most 50 results.
MAX_SEARCH = 50
# One request every half second keeps well within the Query Service's budget of 60 s of
# query time per minute per client, and within the API etiquette of serial requests.
DEFAULT_MIN_INTERVAL = 0.5
DEFAULT_TIMEOUT = 65.0  # the service's own limit is 60 s; leave it time to say so
_MATCH_KINDS: dict[str, MatchKind] = {"entityId": "id", "label": "label", "alias": "alias"}


class _Match(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str = "label"
    text: str = ""


class _Hit(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    label: str | None = None
    description: str | None = None
    match: _Match = Field(default_factory=_Match)


class _ApiError(BaseModel):
    model_config = ConfigDict(extra="ignore")
    code: str = "unknown"
    info: str = ""


class _SearchResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")
    search: list[_Hit] = Field(default_factory=list)
    error: _ApiError | None = None


class WikidataGraph(SparqlGraph):
    """A `verity.kg.base.KnowledgeGraph` over the live Wikidata APIs (network needed).

    ``client`` defaults to the shared verity client (cache and retries); tests pass one
    with an ``httpx.MockTransport``. ``clock`` and ``sleep`` drive the rate limit.

    `link` asks ``wbsearchentities`` for ``k`` items; the score is rank-based (1, 1/2,
    1/3...) since the API gives none, and ``matched`` is its match type (``label``,
    ``alias``, or ``id`` when the text was a QID).

        kg = WikidataGraph(min_interval=1.0, timeout=30.0)
        kg.relations(["Q76"], "out")
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        name: str = "wikidata",
        endpoint: str = SPARQL_ENDPOINT,
        api_url: str = API_ENDPOINT,
        min_interval: float = DEFAULT_MIN_INTERVAL,
        timeout: float = DEFAULT_TIMEOUT,
        user_agent: str = USER_AGENT,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {timeout}")
        self.name = name
        self.endpoint = endpoint
        self.api_url = api_url
        self.timeout = timeout
        self.user_agent = user_agent
        self.limiter = RateLimiter(min_interval, clock=clock, sleep=sleep)
        self._client = client if client is not None else shared_http_client()

    def link(self, text: str, k: int = 5) -> list[EntityMatch]:
        """At most ``k`` items (``k`` up to 50) the search API finds for ``text``, best first.

        WikidataGraph().link("Barack Obama", k=1)[0].qid    # 'Q76'
        """
        query = text.strip()
        if not query:
            raise BadInputError("the name to link is empty")
        if not 1 <= k <= MAX_SEARCH:
            raise BadInputError(f"k must be from 1 to {MAX_SEARCH}, got {k}")
        params = {
            "action": "wbsearchentities",
            "search": query,
            "language": "en",
            "type": "item",
            "format": "json",
            "limit": k,
        }
        start = time.perf_counter()
        ok, cached = False, False
        found: list[EntityMatch] = []
        try:
            response, cached = self._get(self.api_url, params, "application/json", "search API")
            answer = _search_response(response)
            for rank, hit in enumerate(h for h in answer.search if is_qid(h.id)):
                label = hit.label or hit.match.text or hit.id
                kind = _MATCH_KINDS.get(hit.match.type, "fuzzy")
                matched = hit.match.text or label
                found.append(
                    EntityMatch(hit.id, label, hit.description, 1 / (rank + 1), kind, matched)
                )
            ok = True
            return found[:k]
        finally:
            self.queries.record(
                QueryRecord("link", "search", time.perf_counter() - start, len(found), ok, cached)
            )

    def to_dict(self) -> dict[str, Any]:
        """The endpoints, the rate limit and the timeout."""
        return {
            "type": "wikidata",
            "name": self.name,
            "endpoint": self.endpoint,
            "api_url": self.api_url,
            "language": "en",
            "min_interval": self.limiter.min_interval,
            "timeout": self.timeout,
        }

    def _select(self, query: str) -> tuple[list[Row], bool]:
        response, cached = self._get(
            self.endpoint, {"query": query, "format": "json"}, SPARQL_ACCEPT, "Query Service"
        )
        try:
            payload = response.json()
        except ValueError as exc:
            raise SourceUnavailableError(
                "the Wikidata Query Service did not answer with JSON "
                f"(content type {response.headers.get('content-type')!r})"
            ) from exc
        return parse_results_json(payload, service="the Wikidata Query Service"), cached

    def _get(
        self, url: str, params: dict[str, Any], accept: str, what: str
    ) -> tuple[httpx.Response, bool]:
        """Send one rate-limited GET; the response (status 200) and whether it was cached."""
        turn = self.limiter.acquire()
        try:
            response = self._client.get(
                url,
                params=params,
                headers={"Accept": accept, "User-Agent": self.user_agent},
                timeout=self.timeout,
            )
        except httpx.TimeoutException as exc:
            raise SourceUnavailableError(
                f"the Wikidata {what} did not answer within {self.timeout:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise SourceUnavailableError(
                f"the Wikidata {what} could not be reached: {exc}"
            ) from exc
        cached = response.extensions.get("verity_cache") == "hit"
        if cached:
            self.limiter.release(turn)
        if response.status_code != 200:
            retried = " after retries" if response.status_code in (429, 500, 502, 503, 504) else ""
            detail = response.text[:300].strip()
            raise SourceUnavailableError(
                f"the Wikidata {what} answered HTTP {response.status_code}{retried}"
                + (f": {detail}" if detail else "")
            )
        return response, cached


def _search_response(response: httpx.Response) -> _SearchResponse:
    try:
        answer = _SearchResponse.model_validate(response.json())
    except (ValueError, ValidationError) as exc:
        raise SourceUnavailableError(
            "the Wikidata search API answered in an unexpected shape"
        ) from exc
    if answer.error is not None:
        raise SourceUnavailableError(
            f"the Wikidata search API failed: {answer.error.code}: {answer.error.info}"
        )
    return answer
