"""Web-search providers against payloads in each provider's documented shape."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from shapes.brave import brave_payload, brave_result
from verity.domain import Evidence
from verity.errors import BadInputError, ConfigError, MissingKeyError, SourceUnavailableError
from verity.http import make_http_client
from verity.sources.base import Source
from verity.sources.websearch import (
    PROVIDERS,
    BraveSearch,
    DdgsSearch,
    SearxngSearch,
    SerperSearch,
    TavilySearch,
)
from verity.sources.websearch.common import parse_date, query_with_exclusions

CUTOFF = date(2020, 1, 1)
KEYS = {
    "BRAVE_API_KEY": "BSA-test-brave-key-0001",
    "SERPER_API_KEY": "serper-test-key-0002",
    "TAVILY_API_KEY": "tvly-test-key-0003",
}

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SEARXNG_URL", "http://searx.local:8888/")
    return KEYS


def mock(handler: Handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def titles(hits: list[Evidence]) -> list[str]:
    return [h.title for h in hits]


# --- shared helpers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2021-03-03", date(2021, 3, 3)),
        ("2021-03-03T10:15:00", date(2021, 3, 3)),
        ("2021-03-03T23:15:00.000Z", date(2021, 3, 3)),
        ("2021-03-03T10:15:00+02:00", date(2021, 3, 3)),
        ("Mar 3, 2021", date(2021, 3, 3)),
        ("March 3, 2021", date(2021, 3, 3)),
        ("3 Mar 2021", date(2021, 3, 3)),
        ("Wed, 03 Mar 2021 10:00:00 GMT", date(2021, 3, 3)),
        ("3 days ago", date(2024, 6, 7)),
        ("1 hour ago", date(2024, 6, 10)),
        ("2 weeks ago", date(2024, 5, 27)),
        ("a month ago", date(2024, 5, 11)),
        ("yesterday-ish", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_date(raw: str | None, expected: date | None) -> None:
    assert parse_date(raw, today=date(2024, 6, 10)) == expected


def test_query_with_exclusions() -> None:
    assert query_with_exclusions("eiffel", ["www.Snopes.com", " ", "x.com"]) == (
        "eiffel -site:snopes.com -site:x.com"
    )
    assert query_with_exclusions("eiffel", []) == "eiffel"


# --- Brave -------------------------------------------------------------------------------


def test_brave_maps_results_to_evidence(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET"
        assert request.url.copy_with(query=None) == "https://api.search.brave.com/res/v1/web/search"
        assert dict(request.url.params) == {"q": "eiffel tower height", "count": "3"}
        assert request.headers["X-Subscription-Token"] == keys["BRAVE_API_KEY"]
        assert request.headers["Accept"] == "application/json"
        return httpx.Response(
            200,
            json=brave_payload(
                brave_result(
                    "Eiffel Tower - Wikipedia",
                    "https://en.wikipedia.org/wiki/Eiffel_Tower",
                    "The <strong>Eiffel Tower</strong> is 330&nbsp;m tall &amp; made of iron.",
                    page_age="2024-05-01T10:00:00",
                    age="May 1, 2024",
                ),
                brave_result(
                    "Tour Eiffel",
                    "https://www.toureiffel.paris/en",
                    "Official site.",
                    age="March 3, 2021",
                ),
                brave_result("No snippet", "https://example.org/x", ""),
            ),
        )

    hits = BraveSearch(client=mock(handler)).search(" eiffel tower height ", k=3)
    assert [(h.title, h.url, h.score, h.published, h.source) for h in hits] == [
        (
            "Eiffel Tower - Wikipedia",
            "https://en.wikipedia.org/wiki/Eiffel_Tower",
            1.0,
            date(2024, 5, 1),
            "brave",
        ),
        ("Tour Eiffel", "https://www.toureiffel.paris/en", 0.5, date(2021, 3, 3), "brave"),
        ("No snippet", "https://example.org/x", 1 / 3, None, "brave"),
    ]
    assert hits[0].text == "The Eiffel Tower is 330 m tall & made of iron."
    assert hits[2].text == "No snippet"  # the title stands in for a missing snippet


def test_brave_sends_cutoff_and_exclusions_and_enforces_them(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        params = request.url.params
        assert params["q"] == "eiffel tower -site:facebook.com"
        assert params["freshness"] == "1970-01-01to2019-12-31"
        assert params["count"] == "8"  # k plus a margin for what the filters drop
        # The provider ignores both filters here; the source must not.
        return httpx.Response(
            200,
            json=brave_payload(
                brave_result(
                    "New", "https://news.example/2023", "Late.", page_age="2023-02-01T00:00:00"
                ),
                brave_result(
                    "Day of cutoff", "https://news.example/c", "Late.", age="January 1, 2020"
                ),
                brave_result(
                    "Facebook", "https://m.facebook.com/post/1", "Excluded.", age="2010-01-01"
                ),
                brave_result(
                    "Old", "https://old.example/1999", "Early.", page_age="1999-12-31T00:00:00"
                ),
                brave_result("Undated", "https://undated.example/", "No date."),
                brave_result("Old 2", "https://old.example/2000", "Early.", age="Jan 2, 2000"),
                brave_result("Old 3", "https://old.example/2001", "Early.", age="Jan 2, 2001"),
            ),
        )

    hits = BraveSearch(client=mock(handler)).search(
        "eiffel tower", k=3, before=CUTOFF, exclude_domains=["facebook.com"]
    )
    assert titles(hits) == ["Old", "Undated", "Old 2"]


def test_brave_count_is_capped_at_twenty(keys: dict[str, str]) -> None:
    counts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        counts.append(request.url.params["count"])
        return httpx.Response(200, json={"type": "search", "query": {"original": "x"}})

    assert BraveSearch(client=mock(handler)).search("x", k=18, before=CUTOFF) == []
    assert counts == ["20"]


def test_brave_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with pytest.raises(MissingKeyError) as info:
        BraveSearch(client=mock(lambda r: httpx.Response(500)))
    assert info.value.env_var == "BRAVE_API_KEY"
    monkeypatch.setenv("MY_BRAVE", "  ")
    with pytest.raises(MissingKeyError, match="MY_BRAVE"):
        BraveSearch(client=mock(lambda r: httpx.Response(500)), api_key_env="MY_BRAVE")


def test_brave_custom_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    monkeypatch.setenv("TEAM_BRAVE_KEY", "team-key")

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["X-Subscription-Token"] == "team-key"
        return httpx.Response(200, json=brave_payload())

    source = BraveSearch(client=mock(handler), api_key_env="TEAM_BRAVE_KEY", name="brave-team")
    assert source.search("x") == []
    assert source.to_dict() == {
        "type": "brave",
        "name": "brave-team",
        "api_key_env": "TEAM_BRAVE_KEY",
    }


def test_brave_rejected_key(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            401,
            json={
                "type": "ErrorResponse",
                "error": {
                    "id": "c1a2",
                    "status": 401,
                    "code": "SUBSCRIPTION_TOKEN_INVALID",
                    "detail": "The provided subscription token is invalid.",
                },
                "time": 1714567890,
            },
        )

    with pytest.raises(
        SourceUnavailableError, match=r"rejected the API key.*BRAVE_API_KEY"
    ) as info:
        BraveSearch(client=mock(handler)).search("eiffel")
    assert isinstance(info.value.__cause__, httpx.HTTPStatusError)
    assert keys["BRAVE_API_KEY"] not in str(info.value)


def test_brave_retries_429_through_the_shared_client(keys: dict[str, str], tmp_path: Path) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            return httpx.Response(
                429, headers={"Retry-After": "1", "X-RateLimit-Remaining": "0"}, json={}
            )
        return httpx.Response(
            200, json=brave_payload(brave_result("T", "https://a.example/", "S."))
        )

    sleeps: list[float] = []
    client = make_http_client(
        transport=httpx.MockTransport(handler),
        cache_path=tmp_path / "c.sqlite",
        sleep=sleeps.append,
    )
    source = BraveSearch(client=client)
    assert titles(source.search("eiffel", k=1)) == ["T"]
    assert titles(source.search("eiffel", k=1)) == ["T"]  # served by the cache
    client.close()
    assert len(calls) == 2
    assert sleeps == [1.0]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite*"))
    assert b"a.example" in stored
    assert keys["BRAVE_API_KEY"].encode() not in stored


def test_server_errors_after_retries_are_source_unavailable(keys: dict[str, str]) -> None:
    client = make_http_client(
        transport=httpx.MockTransport(lambda r: httpx.Response(503, text="upstream down")),
        cache=False,
        retries=1,
        sleep=lambda _: None,
    )
    with pytest.raises(SourceUnavailableError, match="HTTP 503: upstream down"):
        BraveSearch(client=client).search("eiffel")


def test_network_and_json_errors_are_source_unavailable(keys: dict[str, str]) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    with pytest.raises(SourceUnavailableError, match="could not be reached"):
        SerperSearch(client=mock(down)).search("eiffel")
    with pytest.raises(SourceUnavailableError, match="not answer with JSON"):
        TavilySearch(client=mock(lambda r: httpx.Response(200, text="<html></html>"))).search("x")
    with pytest.raises(SourceUnavailableError, match="unexpected shape"):
        TavilySearch(client=mock(lambda r: httpx.Response(200, json={"results": "none"}))).search(
            "x"
        )


# --- Serper ------------------------------------------------------------------------------


def serper_payload(*organic: dict[str, Any]) -> dict[str, Any]:
    return {
        "searchParameters": {"q": "eiffel tower", "type": "search", "engine": "google"},
        "knowledgeGraph": {
            "title": "Eiffel Tower",
            "type": "Tower",
            "website": "https://www.toureiffel.paris/",
        },
        "organic": list(organic),
        "peopleAlsoAsk": [
            {"question": "How tall is it?", "snippet": "330 m", "link": "https://q.example/"}
        ],
        "relatedSearches": [{"query": "eiffel tower tickets"}],
        "credits": 1,
    }


def serper_result(
    position: int, title: str, link: str, snippet: str, **extra: Any
) -> dict[str, Any]:
    return {
        "title": title,
        "link": link,
        "snippet": snippet,
        "position": position,
        "sitelinks": [{"title": "Tickets", "link": link + "/tickets"}],
        **extra,
    }


def test_serper_posts_query_and_maps_results(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url == "https://google.serper.dev/search"
        assert request.headers["X-API-KEY"] == keys["SERPER_API_KEY"]
        assert request.headers["content-type"] == "application/json"
        assert json.loads(request.content) == {"q": "eiffel tower", "num": 2}
        return httpx.Response(
            200,
            json=serper_payload(
                serper_result(
                    1,
                    "Eiffel Tower",
                    "https://en.wikipedia.org/wiki/Eiffel_Tower",
                    "A tower.",
                    date="Mar 3, 2021",
                ),
                serper_result(
                    2, "Tour Eiffel", "https://www.toureiffel.paris/en", "Official site."
                ),
            ),
        )

    hits = SerperSearch(client=mock(handler)).search("eiffel tower", k=2)
    assert [(h.title, h.url, h.text, h.score, h.published, h.source) for h in hits] == [
        (
            "Eiffel Tower",
            "https://en.wikipedia.org/wiki/Eiffel_Tower",
            "A tower.",
            1.0,
            date(2021, 3, 3),
            "serper",
        ),
        ("Tour Eiffel", "https://www.toureiffel.paris/en", "Official site.", 0.5, None, "serper"),
    ]


def test_serper_sends_cutoff_and_exclusions_and_enforces_them(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content) == {
            "q": "eiffel tower -site:snopes.com -site:x.com",
            "num": 7,
            "tbs": "cdr:1,cd_max:12/31/2019",
        }
        return httpx.Response(
            200,
            json=serper_payload(
                serper_result(1, "Recent", "https://news.example/a", "New.", date="3 days ago"),
                serper_result(
                    2,
                    "Snopes",
                    "https://www.snopes.com/fact-check/x",
                    "Excluded.",
                    date="Jan 5, 2015",
                ),
                serper_result(3, "Old", "https://old.example/a", "Early.", date="Dec 31, 2019"),
                serper_result(4, "X", "https://x.com/status/1", "Excluded."),
                serper_result(5, "Undated", "https://undated.example/", "No date."),
            ),
        )

    hits = SerperSearch(client=mock(handler)).search(
        "eiffel tower", k=2, before=CUTOFF, exclude_domains=["snopes.com", "x.com"]
    )
    assert titles(hits) == ["Old", "Undated"]
    assert [h.score for h in hits] == [1 / 3, 1 / 5]


def test_serper_forbidden_key_and_missing_key(
    keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    forbidden = mock(
        lambda r: httpx.Response(403, json={"message": "Unauthorized.", "statusCode": 403})
    )
    with pytest.raises(SourceUnavailableError, match=r"rejected the API key.*SERPER_API_KEY"):
        SerperSearch(client=forbidden).search("eiffel")
    monkeypatch.delenv("SERPER_API_KEY")
    with pytest.raises(MissingKeyError, match="SERPER_API_KEY"):
        SerperSearch(client=forbidden)


# --- Tavily ------------------------------------------------------------------------------


def tavily_payload(*results: dict[str, Any]) -> dict[str, Any]:
    return {
        "query": "eiffel tower",
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": list(results),
        "response_time": 1.09,
        "request_id": "123e4567-e89b-12d3-a456-426614174111",
    }


def tavily_result(title: str, url: str, content: str, score: float, **extra: Any) -> dict[str, Any]:
    return {
        "title": title,
        "url": url,
        "content": content,
        "score": score,
        "raw_content": None,
        **extra,
    }


def test_tavily_posts_filters_as_parameters_and_enforces_them(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST"
        assert request.url == "https://api.tavily.com/search"
        assert request.headers["Authorization"] == f"Bearer {keys['TAVILY_API_KEY']}"
        assert json.loads(request.content) == {
            "query": "eiffel tower",  # no -site: in the query: Tavily has a parameter
            "max_results": 8,
            "search_depth": "basic",
            "exclude_domains": ["snopes.com"],
            "end_date": "2019-12-31",
        }
        return httpx.Response(
            200,
            json=tavily_payload(
                tavily_result("Snopes", "https://snopes.com/a", "Excluded.", 0.99),
                tavily_result(
                    "Old", "https://old.example/a", "Early.", 0.91, published_date="2019-06-01"
                ),
                tavily_result(
                    "Late",
                    "https://news.example/b",
                    "New.",
                    0.9,
                    published_date="Wed, 15 Nov 2023 10:00:00 GMT",
                ),
                tavily_result("Undated", "https://undated.example/", "No date.", 0.42),
            ),
        )

    hits = TavilySearch(client=mock(handler)).search(
        "eiffel tower", k=3, before=CUTOFF, exclude_domains=["snopes.com"]
    )
    assert [(h.title, h.score, h.published, h.source) for h in hits] == [
        ("Old", 0.91, date(2019, 6, 1), "tavily"),
        ("Undated", 0.42, None, "tavily"),
    ]


def test_tavily_without_filters_sends_only_the_basics(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content) == {
            "query": "q",
            "max_results": 4,
            "search_depth": "advanced",
        }
        return httpx.Response(
            200, json=tavily_payload(tavily_result("A", "https://a.example/", "A.", 0.5))
        )

    source = TavilySearch(client=mock(handler), search_depth="advanced")
    assert titles(source.search("q", k=4)) == ["A"]
    assert source.to_dict() == {
        "type": "tavily",
        "name": "tavily",
        "api_key_env": "TAVILY_API_KEY",
        "search_depth": "advanced",
    }


def test_tavily_rejected_and_missing_key(
    keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rejected = mock(
        lambda r: httpx.Response(
            401, json={"detail": {"error": "Unauthorized: missing or invalid API key."}}
        )
    )
    with pytest.raises(SourceUnavailableError, match=r"rejected the API key.*TAVILY_API_KEY"):
        TavilySearch(client=rejected).search("eiffel")
    monkeypatch.delenv("TAVILY_API_KEY")
    with pytest.raises(MissingKeyError):
        TavilySearch(client=rejected)


# --- SearXNG -----------------------------------------------------------------------------


def searx_payload(*results: dict[str, Any]) -> dict[str, Any]:
    return {
        "query": "eiffel tower",
        "number_of_results": 0,
        "results": list(results),
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": ["eiffel tower height"],
        "unresponsive_engines": [["brave", "timeout"]],
    }


def searx_result(title: str, url: str, content: str, score: float, **extra: Any) -> dict[str, Any]:
    return {
        "url": url,
        "title": title,
        "content": content,
        "engine": "duckduckgo",
        "parsed_url": ["https", url.split("/")[2], "/", "", "", ""],
        "template": "default.html",
        "engines": ["duckduckgo", "google"],
        "positions": [1, 2],
        "score": score,
        "category": "general",
        "publishedDate": None,
        **extra,
    }


def test_searxng_maps_results_and_reads_url_from_env(keys: dict[str, str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET"
        assert request.url.copy_with(query=None) == "http://searx.local:8888/search"
        assert dict(request.url.params) == {"q": "eiffel tower", "format": "json", "pageno": "1"}
        return httpx.Response(
            200,
            json=searx_payload(
                searx_result(
                    "Eiffel Tower", "https://en.wikipedia.org/wiki/Eiffel_Tower", "A tower.", 4.5
                ),
                searx_result(
                    "Tour",
                    "https://toureiffel.paris/",
                    "Site.",
                    2.0,
                    publishedDate="2021-03-03T00:00:00",
                ),
            ),
        )

    hits = SearxngSearch(client=mock(handler)).search("eiffel tower", k=5)
    assert [(h.title, h.score, h.published, h.source) for h in hits] == [
        ("Eiffel Tower", 4.5, None, "searxng"),
        ("Tour", 2.0, date(2021, 3, 3), "searxng"),
    ]


def test_searxng_enforces_filters_and_asks_a_second_page(keys: dict[str, str]) -> None:
    pages: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["q"] == "eiffel -site:reddit.com"
        pages.append(request.url.params["pageno"])
        if request.url.params["pageno"] == "1":
            return httpx.Response(
                200,
                json=searx_payload(
                    searx_result(
                        "Late",
                        "https://news.example/a",
                        "New.",
                        3.0,
                        publishedDate="2022-01-01T00:00:00",
                    ),
                    searx_result("Reddit", "https://old.reddit.com/r/x", "Excluded.", 2.5),
                    searx_result(
                        "Old", "https://old.example/a", "Early.", 2.0, publishedDate="2019-01-01"
                    ),
                ),
            )
        return httpx.Response(
            200,
            json=searx_payload(
                searx_result("Old", "https://old.example/a", "Duplicate.", 1.0),
                searx_result("Undated", "https://undated.example/", "No date.", 0.5),
            ),
        )

    hits = SearxngSearch(client=mock(handler), base_url="http://searx.local:8888").search(
        "eiffel", k=2, before=CUTOFF, exclude_domains=["reddit.com"]
    )
    assert titles(hits) == ["Old", "Undated"]
    assert pages == ["1", "2"]


def test_searxng_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARXNG_URL", raising=False)
    with pytest.raises(ConfigError, match="SEARXNG_URL"):
        SearxngSearch(client=mock(lambda r: httpx.Response(500)))
    with pytest.raises(ConfigError, match="http"):
        SearxngSearch(client=mock(lambda r: httpx.Response(500)), base_url="searx.local")
    source = SearxngSearch(
        client=mock(lambda r: httpx.Response(500)), base_url="https://me:pw@searx.example/"
    )
    assert source.to_dict() == {
        "type": "searxng",
        "name": "searxng",
        "base_url": "https://***@searx.example",
        "url_env": "SEARXNG_URL",
    }


def test_searxng_forbidden_explains_json_format(keys: dict[str, str]) -> None:
    forbidden = mock(lambda r: httpx.Response(403, text="<html>403 Forbidden</html>"))
    with pytest.raises(SourceUnavailableError, match=r"search\.formats"):
        SearxngSearch(client=forbidden).search("eiffel")


# --- DuckDuckGo (ddgs) -------------------------------------------------------------------


class FakeDdgs:
    """Stands in for the ddgs package's network: records calls, returns its documented shape."""

    def __init__(self, results: Sequence[Mapping[str, Any]]) -> None:
        self.results = results
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, max_results: int) -> Sequence[Mapping[str, Any]]:
        self.calls.append((query, max_results))
        return self.results[:max_results]


def test_ddgs_maps_results() -> None:
    fake = FakeDdgs(
        [
            {
                "title": "Eiffel Tower - Wikipedia",
                "href": "https://en.wikipedia.org/wiki/Eiffel_Tower",
                "body": "A tower.",
            },
            {
                "title": "Tour Eiffel",
                "href": "https://www.toureiffel.paris/en",
                "body": "Official site.",
            },
            {"title": "Broken", "href": "", "body": "No link."},
        ]
    )
    hits = DdgsSearch(search_fn=fake).search("eiffel tower", k=3)
    assert fake.calls == [("eiffel tower", 3)]
    assert [(h.title, h.url, h.text, h.score, h.source) for h in hits] == [
        (
            "Eiffel Tower - Wikipedia",
            "https://en.wikipedia.org/wiki/Eiffel_Tower",
            "A tower.",
            1.0,
            "ddgs",
        ),
        ("Tour Eiffel", "https://www.toureiffel.paris/en", "Official site.", 0.5, "ddgs"),
    ]


def test_ddgs_exclusions_in_query_and_enforced() -> None:
    fake = FakeDdgs(
        [
            {
                "title": "Snopes",
                "href": "https://www.snopes.com/fact-check/eiffel",
                "body": "Excluded.",
            },
            {"title": "A", "href": "https://a.example/", "body": "Kept."},
            {"title": "B", "href": "https://b.example/", "body": "Kept."},
        ]
    )
    hits = DdgsSearch(search_fn=fake).search(
        "eiffel", k=2, before=CUTOFF, exclude_domains=["snopes.com"]
    )
    assert fake.calls == [("eiffel -site:snopes.com", 7)]
    assert titles(hits) == ["A", "B"]


def test_ddgs_missing_package_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the package unimportable, installed or not.
    monkeypatch.setitem(sys.modules, "ddgs", None)
    with pytest.raises(ConfigError, match=r"pip install 'verity\[web\]'"):
        DdgsSearch()


def test_ddgs_blank_query_is_bad_input() -> None:
    with pytest.raises(BadInputError):
        DdgsSearch(search_fn=FakeDdgs([])).search("   ")


# --- all providers -----------------------------------------------------------------------


def test_providers_implement_source_and_never_expose_keys(keys: dict[str, str]) -> None:
    client = mock(lambda r: httpx.Response(500))
    sources: list[Source] = [
        BraveSearch(client=client),
        SerperSearch(client=client),
        TavilySearch(client=client),
        SearxngSearch(client=client),
        DdgsSearch(search_fn=FakeDdgs([])),
    ]
    assert sorted(PROVIDERS) == ["brave", "ddgs", "searxng", "serper", "tavily"]
    for source in sources:
        assert isinstance(source, Source)
        config = source.to_dict()
        assert PROVIDERS[config["type"]] is type(source)
        assert config["name"] == config["type"]
        dumped = json.dumps(config)
        for secret in keys.values():
            assert secret not in dumped


# --- live --------------------------------------------------------------------------------


def live_check(hits: list[Evidence], before: date | None = None) -> None:
    assert hits
    for hit in hits:
        assert hit.url and hit.url.startswith("http")
        assert "wikipedia.org" not in hit.url
        if before is not None and hit.published is not None:
            assert hit.published < before


LIVE_QUERY = "Eiffel Tower height"
LIVE_BEFORE = date.today() - timedelta(days=365 * 3)


@pytest.mark.live
def test_live_brave(live_key: Callable[[str], str]) -> None:
    live_key("BRAVE_API_KEY")
    with make_http_client(cache=False) as client:
        hits = BraveSearch(client=client).search(
            LIVE_QUERY, k=3, before=LIVE_BEFORE, exclude_domains=["wikipedia.org"]
        )
    live_check(hits, LIVE_BEFORE)


@pytest.mark.live
def test_live_serper(live_key: Callable[[str], str]) -> None:
    live_key("SERPER_API_KEY")
    with make_http_client(cache=False) as client:
        hits = SerperSearch(client=client).search(
            LIVE_QUERY, k=3, before=LIVE_BEFORE, exclude_domains=["wikipedia.org"]
        )
    live_check(hits, LIVE_BEFORE)


@pytest.mark.live
def test_live_tavily(live_key: Callable[[str], str]) -> None:
    live_key("TAVILY_API_KEY")
    with make_http_client(cache=False) as client:
        hits = TavilySearch(client=client).search(
            LIVE_QUERY, k=3, before=LIVE_BEFORE, exclude_domains=["wikipedia.org"]
        )
    live_check(hits, LIVE_BEFORE)


@pytest.mark.live
def test_live_searxng(live_key: Callable[[str], str]) -> None:
    live_key("SEARXNG_URL")
    with make_http_client(cache=False) as client:
        hits = SearxngSearch(client=client).search(
            LIVE_QUERY, k=3, exclude_domains=["wikipedia.org"]
        )
    live_check(hits)


@pytest.mark.live
def test_live_ddgs() -> None:
    pytest.importorskip("ddgs")
    hits = DdgsSearch().search(LIVE_QUERY, k=3, exclude_domains=["wikipedia.org"])
    live_check(hits)
