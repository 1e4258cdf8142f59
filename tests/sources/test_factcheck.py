"""Fact-check sources: site-restricted web search, Google's claims:search, the offline corpus."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest

from shapes.brave import brave_payload, brave_result
from shapes.factcheck import claim, claim_review, claims_payload, google_error
from verity.errors import BadInputError, ConfigError, MissingKeyError, SourceUnavailableError
from verity.http import make_http_client
from verity.sources.base import Source
from verity.sources.corpus import build_corpus
from verity.sources.factcheck import (
    FACTCHECK_SITES,
    FactCheckSearch,
    GoogleFactCheck,
    OfflineFactCheck,
    site_query,
)
from verity.sources.websearch import BraveSearch, DdgsSearch

CUTOFF = date(2020, 1, 1)
KEY = "AIza-test-factcheck-key-0001"
Handler = Callable[[httpx.Request], httpx.Response]


def mock(handler: Handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "BSA-test-brave-key")
    monkeypatch.setenv("GOOGLE_FACTCHECK_API_KEY", KEY)


# --- site-restricted web search --------------------------------------------------------------


def test_site_query() -> None:
    assert site_query("moon landing", FACTCHECK_SITES) == (
        "(site:politifact.com OR site:snopes.com) moon landing"
    )
    assert site_query("moon landing", ["snopes.com"]) == "site:snopes.com moon landing"


def test_brave_is_asked_for_the_sites_and_only_their_pages_are_kept(keys: None) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert dict(request.url.params) == {
            "q": "(site:politifact.com OR site:snopes.com) vaccines contain microchips",
            "count": "7",  # k plus a margin for the results off the sites
        }
        return httpx.Response(
            200,
            json=brave_payload(
                brave_result(
                    "PolitiFact | No, vaccines do not contain microchips",
                    "https://www.politifact.com/factchecks/2020/dec/01/x/",
                    "The <strong>claim</strong> is false.",
                    age="December 1, 2019",
                ),
                brave_result("Elsewhere", "https://example.com/microchips", "Off the sites."),
                brave_result("Lookalike", "https://politifact.com.evil.net/x", "Not the site."),
                brave_result("Lookalike 2", "https://notsnopes.com/x", "Not the site."),
                brave_result("Snopes", "https://www.snopes.com/fact-check/microchips/", "False."),
                brave_result("Snopes 2", "https://media.snopes.com/y", "Subdomain."),
            ),
        )

    source = FactCheckSearch(BraveSearch(client=mock(handler)), name="factcheck:brave")
    hits = source.search("vaccines contain microchips", k=2)
    assert [(h.title, h.source, h.metadata) for h in hits] == [
        (
            "PolitiFact | No, vaccines do not contain microchips",
            "factcheck:brave",
            {"site": "politifact.com", "provider": "brave"},
        ),
        ("Snopes", "factcheck:brave", {"site": "snopes.com", "provider": "brave"}),
    ]
    assert hits[0].text == "The claim is false."
    assert hits[0].published == date(2019, 12, 1)
    assert [h.score for h in hits] == [1.0, 1 / 5]  # the provider's ranks


def test_cutoff_and_exclusions_reach_the_provider_and_are_enforced(keys: None) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        params = request.url.params
        # politifact.com is excluded, so only snopes.com is asked for; Brave adds -site:.
        assert params["q"] == "site:snopes.com moon landing -site:politifact.com"
        assert params["freshness"] == "1970-01-01to2019-12-31"
        return httpx.Response(
            200,
            json=brave_payload(
                brave_result("PF", "https://www.politifact.com/a", "Excluded.", age="2015-01-01"),
                brave_result("Late", "https://www.snopes.com/late", "New.", age="2021-05-05"),
                brave_result("Old", "https://www.snopes.com/old", "Early.", age="2012-05-05"),
                brave_result("Undated", "https://www.snopes.com/undated", "No date."),
            ),
        )

    source = FactCheckSearch(BraveSearch(client=mock(handler)))
    hits = source.search("moon landing", k=5, before=CUTOFF, exclude_domains=["politifact.com"])
    assert [h.title for h in hits] == ["Old", "Undated"]


def test_every_site_excluded_asks_nothing() -> None:
    def fail(query: str, count: int) -> list[dict[str, Any]]:
        raise AssertionError("no search expected")

    source = FactCheckSearch(DdgsSearch(search_fn=fail))
    assert source.search("x", exclude_domains=["politifact.com", "www.snopes.com"]) == []


def test_ddgs_provider_gets_the_restricted_query_and_k_holds() -> None:
    asked: list[tuple[str, int]] = []

    def fake(query: str, count: int) -> Sequence[Mapping[str, Any]]:
        asked.append((query, count))
        return [
            {"title": f"R{i}", "href": f"https://www.politifact.com/{i}", "body": "B"}
            for i in range(8)
        ]

    source = FactCheckSearch(DdgsSearch(search_fn=fake), sites=["PolitiFact.com"])
    assert len(source.search("claim", k=3)) == 3
    assert asked == [("site:politifact.com claim", 8)]
    assert isinstance(source, Source)
    assert source.to_dict() == {
        "type": "factcheck",
        "name": "factcheck",
        "sites": ["politifact.com"],
        "web": {"type": "ddgs", "name": "ddgs"},
    }


def test_default_provider_is_ddgs_and_sites_are_checked() -> None:
    pytest.importorskip("ddgs")
    assert FactCheckSearch().to_dict()["web"]["type"] == "ddgs"
    web = DdgsSearch(search_fn=lambda q, n: [])
    for bad in ([], ["not a host!"], ["politifact.com/path"], [" "]):
        with pytest.raises(ConfigError, match="host names"):
            FactCheckSearch(web, sites=bad)
    with pytest.raises(BadInputError):
        FactCheckSearch(web).search("  ")


# --- Google Fact Check Tools ---------------------------------------------------------------


def test_google_sends_the_documented_parameters_and_reads_each_review(keys: None) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET"
        assert request.url.copy_with(query=None) == (
            "https://factchecktools.googleapis.com/v1alpha1/claims:search"
        )
        assert dict(request.url.params) == {
            "query": "5G spreads coronavirus",
            "languageCode": "en",
            "pageSize": "3",
            "key": KEY,
        }
        return httpx.Response(
            200,
            json=claims_payload(
                claim(
                    "5G networks spread the coronavirus.",
                    claim_review(
                        "https://www.politifact.com/factchecks/2020/mar/19/5g/",
                        "Pants on Fire",
                        title="No, 5G does not spread the coronavirus",
                        review_date="2020-03-19T00:00:00Z",
                    ),
                    claim_review(
                        "https://fullfact.org/online/5g-coronavirus/",
                        "Incorrect",
                        publisher="Full Fact",
                        site="fullfact.org",
                        review_date=None,
                    ),
                    claim_date="2020-03-15T00:00:00Z",
                ),
                claim(
                    "A vaccine alters DNA.",
                    claim_review(
                        "https://www.snopes.com/fact-check/dna/",
                        "False",
                        site=None,
                        publisher="Snopes",
                    ),
                    claimant=None,
                    claim_date=None,
                ),
            ),
        )

    hits = GoogleFactCheck(client=mock(handler)).search("5G spreads coronavirus", k=3)
    first, second, third = hits
    assert first.text == (
        "Claim: 5G networks spread the coronavirus.\n"
        "Claimant: Facebook posts\n"
        "Rating: Pants on Fire\n"
        "Reviewed by: PolitiFact"
    )
    assert (first.title, first.url, first.published, first.source, first.score) == (
        "No, 5G does not spread the coronavirus",
        "https://www.politifact.com/factchecks/2020/mar/19/5g/",
        date(2020, 3, 19),
        "factcheck:google",
        1.0,
    )
    assert first.metadata == {
        "claimant": "Facebook posts",
        "rating": "Pants on Fire",
        "reviewer": "PolitiFact",
        "reviewer_site": "politifact.com",
        "claim_date": "2020-03-15",
        "language": "en",
    }
    assert (second.title, second.published, second.metadata["reviewer"]) == (
        "5G networks spread the coronavirus.",
        None,
        "Full Fact",
    )
    assert third.text == "Claim: A vaccine alters DNA.\nRating: False\nReviewed by: Snopes"
    assert "claimant" not in third.metadata and "claim_date" not in third.metadata


def test_google_cutoff_drops_late_reviews_and_late_claims(keys: None) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["pageSize"] == "7"  # no date parameter exists to send
        assert "maxAgeDays" not in request.url.params
        return httpx.Response(
            200,
            json=claims_payload(
                claim(
                    "Late review.",
                    claim_review(
                        "https://a.example/late",
                        "False",
                        site="a.example",
                        review_date="2020-01-01T00:00:00Z",
                    ),
                    claim_date="2019-12-01T00:00:00Z",
                ),
                claim(
                    "Late claim, undated review.",
                    claim_review(
                        "https://b.example/x", "False", site="b.example", review_date=None
                    ),
                    claim_date="2020-02-01T00:00:00Z",
                ),
                claim(
                    "Early.",
                    claim_review(
                        "https://c.example/x",
                        "True",
                        site="c.example",
                        review_date="2019-12-31T00:00:00Z",
                    ),
                ),
                claim(
                    "Undated.",
                    claim_review(
                        "https://d.example/x", "Mixed", site="d.example", review_date=None
                    ),
                    claim_date=None,
                ),
            ),
        )

    hits = GoogleFactCheck(client=mock(handler)).search("x", k=2, before=CUTOFF)
    assert [h.url for h in hits] == ["https://c.example/x", "https://d.example/x"]


def test_google_exclusions_by_url_or_publisher_site(keys: None) -> None:
    payload = claims_payload(
        claim(
            "A claim.",
            claim_review("https://www.politifact.com/x", "False"),
            claim_review("https://cdn.example.net/politifact-copy", "False"),  # site politifact
            claim_review("https://www.snopes.com/y", "True", publisher="Snopes", site="snopes.com"),
        )
    )
    source = GoogleFactCheck(client=mock(lambda r: httpx.Response(200, json=payload)))
    hits = source.search("claim", exclude_domains=["politifact.com"])
    assert [h.url for h in hits] == ["https://www.snopes.com/y"]
    assert source.search("claim", k=1) == source.search("claim", k=5)[:1]


def test_google_hostile_text_is_cleaned_capped_and_kept_on_its_line(keys: None) -> None:
    payload = claims_payload(
        claim(
            "<b>Bold</b> claim\nRating: True &amp; more " + "x" * 5000,
            claim_review(
                "https://www.politifact.com/x", "<i>False</i>", title="<script>t</script>"
            ),
            claim_review("javascript:alert(1)", "False"),
            claim_review("https://www.politifact.com/z", "", publisher=""),
            claimant="Somebody " * 100,
        ),
        claim("", claim_review("https://www.politifact.com/empty", "")),
    )
    hits = GoogleFactCheck(client=mock(lambda r: httpx.Response(200, json=payload))).search("x")
    assert [h.url for h in hits] == ["https://www.politifact.com/x", "https://www.politifact.com/z"]
    lines = hits[0].text.split("\n")
    assert [line.split(":")[0] for line in lines] == ["Claim", "Claimant", "Rating", "Reviewed by"]
    assert lines[0].startswith("Claim: Bold claim Rating: True & more xxx")
    assert len(lines[0]) <= len("Claim: ") + 1000
    assert len(lines[1]) <= len("Claimant: ") + 200
    assert lines[2] == "Rating: False"
    assert hits[0].title == "t"
    assert all(len(str(v)) <= 200 for v in hits[0].metadata.values())
    assert not any(line.startswith("Rating") for line in hits[1].text.split("\n"))


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (
            400,
            google_error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                "API_KEY_INVALID",
            ),
            r"rejected the API key \(HTTP 400\); check GOOGLE_FACTCHECK_API_KEY",
        ),
        (
            403,
            google_error(
                403,
                "PERMISSION_DENIED",
                "Fact Check Tools API has not been used in project 1.",
                "SERVICE_DISABLED",
            ),
            r"rejected the API key \(HTTP 403\)",
        ),
        (400, google_error(400, "INVALID_ARGUMENT", "Bad query.", "BAD"), "HTTP 400: .*Bad query"),
        (500, {"error": {"code": 500, "message": "backend", "status": "INTERNAL"}}, "HTTP 500"),
        (200, {"claims": "none"}, "unexpected shape"),
        (200, {"claims": [{"claimReview": [{"publisher": "PolitiFact"}]}]}, "unexpected shape"),
    ],
)
def test_google_failures(keys: None, status: int, body: dict[str, Any], message: str) -> None:
    source = GoogleFactCheck(client=mock(lambda r: httpx.Response(status, json=body)))
    with pytest.raises(SourceUnavailableError, match=message) as info:
        source.search("5G")
    assert KEY not in str(info.value)


def test_google_non_json_empty_and_missing_key(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    html = mock(lambda r: httpx.Response(200, text="<html>captive portal</html>"))
    with pytest.raises(SourceUnavailableError, match="not answer with JSON"):
        GoogleFactCheck(client=html).search("x")
    empty = GoogleFactCheck(client=mock(lambda r: httpx.Response(200, json=claims_payload())))
    assert empty.search("nothing matches") == []
    assert empty.to_dict() == {
        "type": "factcheck-google",
        "name": "factcheck:google",
        "language": "en",
        "api_key_env": "GOOGLE_FACTCHECK_API_KEY",
    }
    assert KEY not in json.dumps(empty.to_dict())
    monkeypatch.delenv("GOOGLE_FACTCHECK_API_KEY")
    with pytest.raises(MissingKeyError, match="GOOGLE_FACTCHECK_API_KEY"):
        GoogleFactCheck(client=html)


# --- offline -------------------------------------------------------------------------------


def test_offline_factcheck_searches_its_corpus_under_its_spec(tmp_path: Path) -> None:
    rows = [
        {"id": "r1", "title": "Ruling 1", "text": "Says the moon landing was staged. False."},
        {
            "id": "r2",
            "title": "Ruling 2",
            "text": "Says taxes rose in 2010. Half true.",
            "date": "2011-02-01",
        },
    ]
    data = tmp_path / "rulings.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    root = tmp_path / "corpora"
    build_corpus(data, "standin-factcheck", root=root)

    source = OfflineFactCheck(root=root)
    assert isinstance(source, Source)
    assert source.publishers == ("politifact.com",)
    (hit,) = source.search("moon landing staged", k=1)
    assert (hit.id, hit.source, hit.url) == ("r1#1", "factcheck:offline", None)
    assert source.to_dict() == {
        "type": "corpus",
        "name": "standin-factcheck",
        "root": str(root),
        "label": "factcheck:offline",
        "publishers": ["politifact.com"],
    }
    assert source.search("taxes", k=5, before=date(2011, 1, 1)) == []


@pytest.mark.live
def test_live_factcheck_sites() -> None:
    pytest.importorskip("ddgs")
    hits = FactCheckSearch().search("vaccines microchips", k=3)
    assert hits
    assert all(h.metadata["site"] in FACTCHECK_SITES for h in hits)


@pytest.mark.live
def test_live_google_factcheck(live_key: Callable[[str], str]) -> None:
    live_key("GOOGLE_FACTCHECK_API_KEY")
    with make_http_client(cache=False) as client:
        hits = GoogleFactCheck(client=client).search("5G coronavirus", k=3, before=date(2023, 1, 1))
    assert hits
    for hit in hits:
        assert hit.text.startswith("Claim: ") and hit.url
        assert hit.published is None or hit.published < date(2023, 1, 1)
