"""Brave's `q` stays within the documented 400 characters and 50 words.

The limits are written out here by hand, not imported, so that a wrong constant in the
source makes these tests fail.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from shapes.brave import brave_payload, brave_result
from verity.domain import Evidence
from verity.sources.websearch import BraveSearch
from verity.sources.websearch.common import fit_query

# The 30 domains a caller such as ZoFia excludes; each operator " -site:factcheckNN.example.org"
# takes 30 characters with its leading space.
THIRTY = [f"factcheck{i:02d}.example.org" for i in range(30)]


@pytest.fixture(autouse=True)
def brave_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "BSA-test-brave-key-0001")


def search_and_capture(
    query: str, exclude_domains: list[str], *results: dict[str, Any], k: int = 5
) -> tuple[str, list[Evidence]]:
    """Run a Brave search over a mock transport; the `q` it sent and what it kept."""
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.params["q"])
        return httpx.Response(200, json=brave_payload(*results))

    client = httpx.Client(transport=httpx.MockTransport(handler))
    hits = BraveSearch(client=client).search(query, k=k, exclude_domains=exclude_domains)
    assert len(sent) == 1
    return sent[0], hits


def test_thirty_exclusions_fill_the_query_in_order_up_to_400_characters() -> None:
    # 37 characters and 5 words; 37 + 12 * 30 = 397 <= 400, a 13th operator would make 427.
    query = '"Eiffel Tower" "Gustave Eiffel" built'
    q, _ = search_and_capture(query, THIRTY)
    assert len(q) == 397
    assert len(q.split()) == 17
    assert q == query + "".join(f" -site:{d}" for d in THIRTY[:12])


def test_thirty_exclusions_stop_at_50_words() -> None:
    # 30 one-letter words (59 characters); each " -site:siteNN.eu" adds 1 word and 16
    # characters. 20 operators make 50 words and 379 characters: the 21st would still fit
    # in 400 characters (395) but not in 50 words.
    query = " ".join("abcdefghijklmnopqrstuvwxyzabcd")
    domains = [f"site{i:02d}.eu" for i in range(30)]
    q, _ = search_and_capture(query, domains)
    assert len(q.split()) == 50
    assert len(q) == 379
    assert q == query + "".join(f" -site:{d}" for d in domains[:20])


def test_results_from_excluded_domains_left_out_of_the_query_are_still_dropped() -> None:
    q, hits = search_and_capture(
        '"Eiffel Tower" "Gustave Eiffel" built',
        THIRTY,
        brave_result("Sent", "https://factcheck00.example.org/a"),
        brave_result("Kept 1", "https://museum.example.com/eiffel"),
        brave_result("Not sent", "https://www.factcheck29.example.org/b"),
        brave_result("Not sent, subdomain", "https://news.factcheck13.example.org/c"),
        brave_result("Kept 2", "https://history.example.net/tower"),
    )
    assert "-site:factcheck00.example.org" in q
    assert "factcheck13" not in q
    assert "factcheck29" not in q
    assert [h.title for h in hits] == ["Kept 1", "Kept 2"]


def test_an_over_long_query_is_cut_before_a_quoted_phrase_that_does_not_fit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Twelve phrases of three 10-character words: 34 characters each, 419 in all. Eleven
    # take 11 * 34 + 10 = 384 characters; the twelfth's first word would still fit
    # (396) but the phrase would be broken, so the whole phrase goes.
    phrases = [f'"{i:02d}abcdefgh {i:02d}ijklmnop {i:02d}qrstuvwx"' for i in range(12)]
    query = " ".join(phrases)
    assert len(query) == 419
    kept = " ".join(phrases[:11])
    with caplog.at_level(logging.INFO, logger="verity.sources.websearch.common"):
        # One operator still fits after the cut (384 + 12 = 396); a second would make 408.
        q, _ = search_and_capture(query, ["x.com", "y.com"])
    assert q == kept + " -site:x.com"
    assert len(q) == 396
    assert q.count('"') == 22
    assert "11abcdefgh" not in q
    cut = [r for r in caplog.records if r.levelno == logging.INFO and "cut" in r.getMessage()]
    assert len(cut) == 1
    # The log gives lengths, not the query.
    assert "abcdefgh" not in cut[0].getMessage()
    assert "419" in cut[0].getMessage()


def test_a_query_over_50_words_is_cut_before_a_broken_phrase_and_a_dangling_or() -> None:
    # Thirteen three-word phrases joined by OR: 13 * 3 + 12 = 51 words. The 50th word is
    # inside the thirteenth phrase, which goes, and so does the OR before it: 47 words.
    phrases = [f'"{c}1 {c}2 {c}3"' for c in "abcdefghijklm"]
    query = " OR ".join(phrases)
    assert len(query.split()) == 51
    q, _ = search_and_capture(query, [])
    assert q == " OR ".join(phrases[:12])
    assert len(q.split()) == 47


def test_fit_query_keeps_a_query_that_fits_and_reports_the_domains_sent() -> None:
    fitted = fit_query(
        "eiffel  tower",
        ["www.Snopes.com", " ", "x.com", "snopes.com", "y.com"],
        max_chars=40,
        max_words=10,
    )
    # "eiffel  tower" (13) + " -site:snopes.com" (17) + " -site:x.com" (12) = 42 > 40.
    assert fitted.text == "eiffel  tower -site:snopes.com"
    assert fitted.domains == ("snopes.com",)
    text, domains = fit_query("eiffel tower", [], max_chars=400, max_words=50)
    assert (text, domains) == ("eiffel tower", ())


def test_fit_query_unquotes_a_first_phrase_that_cannot_fit_whole() -> None:
    # A single 60-word phrase: dropping it would leave nothing to search for, so its
    # first 50 words are sent without the quotes.
    words = [f"w{i:02d}" for i in range(60)]
    fitted = fit_query('"' + " ".join(words) + '"', ["x.com"], max_chars=400, max_words=50)
    assert fitted.text == " ".join(words[:50])
    assert fitted.domains == ()
    # One word longer than the character limit is cut inside.
    assert fit_query("a" * 12, [], max_chars=10, max_words=50).text == "a" * 10
