"""ArxivSource against Atom feeds in the shape of the arXiv API User's Manual."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

import httpx
import pytest

from shapes.arxiv import arxiv_entry, arxiv_error_feed, arxiv_feed
from verity.errors import BadInputError, SourceUnavailableError
from verity.http import make_http_client
from verity.http.pacing import RateLimiter
from verity.sources.arxiv import MAX_FEED_BYTES, ArxivSource, search_query
from verity.sources.base import Source

CUTOFF = date(2020, 1, 1)
ATOM = {"content-type": "application/atom+xml; charset=utf-8"}
Handler = Callable[[httpx.Request], httpx.Response]


def source(handler: Handler) -> ArxivSource:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    return ArxivSource(client=client, limiter=RateLimiter(0))


def feed_answer(body: bytes, status: int = 200) -> Handler:
    return lambda request: httpx.Response(status, content=body, headers=ATOM)


def test_sends_a_relevance_query_and_reads_entries() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            headers=ATOM,
            content=arxiv_feed(
                arxiv_entry(
                    "2101.00001v2",
                    "Airborne   transmission\n  of SARS-CoV-2",
                    "  We study aerosols &amp; droplets.\n Results follow.",
                    published="2021-01-01T18:00:00Z",
                    updated="2021-03-04T10:00:00Z",
                    authors=("Ada Lovelace", "Alan Turing", "Grace Hopper"),
                    category="physics.flu-dyn",
                    doi="10.1000/xyz123",
                    journal_ref="J. Aerosol Sci. 12 (2021) 1-9",
                ),
                arxiv_entry("hep-ex/0307015v1", "Multi-electron production", "At HERA."),
            ),
        )

    hits = source(handler).search("  Is SARS-CoV-2 airborne?  ", k=2)

    assert len(seen) == 1
    request = seen[0]
    assert request.method == "GET"
    assert request.url.copy_with(query=None) == "https://export.arxiv.org/api/query"
    assert dict(request.url.params) == {
        "search_query": "all:sars OR all:cov OR all:2 OR all:airborne",
        "start": "0",
        "max_results": "2",
        "sortBy": "relevance",
        "sortOrder": "descending",
    }
    assert "application/atom+xml" in request.headers["Accept"]
    first, second = hits
    assert first.title == "Airborne transmission of SARS-CoV-2"
    assert first.text == "We study aerosols & droplets. Results follow."
    assert (first.url, first.id, first.source) == (
        "https://arxiv.org/abs/2101.00001v2",
        "2101.00001v2",
        "arxiv",
    )
    assert (first.published, first.score) == (date(2021, 1, 1), 1.0)
    assert first.metadata == {
        "authors": "Ada Lovelace; Alan Turing; Grace Hopper",
        "author_count": 3,
        "primary_category": "physics.flu-dyn",
        "updated": "2021-03-04",
        "doi": "10.1000/xyz123",
        "journal_ref": "J. Aerosol Sci. 12 (2021) 1-9",
    }
    assert (second.url, second.score) == ("https://arxiv.org/abs/hep-ex/0307015v1", 0.5)
    assert "doi" not in second.metadata


def test_cutoff_goes_into_the_query_and_is_enforced_on_published() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["search_query"] == (
            "(all:vaccine OR all:myocarditis) AND submittedDate:[199101010000 TO 201912312359]"
        )
        assert request.url.params["max_results"] == "7"  # k plus a margin for the filter
        # The API ignores the range here; the source must not.
        return httpx.Response(
            200,
            headers=ATOM,
            content=arxiv_feed(
                arxiv_entry("2003.00001v1", "Late", "After.", published="2020-03-01T00:00:00Z"),
                arxiv_entry("2001.00001v1", "On the day", "Day.", published="2020-01-01T09:00:00Z"),
                arxiv_entry("1912.00001v1", "Early", "Before.", published="2019-12-31T23:00:00Z"),
                arxiv_entry("1801.00001v1", "Earlier", "Before.", published="2018-01-05T00:00:00Z"),
                arxiv_entry(
                    "1701.00001v1", "Earliest", "Before.", published="2017-01-05T00:00:00Z"
                ),
            ),
        )

    hits = source(handler).search("the vaccine and myocarditis", k=2, before=CUTOFF)
    assert [h.title for h in hits] == ["Early", "Earlier"]
    assert [h.score for h in hits] == [1 / 3, 1 / 4]  # ranks in arXiv's own order


def test_excluding_arxiv_asks_nothing_and_other_exclusions_keep_papers() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    assert source(refuse).search("graphene", exclude_domains=["arxiv.org"]) == []
    assert source(refuse).search("graphene", exclude_domains=["www.ArXiv.org"]) == []

    body = arxiv_feed(arxiv_entry("2101.00002v1", "Graphene", "Sheets."))
    hits = source(feed_answer(body)).search("graphene", exclude_domains=["politifact.com"])
    assert [h.title for h in hits] == ["Graphene"]


def test_at_most_k_and_max_results_capped() -> None:
    asked: list[str] = []
    entries = [arxiv_entry(f"2101.{i:05d}v1", f"Paper {i}", "Text.") for i in range(6)]

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.params["max_results"])
        return httpx.Response(200, headers=ATOM, content=arxiv_feed(*entries))

    assert len(source(handler).search("paper", k=3)) == 3
    source(handler).search("paper", k=500, before=CUTOFF)
    assert asked == ["3", "50"]


def test_hostile_text_is_cleaned_and_capped() -> None:
    body = arxiv_feed(
        arxiv_entry(
            "2101.00003v1",
            "<script>alert(1)</script>Nice <b>title</b> " + "long " * 200,
            "<img src=x onerror=alert(1)>Abstract " + "word " * 3000,
            authors=tuple(f"Author Number {i}" for i in range(300)),
        ),
        arxiv_entry("../../etc/passwd", "Bad id", "Skipped."),
        arxiv_entry("2101.00004v1", "", ""),
    )
    (hit,) = source(feed_answer(body)).search("anything", k=5)
    assert "<" not in hit.title and "<" not in hit.text
    assert hit.title.startswith("alert(1)Nice title long")
    assert len(hit.title) <= 300 and hit.title.endswith("…")
    assert len(hit.text) <= 4000
    assert len(str(hit.metadata["authors"])) <= 200
    assert hit.metadata["author_count"] == 300


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            feed_answer(arxiv_error_feed("incorrect id format for 1234.12345"), status=400),
            r"HTTP 400: incorrect id format for 1234\.12345",
        ),
        (
            feed_answer(arxiv_error_feed("malformed query"), status=200),
            "refused the query: malformed query",
        ),
        (lambda r: httpx.Response(503, text="down"), "HTTP 503"),
        (lambda r: httpx.Response(403, text="<html>blocked</html>"), "HTTP 403"),
        (feed_answer(b"<feed><entry>"), "malformed XML"),
        (feed_answer(b'{"not": "xml"}'), "malformed XML"),
        (feed_answer(b"<rss><channel/></rss>"), "not answer with an Atom feed"),
        (
            feed_answer(
                b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa">'
                b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
                b'<feed xmlns="http://www.w3.org/2005/Atom"><title>&b;</title></feed>'
            ),
            "document type or entity declaration",
        ),
        (
            feed_answer(
                b'<?xml version="1.0"?><!DOCTYPE feed SYSTEM "file:///etc/passwd">'
                b'<feed xmlns="http://www.w3.org/2005/Atom"/>'
            ),
            "document type or entity declaration",
        ),
        (feed_answer(b" " * (MAX_FEED_BYTES + 1)), "over the"),
    ],
)
def test_failures_are_source_unavailable(answer: Handler, message: str) -> None:
    with pytest.raises(SourceUnavailableError, match=message):
        source(answer).search("electron")


def test_network_failure_is_source_unavailable() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(SourceUnavailableError, match="could not be reached"):
        source(down).search("electron")


def test_search_query_keeps_words_only() -> None:
    assert search_query('ti:"deep" AND (cat:cs.LG) OR au:x [2020 TO *]', None) == (
        "all:ti OR all:deep OR all:cat OR all:cs OR all:lg OR all:au OR all:x OR all:2020"
    )
    assert search_query("Él était là", date(2000, 3, 1)) == (
        "(all:él OR all:était OR all:là) AND submittedDate:[199101010000 TO 200002292359]"
    )
    many = " ".join(f"w{i}" for i in range(40))
    assert search_query(many, None).count("all:") == 24
    with pytest.raises(BadInputError, match="no words"):
        search_query("?! -- ()", None)
    with pytest.raises(BadInputError):
        source(feed_answer(arxiv_feed())).search("   ")
    with pytest.raises(BadInputError):
        source(feed_answer(arxiv_feed())).search("electron", k=0)


def test_requests_are_spaced_three_seconds_and_cache_hits_give_their_turn_back(
    tmp_path: Path,
) -> None:
    now = [100.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(3.0, clock=lambda: now[0], sleep=sleep)
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.params["search_query"])
        return httpx.Response(
            200, headers=ATOM, content=arxiv_feed(arxiv_entry("2101.00005v1", "T", "A."))
        )

    with make_http_client(
        transport=httpx.MockTransport(handler), cache_path=tmp_path / "c.sqlite"
    ) as client:
        arxiv = ArxivSource(client=client, limiter=limiter)
        arxiv.search("first")
        arxiv.search("second")  # on the network: waits for its turn
        now[0] += 1.0
        arxiv.search("second")  # from the cache: no wait, and no turn used
        arxiv.search("third")
    assert calls == ["all:first", "all:second", "all:third"]
    assert sleeps == [3.0, 2.0]


def test_is_a_source_and_describes_itself() -> None:
    arxiv = ArxivSource(limiter=RateLimiter(0), name="papers")
    assert isinstance(arxiv, Source)
    assert arxiv.to_dict() == {"type": "arxiv", "name": "papers", "min_interval": 0}
    assert ArxivSource().to_dict()["min_interval"] == 3.0


@pytest.mark.live
def test_live_arxiv() -> None:
    with make_http_client(cache=False) as client:
        hits = ArxivSource(client=client).search(
            "attention transformer translation", k=3, before=date(2018, 1, 1)
        )
    assert hits
    for hit in hits:
        assert hit.url and hit.url.startswith("https://arxiv.org/abs/")
        assert hit.published is not None and hit.published < date(2018, 1, 1)
        assert hit.metadata["authors"]
