"""WikidataGraph against payloads in the wbsearchentities and SPARQL 1.1 JSON results shapes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from verity.errors import BadInputError, SourceUnavailableError
from verity.http import USER_AGENT, make_http_client
from verity.http.pacing import RateLimiter
from verity.kg.base import EntityMatch, KnowledgeGraph, Relation, Triple
from verity.kg.local import LocalGraph
from verity.kg.sparql import Row
from verity.kg.templates import render
from verity.kg.wikidata import WikidataGraph

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"


def uri(value: str) -> dict[str, str]:
    return {"type": "uri", "value": value}


def en(value: str) -> dict[str, str]:
    return {"xml:lang": "en", "type": "literal", "value": value}


def results(variables: list[str], bindings: list[dict[str, Any]]) -> dict[str, Any]:
    """A SELECT answer as the Wikidata Query Service sends it (format=json)."""
    return {"head": {"vars": variables}, "results": {"bindings": bindings}}


OBAMA_OUT = results(
    ["s", "sLabel", "p", "pLabel", "o", "oLabel"],
    [
        {
            "s": uri(WD + "Q76"),
            "sLabel": en("Barack Obama"),
            "p": uri(WDT + "P26"),
            "pLabel": en("spouse"),
            "o": uri(WD + "Q13133"),
            "oLabel": en("Michelle Obama"),
        },
        {
            "s": uri(WD + "Q76"),
            "sLabel": en("Barack Obama"),
            "p": uri(WDT + "P569"),
            "pLabel": en("date of birth"),
            "o": {"datatype": XSD_DATETIME, "type": "literal", "value": "1961-08-04T00:00:00Z"},
        },
        {
            "s": uri(WD + "Q76"),
            "sLabel": en("Barack Obama"),
            "p": uri(WDT + "P18"),
            "pLabel": en("image"),
            "o": uri("http://commons.wikimedia.org/wiki/Special:FilePath/Obama.jpg"),
        },
        {  # an "unknown value" statement: no fact to report
            "s": uri(WD + "Q76"),
            "p": uri(WDT + "P1038"),
            "o": uri("http://www.wikidata.org/.well-known/genid/0f1e2d3c4b5a"),
        },
        {
            "s": uri(WD + "Q76"),
            "sLabel": en("Barack Obama"),
            "p": uri(WDT + "P737"),
            "o": uri(WD + "Q25649"),
        },
    ],
)

SEARCH = {
    "searchinfo": {"search": "Barack Obama"},
    "search": [
        {
            "id": "Q76",
            "title": "Q76",
            "pageid": 152,
            "concepturi": "http://www.wikidata.org/entity/Q76",
            "repository": "wikidata",
            "url": "//www.wikidata.org/wiki/Q76",
            "display": {
                "label": {"value": "Barack Obama", "language": "en"},
                "description": {
                    "value": "president of the United States from 2009 to 2017",
                    "language": "en",
                },
            },
            "label": "Barack Obama",
            "description": "president of the United States from 2009 to 2017",
            "match": {"type": "label", "language": "en", "text": "Barack Obama"},
        },
        {
            "id": "Q649593",
            "label": "Barack Obama Sr.",
            "description": "Kenyan economist (1934–1982)",
            "match": {"type": "alias", "language": "en", "text": "Barack Hussein Obama Sr."},
        },
    ],
    "search-continue": 2,
    "success": 1,
}


class Service:
    """A fake Wikidata: the search API and the Query Service; remembers every request."""

    def __init__(self, sparql: dict[str, Any] | None = None, search: dict[str, Any] | None = None):
        self.sparql = sparql or results([], [])
        self.search = search or SEARCH
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert request.method == "GET"
        if request.url.host == "query.wikidata.org":
            assert request.url.path == "/sparql"
            return httpx.Response(
                200, json=self.sparql, headers={"content-type": "application/sparql-results+json"}
            )
        assert (request.url.host, request.url.path) == ("www.wikidata.org", "/w/api.php")
        return httpx.Response(200, json=self.search)

    def queries(self) -> list[str]:
        return [r.url.params["query"] for r in self.requests if "query" in r.url.params]


def graph(handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> WikidataGraph:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return WikidataGraph(client=client, min_interval=0.0, **kwargs)


def test_link_request_and_matches() -> None:
    service = Service()
    found = graph(service).link("  Barack Obama ", k=2)
    [request] = service.requests
    assert str(request.url).startswith("https://www.wikidata.org/w/api.php?")
    assert dict(request.url.params) == {
        "action": "wbsearchentities",
        "search": "Barack Obama",
        "language": "en",
        "type": "item",
        "format": "json",
        "limit": "2",
    }
    assert request.headers["user-agent"] == USER_AGENT
    assert request.headers["user-agent"].startswith("verity/")
    assert found == [
        EntityMatch(
            "Q76",
            "Barack Obama",
            "president of the United States from 2009 to 2017",
            1.0,
            "label",
            "Barack Obama",
        ),
        EntityMatch(
            "Q649593",
            "Barack Obama Sr.",
            "Kenyan economist (1934–1982)",
            0.5,
            "alias",
            "Barack Hussein Obama Sr.",
        ),
    ]


def test_link_checks_its_input() -> None:
    service = Service()
    with pytest.raises(BadInputError):
        graph(service).link(" ")
    with pytest.raises(BadInputError):
        graph(service).link("Obama", k=51)
    assert service.requests == []


def test_sparql_request_and_rows_to_triples() -> None:
    service = Service(sparql=OBAMA_OUT)
    facts = graph(service).neighbours(["Q76"], "out", limit=50)
    [request] = service.requests
    assert (request.url.scheme, request.url.host, request.url.path) == (
        "https",
        "query.wikidata.org",
        "/sparql",
    )
    assert dict(request.url.params) == {
        "query": render("neighbours_out", seeds=["Q76"], limit=50),
        "format": "json",
    }
    assert request.headers["accept"] == "application/sparql-results+json"
    assert request.headers["user-agent"] == USER_AGENT
    assert facts == [
        Triple("Q76", "Barack Obama", "P26", "spouse", "Q13133", "Michelle Obama"),
        Triple(
            "Q76",
            "Barack Obama",
            "P569",
            "date of birth",
            "1961-08-04T00:00:00Z",
            None,
            "literal",
            XSD_DATETIME,
        ),
        Triple(
            "Q76",
            "Barack Obama",
            "P18",
            "image",
            "http://commons.wikimedia.org/wiki/Special:FilePath/Obama.jpg",
            None,
            "iri",
        ),
        Triple("Q76", "Barack Obama", "P737", None, "Q25649", None),
    ]


def test_relations_and_labels_from_json() -> None:
    count = {"datatype": "http://www.w3.org/2001/XMLSchema#integer", "type": "literal"}
    service = Service(
        sparql=results(
            ["p", "pLabel", "count"],
            [
                {
                    "p": uri(WDT + "P161"),
                    "pLabel": en("cast member"),
                    "count": {**count, "value": "5"},
                },
                {"p": uri(WDT + "P26"), "pLabel": en("spouse"), "count": {**count, "value": "1"}},
                {"p": uri(WDT + "P1"), "count": {**count, "value": "5"}},
            ],
        )
    )
    assert graph(service).relations(["Q76"], "in") == [
        Relation("P1", None, 5),
        Relation("P161", "cast member", 5),
        Relation("P26", "spouse", 1),
    ]
    service.sparql = results(
        ["e", "label"],
        [
            {"e": uri(WD + "Q76"), "label": en("Barack Obama")},
            {"e": uri(WD + "P26"), "label": en("spouse")},
        ],
    )
    assert graph(service).labels(["Q76", "P26", "Q4"]) == {"Q76": "Barack Obama", "P26": "spouse"}


def test_online_and_offline_send_the_same_sparql(small_nt: Path, tmp_path: Path) -> None:
    local = LocalGraph("small", file=small_nt, root=tmp_path / "kg")
    ran: list[str] = []
    real_select = local._select

    def spy(query: str) -> tuple[list[Row], bool]:
        ran.append(query)
        return real_select(query)

    local._select = spy  # type: ignore[method-assign]
    service = Service()
    online = graph(service)
    for kg in (local, online):
        kg.neighbours(["Q1", "Q2"], "out", limit=40)
        kg.neighbours(["Q3"], "in", limit=40)
        kg.relations(["Q1"], "out", limit=500)
        kg.relations(["Q3"], "in", limit=500)
        kg.follow(["Q1"], ["P1", "P3"], "out", limit=10)
        kg.follow(["Q3"], ["P1"], "in", limit=10)
        kg.labels(["Q1", "P1"])
    # The offline graph reads a one-property follow from its indexes instead of running
    # the query (tests/kg/test_kg_follow.py checks it gets the query's rows); every
    # query it does run is the online one.
    sent = service.queries()
    assert len(sent) == 7
    assert ran == [q for q in sent if "VALUES ?p { wdt:P1 }" not in q]
    assert len(ran) == 6


def test_retries_429_and_503_then_succeeds() -> None:
    answers = [
        httpx.Response(429, headers={"Retry-After": "2"}, text="Too Many Requests"),
        httpx.Response(503, text="<html>Service Unavailable</html>"),
    ]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0) if answers else httpx.Response(200, json=OBAMA_OUT)

    sleeps: list[float] = []
    client = make_http_client(
        transport=httpx.MockTransport(handler),
        cache=False,
        sleep=sleeps.append,
        jitter=lambda ceiling: ceiling,  # the whole backoff, so the wait is known
    )
    facts = WikidataGraph(client=client, min_interval=0.0).neighbours(["Q76"])
    assert len(seen) == 3
    assert sleeps == [2.0, 1.0]  # Retry-After, then the backoff of the second retry
    assert len(facts) == 4


@pytest.mark.parametrize("status", [429, 503])
def test_unavailable_after_the_retries(status: int) -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(status)
        return httpx.Response(status, text="java.util.concurrent.TimeoutException")

    client = make_http_client(
        transport=httpx.MockTransport(handler), cache=False, retries=2, sleep=lambda _: None
    )
    kg = WikidataGraph(client=client, min_interval=0.0)
    with pytest.raises(SourceUnavailableError, match=f"HTTP {status} after retries"):
        kg.neighbours(["Q76"])
    assert len(calls) == 3
    assert kg.queries.summary().failed == 1


def test_a_bad_query_is_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(400)
        return httpx.Response(400, text="MalformedQueryException: Encountered ...")

    client = make_http_client(
        transport=httpx.MockTransport(handler), cache=False, sleep=lambda _: None
    )
    with pytest.raises(SourceUnavailableError, match="HTTP 400: MalformedQueryException"):
        WikidataGraph(client=client, min_interval=0.0).relations(["Q76"])
    assert calls == [400]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (httpx.ReadTimeout("read timed out"), "did not answer within 12 s"),
        (httpx.ConnectError("name resolution failed"), "could not be reached"),
    ],
)
def test_network_failures(error: httpx.HTTPError, message: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    kg = graph(handler, timeout=12.0)
    with pytest.raises(SourceUnavailableError, match=message) as info:
        kg.follow(["Q76"], ["P26"])
    assert info.value.__cause__ is error
    with pytest.raises(SourceUnavailableError, match=message):
        kg.link("Barack Obama")


def test_the_timeout_is_sent_with_each_request() -> None:
    timeouts: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        timeouts.append(request.extensions["timeout"])
        return httpx.Response(200, json=OBAMA_OUT)

    graph(handler, timeout=7.5).neighbours(["Q76"])
    assert timeouts == [{"connect": 7.5, "read": 7.5, "write": 7.5, "pool": 7.5}]


@pytest.mark.parametrize(
    "body",
    [
        b"<!doctype html><p>maintenance</p>",
        b'{"head": {"vars": ["s"]}}',
        b'{"head": {}, "boolean": true}',
        b'{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri"}}]}}',
        b'{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "x", "value": "1"}}]}}',
    ],
)
def test_malformed_sparql_json(body: bytes) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body)

    with pytest.raises(SourceUnavailableError, match="JSON"):
        graph(handler).neighbours(["Q76"])


def test_search_api_errors() -> None:
    error = {
        "error": {
            "code": "param-missing",
            "info": 'The required parameter "search" was missing.',
            "*": "See https://www.wikidata.org/w/api.php for API usage.",
        },
        "servedby": "mw-api-ext.eqiad.main-5c8d9b6c5d-abcde",
    }
    with pytest.raises(SourceUnavailableError, match="param-missing"):
        graph(Service(search=error)).link("Obama")
    with pytest.raises(SourceUnavailableError, match="unexpected shape"):
        graph(Service(search={"search": [{"label": "no id"}]})).link("Obama")


class FakeTime:
    """A clock that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_rate_limit_spaces_requests() -> None:
    fake = FakeTime()
    service = Service()
    client = httpx.Client(transport=httpx.MockTransport(service))
    kg = WikidataGraph(client=client, min_interval=1.5, clock=fake.clock, sleep=fake.sleep)
    kg.link("Obama")
    kg.neighbours(["Q76"])
    fake.now += 0.5  # the caller spends half a second elsewhere
    kg.relations(["Q76"])
    fake.now += 10  # long enough: no wait at all
    kg.labels(["Q76"])
    assert fake.sleeps == [1.5, 1.0]
    assert len(service.requests) == 4


def test_cache_hits_give_their_turn_back(tmp_path: Path) -> None:
    fake = FakeTime()
    service = Service(sparql=OBAMA_OUT)
    client = make_http_client(
        transport=httpx.MockTransport(service), cache_path=tmp_path / "http.sqlite"
    )
    kg = WikidataGraph(client=client, min_interval=2.0, clock=fake.clock, sleep=fake.sleep)
    for _ in range(4):
        assert len(kg.neighbours(["Q76"])) == 4
    client.close()
    assert len(service.requests) == 1
    # Only the first repeat waits, for the turn after the one network request.
    assert fake.sleeps == [2.0]
    assert kg.queries.summary().cached == 3


def test_rate_limiter_alone() -> None:
    fake = FakeTime()
    limiter = RateLimiter(1.0, clock=fake.clock, sleep=fake.sleep)
    first = limiter.acquire()
    second = limiter.acquire()
    limiter.release(first)  # too late: a later turn was taken, nothing changes
    third = limiter.acquire()
    assert (first, second, third) == (100.0, 101.0, 102.0)
    limiter.release(third)
    assert limiter.acquire() == 102.0
    assert fake.sleeps == [1.0, 1.0]


def test_configuration_and_protocol() -> None:
    kg = graph(Service(), timeout=30.0)
    assert isinstance(kg, KnowledgeGraph)
    assert kg.to_dict() == {
        "type": "wikidata",
        "name": "wikidata",
        "endpoint": "https://query.wikidata.org/sparql",
        "api_url": "https://www.wikidata.org/w/api.php",
        "language": "en",
        "min_interval": 0.0,
        "timeout": 30.0,
    }


@pytest.mark.live
def test_live_wikidata_links_and_follows() -> None:
    with make_http_client(cache=False) as client:
        kg = WikidataGraph(client=client, min_interval=1.0)
        found = kg.link("Barack Obama", k=3)
        spouses = kg.follow(["Q76"], ["P26"], "out")
    assert found[0].qid == "Q76"
    assert found[0].label == "Barack Obama"
    assert [(t.object, t.object_label) for t in spouses] == [("Q13133", "Michelle Obama")]
