"""WikipediaSource against payloads in the MediaWiki Action API and REST summary shapes."""

from __future__ import annotations

from datetime import date
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from verity.errors import BadInputError, ConfigError, SourceUnavailableError
from verity.http import make_http_client
from verity.sources.base import PageSource, Source
from verity.sources.wikipedia import WikipediaSource, first_sentences

EIFFEL_EXTRACT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It is named after the engineer Gustave Eiffel, whose company designed and built the "
    'tower from 1887 to 1889. Locally nicknamed "La dame de fer", it was constructed as '
    "the centrepiece of the 1889 World's Fair. Although initially criticised by some of "
    "France's leading artists, it has since become a global cultural icon of France."
)


def summary(title: str, extract: str, *, kind: str = "standard", pageid: int = 1) -> dict[str, Any]:
    """A REST page summary as https://{lang}.wikipedia.org/api/rest_v1/page/summary/ sends it."""
    slug = title.replace(" ", "_")
    return {
        "type": kind,
        "title": title,
        "displaytitle": f'<span class="mw-page-title-main">{title}</span>',
        "namespace": {"id": 0, "text": ""},
        "wikibase_item": "Q243",
        "titles": {"canonical": slug, "normalized": title, "display": title},
        "pageid": pageid,
        "thumbnail": {"source": "https://upload.wikimedia.org/x.jpg", "width": 240, "height": 320},
        "lang": "en",
        "dir": "ltr",
        "revision": "1223456789",
        "tid": "8f1c3e40-0b7a-11ef-9a2b-6b6f2c3d4e5f",
        "timestamp": "2024-05-03T17:42:11Z",
        "description": "Tower in Paris, France",
        "description_source": "local",
        "content_urls": {
            "desktop": {
                "page": f"https://en.wikipedia.org/wiki/{slug}",
                "revisions": f"https://en.wikipedia.org/wiki/{slug}?action=history",
                "edit": f"https://en.wikipedia.org/wiki/{slug}?action=edit",
                "talk": f"https://en.wikipedia.org/wiki/Talk:{slug}",
            },
            "mobile": {"page": f"https://en.m.wikipedia.org/wiki/{slug}"},
        },
        "extract": extract,
        "extract_html": f"<p>{extract}</p>",
    }


def search_payload(*titles: str) -> dict[str, Any]:
    """An Action API list=search answer (formatversion=2)."""
    return {
        "batchcomplete": True,
        "continue": {"sroffset": len(titles), "continue": "-||"},
        "query": {
            "searchinfo": {"totalhits": 2310},
            "search": [
                {
                    "ns": 0,
                    "title": title,
                    "pageid": 100 + i,
                    "size": 95000,
                    "wordcount": 9000,
                    "snippet": f'The <span class="searchmatch">{title}</span> is',
                    "timestamp": "2024-05-01T12:00:00Z",
                }
                for i, title in enumerate(titles)
            ],
        },
    }


class Wiki:
    """A fake Wikipedia server: search hits and summaries by title; remembers requests."""

    def __init__(self, hits: list[str], pages: dict[str, dict[str, Any]]) -> None:
        self.hits, self.pages = hits, pages
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert request.method == "GET"
        assert request.url.host == "en.wikipedia.org"
        assert request.headers["accept"] == "application/json"
        if request.url.path == "/w/api.php":
            return httpx.Response(200, json=search_payload(*self.hits))
        prefix = "/api/rest_v1/page/summary/"
        assert request.url.path.startswith(prefix)
        title = unquote(request.url.raw_path.decode()[len(prefix) :]).replace("_", " ")
        if title in self.pages:
            return httpx.Response(200, json=self.pages[title])
        return httpx.Response(
            404,
            json={
                "type": "https://mediawiki.org/wiki/HyperSwitch/errors/not_found",
                "title": "Not found.",
                "method": "get",
                "detail": "Page or revision not found.",
                "uri": request.url.path,
            },
        )


def source_for(handler: Any, **kwargs: Any) -> WikipediaSource:
    return WikipediaSource(client=httpx.Client(transport=httpx.MockTransport(handler)), **kwargs)


def test_search_maps_hits_to_evidence_with_provenance() -> None:
    wiki = Wiki(
        ["Eiffel Tower", "Gustave Eiffel"],
        {
            "Eiffel Tower": summary("Eiffel Tower", EIFFEL_EXTRACT, pageid=9232),
            "Gustave Eiffel": summary("Gustave Eiffel", "Gustave Eiffel was a French engineer."),
        },
    )
    hits = source_for(wiki, sentences=2).search("  eiffel tower builder ", k=2)

    search = wiki.requests[0]
    assert search.url.path == "/w/api.php"
    assert dict(search.url.params) == {
        "action": "query",
        "list": "search",
        "srsearch": "eiffel tower builder",
        "srlimit": "2",
        "format": "json",
        "formatversion": "2",
    }
    assert [r.url.path for r in wiki.requests[1:]] == [
        "/api/rest_v1/page/summary/Eiffel_Tower",
        "/api/rest_v1/page/summary/Gustave_Eiffel",
    ]
    first, second = hits
    assert first.text == (
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
        "It is named after the engineer Gustave Eiffel, whose company designed and built the "
        "tower from 1887 to 1889."
    )
    assert first.title == "Eiffel Tower"
    assert first.source == "wikipedia"
    assert first.url == "https://en.wikipedia.org/wiki/Eiffel_Tower"
    assert first.id == "Eiffel Tower"
    assert first.published is None
    assert (first.score, second.score) == (1.0, 0.5)
    assert second.text == "Gustave Eiffel was a French engineer."


def test_search_skips_hits_whose_page_is_gone_and_keeps_rank_scores() -> None:
    wiki = Wiki(
        ["Deleted Page", "Eiffel Tower"],
        {"Eiffel Tower": summary("Eiffel Tower", EIFFEL_EXTRACT)},
    )
    hits = source_for(wiki, name="wiki-en").search("eiffel", k=2)
    assert [(h.title, h.score, h.source) for h in hits] == [("Eiffel Tower", 0.5, "wiki-en")]


def test_page_without_extract_falls_back_to_description_or_is_skipped() -> None:
    bare = summary("Eiffel (surname)", "", kind="no-extract")
    empty = summary("Empty", "", kind="no-extract")
    empty["description"] = None
    wiki = Wiki(["Eiffel (surname)", "Empty"], {"Eiffel (surname)": bare, "Empty": empty})
    hits = source_for(wiki).search("eiffel", k=2)
    assert [h.text for h in hits] == ["Tower in Paris, France"]


def test_cutoff_keeps_undated_current_pages() -> None:
    wiki = Wiki(["Eiffel Tower"], {"Eiffel Tower": summary("Eiffel Tower", EIFFEL_EXTRACT)})
    hits = source_for(wiki).search("eiffel", k=3, before=date(1900, 1, 1))
    assert [h.title for h in hits] == ["Eiffel Tower"]


def test_excluding_wikipedia_returns_nothing_without_a_request() -> None:
    wiki = Wiki(["Eiffel Tower"], {})
    assert source_for(wiki).search("eiffel", exclude_domains=["wikipedia.org"]) == []
    assert source_for(wiki).search("eiffel", exclude_domains=["en.wikipedia.org"]) == []
    assert wiki.requests == []


def test_other_language_uses_its_own_site() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        page = summary(
            "Tour Eiffel", "La tour Eiffel est une tour de fer puddlé. Elle mesure 330 m."
        )
        page["content_urls"]["desktop"]["page"] = "https://fr.wikipedia.org/wiki/Tour_Eiffel"
        return httpx.Response(200, json=page)

    ev = source_for(handler, lang="fr", sentences=1).lookup("Tour Eiffel")
    assert seen == ["https://fr.wikipedia.org/api/rest_v1/page/summary/Tour_Eiffel"]
    assert ev is not None
    assert ev.text == "La tour Eiffel est une tour de fer puddlé."
    assert ev.url == "https://fr.wikipedia.org/wiki/Tour_Eiffel"


def test_lookup_follows_redirects() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/Eiffel_tower"):
            # The REST API answers a redirect page with 302 and a relative Location.
            return httpx.Response(302, headers={"Location": "Eiffel_Tower"}, json={})
        assert request.url.path == "/api/rest_v1/page/summary/Eiffel_Tower"
        return httpx.Response(200, json=summary("Eiffel Tower", EIFFEL_EXTRACT))

    ev = source_for(handler).lookup("Eiffel tower")
    assert ev is not None
    assert ev.title == ev.id == "Eiffel Tower"
    assert ev.score is None


def test_lookup_missing_page_is_none() -> None:
    assert source_for(Wiki([], {})).lookup("No such page at all") is None


def test_lookup_escapes_slashes_in_titles() -> None:
    wiki = Wiki([], {"AC/DC": summary("AC/DC", "AC/DC are an Australian rock band.")})
    ev = source_for(wiki).lookup("AC/DC")
    assert wiki.requests[0].url.raw_path == b"/api/rest_v1/page/summary/AC%2FDC"
    assert ev is not None
    assert ev.url == "https://en.wikipedia.org/wiki/AC/DC"


def test_lookup_returns_disambiguation_pages() -> None:
    text = "Mercury commonly refers to: Mercury (planet). Mercury (element)."
    wiki = Wiki([], {"Mercury": summary("Mercury", text, kind="disambiguation")})
    ev = source_for(wiki, sentences=0).lookup("Mercury")
    assert ev is not None
    assert ev.text == text


def test_lookup_rejects_blank_title_and_search_blank_query() -> None:
    source = source_for(Wiki([], {}))
    with pytest.raises(BadInputError):
        source.lookup("  ")
    with pytest.raises(BadInputError):
        source.search(" ")
    with pytest.raises(BadInputError):
        source.search("eiffel", k=0)


def test_api_error_payload_is_source_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "error": {
                    "code": "srsearch-text-disabled",
                    "info": "text search is disabled.",
                    "docref": "See https://en.wikipedia.org/w/api.php for API usage.",
                },
                "servedby": "mw1234",
            },
        )

    with pytest.raises(SourceUnavailableError, match="srsearch-text-disabled"):
        source_for(handler).search("eiffel")


@pytest.mark.parametrize("status", [403, 500, 503])
def test_http_errors_are_source_unavailable(status: int) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text="<html>error</html>")

    with pytest.raises(SourceUnavailableError, match=f"HTTP {status}") as info:
        source_for(handler).search("eiffel")
    assert isinstance(info.value.__cause__, httpx.HTTPStatusError)
    with pytest.raises(SourceUnavailableError, match=f"HTTP {status}"):
        source_for(handler).lookup("Eiffel Tower")


def test_network_errors_are_source_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("name resolution failed", request=request)

    with pytest.raises(SourceUnavailableError, match="could not be reached") as info:
        source_for(handler).lookup("Eiffel Tower")
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_malformed_answer_is_source_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<!doctype html><p>maintenance</p>")

    with pytest.raises(SourceUnavailableError, match="unexpected shape"):
        source_for(handler).lookup("Eiffel Tower")


def test_retried_through_the_shared_client(tmp_path: Any) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "1"})
        return httpx.Response(200, json=summary("Eiffel Tower", EIFFEL_EXTRACT))

    sleeps: list[float] = []
    client = make_http_client(
        transport=httpx.MockTransport(handler),
        cache_path=tmp_path / "c.sqlite",
        sleep=sleeps.append,
    )
    source = WikipediaSource(client=client)
    assert source.lookup("Eiffel Tower") is not None
    assert source.lookup("Eiffel Tower") is not None  # from the cache
    client.close()
    assert len(calls) == 2
    assert sleeps == [1.0]


def test_configuration_and_protocols() -> None:
    source = WikipediaSource(client=httpx.Client(), lang="de", sentences=2, name="wiki-de")
    assert source.to_dict() == {
        "type": "wikipedia",
        "name": "wiki-de",
        "lang": "de",
        "sentences": 2,
    }
    assert isinstance(source, PageSource)
    assert isinstance(source, Source)
    with pytest.raises(ConfigError):
        WikipediaSource(client=httpx.Client(), lang="en.evil.com/")
    with pytest.raises(ConfigError):
        WikipediaSource(client=httpx.Client(), sentences=-1)


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("Paris is in France. It is large.", 1, "Paris is in France."),
        ("Paris is in France. It is large.", 5, "Paris is in France. It is large."),
        ("Paris is in France. It is large.", 0, "Paris is in France. It is large."),
        (
            "John F. Kennedy visited the U.S. Army base. He left.",
            1,
            "John F. Kennedy visited the U.S. Army base.",
        ),
        ("Built c. 1889 by Dr. Eiffel. It stands.", 1, "Built c. 1889 by Dr. Eiffel."),
        ('He said "Stop." Then he left. Done.', 2, 'He said "Stop." Then he left.'),
        ("Is it tall? Yes! Very.", 2, "Is it tall? Yes!"),
        ("The value was 3.5 m. wide in places. Next.", 1, "The value was 3.5 m. wide in places."),
        ("東京は日本の首都である。人口は多い。", 1, "東京は日本の首都である。"),
        ("", 3, ""),
    ],
)
def test_first_sentences(text: str, n: int, expected: str) -> None:
    assert first_sentences(text, n) == expected


@pytest.mark.live
def test_live_wikipedia() -> None:
    with make_http_client(cache=False) as client:
        source = WikipediaSource(client=client)
        hits = source.search("Eiffel Tower", k=2)
        page = source.lookup("Eiffel Tower")
    assert hits
    assert all(h.url and h.url.startswith("https://en.wikipedia.org/wiki/") for h in hits)
    assert page is not None
    assert "Paris" in page.text


# --- senses: the pages Wikipedia lists for a term ---------------------------------------


def parse_payload(title: str, html: str) -> dict[str, Any]:
    """An Action API action=parse answer (prop=text, formatversion=2)."""
    return {"parse": {"title": title, "pageid": 4242, "text": html}}


MISSING_PAGE = {
    "error": {
        "code": "missingtitle",
        "info": "The page you specified doesn't exist.",
        "docref": "See https://en.wikipedia.org/w/api.php for API usage.",
    },
    "servedby": "mw1234",
}

# The body of a disambiguation page as the parser renders it: one entry per list item, its
# link first; a nested list, a red link, a link into another namespace, and the notice box.
WASHINGTON_HTML = (
    '<div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">'
    "<p><b>Washington</b> most commonly refers to:</p>\n<ul>"
    '<li><a href="/wiki/George_Washington" title="George Washington">George Washington</a>'
    " (1732&#8211;1799), first president of the United States</li>\n"
    '<li><a href="/wiki/Washington_(state)" title="Washington (state)">Washington (state)</a>,'
    ' a state of the United States, near <a href="/wiki/Canada">Canada</a></li>\n'
    '<li><a href="/wiki/Washington,_D.C." title="Washington, D.C.">Washington, D.C.</a>,'
    " the capital of the United States\n<ul>"
    '<li><a href="/wiki/Washington_metropolitan_area">Washington metropolitan area</a></li>'
    "</ul></li>\n</ul>\n<p><b>Washington</b> may also refer to:</p>\n<ul>"
    '<li><a href="/wiki/Washington_(name)">Washington (name)</a>, a list of people</li>'
    '<li><a href="/w/index.php?title=Washington_(ship)&amp;action=edit&amp;redlink=1" '
    'class="new">Washington (ship)</a>, a ship</li>'
    '<li>See <a href="/wiki/Wiktionary:washington">Wiktionary</a></li>'
    "</ul>"
    '<table class="box-Disambiguation"><tr><td>This <a href="/wiki/Help:Disambiguation">'
    "disambiguation</a> page lists articles associated with the title Washington.</td></tr>"
    "</table></div>"
)
PARIS_HTML = (
    '<div class="mw-parser-output"><p><b><a href="/wiki/Paris">Paris</a></b> is the capital '
    "of France.</p><p><b>Paris</b> may also refer to:</p><ul>"
    '<li><a href="/wiki/Paris,_Texas" title="Paris, Texas">Paris, Texas</a>, a city</li>'
    '<li><a href="/wiki/Paris_Hilton" title="Paris Hilton">Paris Hilton</a>, a celebrity</li>'
    "</ul></div>"
)


class SenseWiki(Wiki):
    """The fake server with disambiguation pages: action=parse by page title."""

    def __init__(self, pages: dict[str, dict[str, Any]], lists: dict[str, str]) -> None:
        super().__init__([], pages)
        self.lists = lists

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/w/api.php" and request.url.params.get("action") == "parse":
            self.requests.append(request)
            assert request.url.params["prop"] == "text"
            title = request.url.params["page"]
            if title not in self.lists:
                return httpx.Response(200, json=MISSING_PAGE)
            return httpx.Response(200, json=parse_payload(title, self.lists[title]))
        return super().__call__(request)


def washington_wiki() -> SenseWiki:
    pages = {
        "Washington": summary("Washington", "Washington most commonly refers to:",
                              kind="disambiguation"),
        "George Washington": summary("George Washington", "George Washington was a president."),
        "Washington (state)": summary("Washington (state)", "Washington is a US state."),
        "Washington, D.C.": summary("Washington, D.C.", "Washington, D.C., is the capital."),
        "Washington metropolitan area": summary(
            "Washington metropolitan area", "The Washington metropolitan area is a region."
        ),
        "Washington (name)": summary("Washington (name)", "Washington is a name. It may refer to:",
                                     kind="disambiguation"),
    }  # fmt: skip
    return SenseWiki(pages, {"Washington": WASHINGTON_HTML})


def test_senses_of_a_disambiguation_page_are_its_entries_never_itself() -> None:
    wiki = washington_wiki()
    found = source_for(wiki, sentences=0).senses("Washington", limit=10)
    # Page order, the first link of each item (nested items too); the disambiguation page
    # and a listed disambiguation page are passed over; red links and other namespaces are
    # not entries.
    assert [ev.title for ev in found] == [
        "George Washington",
        "Washington (state)",
        "Washington, D.C.",
        "Washington metropolitan area",
    ]
    assert all("refer to" not in ev.text for ev in found)
    assert all(not ev.metadata.get("disambiguation") for ev in found)
    parsed = [r for r in wiki.requests if r.url.params.get("action") == "parse"]
    assert [r.url.params["page"] for r in parsed] == ["Washington"]
    assert source_for(washington_wiki()).senses("Washington", limit=2)[-1].title == (
        "Washington (state)"
    )


def test_senses_of_an_article_add_the_term_disambiguation_list() -> None:
    pages = {
        "Paris": summary("Paris", "Paris is the capital of France."),
        "Paris, Texas": summary("Paris, Texas", "Paris is a city in Texas."),
        "Paris Hilton": summary("Paris Hilton", "Paris Hilton is a media personality."),
    }
    wiki = SenseWiki(pages, {"Paris (disambiguation)": PARIS_HTML})
    found = source_for(wiki).senses("Paris", limit=10)
    assert [ev.title for ev in found] == ["Paris", "Paris, Texas", "Paris Hilton"]
    # No "(disambiguation)" page: the article alone.
    eiffel = SenseWiki({"Eiffel Tower": summary("Eiffel Tower", EIFFEL_EXTRACT)}, {})
    assert [ev.title for ev in source_for(eiffel).senses("Eiffel Tower")] == ["Eiffel Tower"]
    assert source_for(SenseWiki({}, {})).senses("No such page at all") == []
    with pytest.raises(BadInputError):
        source_for(SenseWiki({}, {})).senses("  ")


def test_a_failed_parse_is_source_unavailable() -> None:
    class Broken(SenseWiki):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            if request.url.params.get("action") == "parse":
                return httpx.Response(200, json={"error": {"code": "internal_api_error"}})
            return super().__call__(request)

    with pytest.raises(SourceUnavailableError, match="internal_api_error"):
        source_for(Broken({}, {})).senses("Washington")


def test_lookup_marks_a_disambiguation_page() -> None:
    page = source_for(washington_wiki()).lookup("Washington")
    assert page is not None and page.metadata == {"disambiguation": True}
    article = source_for(washington_wiki()).lookup("Washington (state)")
    assert article is not None and article.metadata == {}


def test_senses_stop_at_the_limit_without_reading_the_list() -> None:
    wiki = SenseWiki({"Paris": summary("Paris", "Paris is the capital of France.")}, {})
    assert [ev.title for ev in source_for(wiki).senses("Paris", limit=1)] == ["Paris"]
    assert [r.url.path for r in wiki.requests] == ["/api/rest_v1/page/summary/Paris"]
