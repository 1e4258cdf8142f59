"""Live Wikipedia as an evidence source: full-text search, then the lead of each page.

Usage:

    wiki = WikipediaSource(lang="en", sentences=3)
    for ev in wiki.search("Eiffel Tower height", k=3):
        print(ev.title, ev.url, ev.score)
    page = wiki.lookup("Eiffel Tower")
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from html.parser import HTMLParser
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import httpx
from pydantic import BaseModel, Field, ValidationError

from verity.domain import Evidence
from verity.errors import BadInputError, ConfigError, SourceUnavailableError
from verity.sources.base import apply_filters, is_excluded, passage_limit, shorten
from verity.sources.websearch.common import Payload, check_query, http_client

_Model = TypeVar("_Model", bound=BaseModel)
_LANG = re.compile(r"[a-z][a-z0-9-]{1,20}")


class _Hit(Payload):
    title: str
    pageid: int | None = None


class _Query(Payload):
    search: list[_Hit] = Field(default_factory=list)


class _ApiError(Payload):
    code: str = "unknown"
    info: str = ""


class _SearchResponse(Payload):
    query: _Query = Field(default_factory=_Query)
    error: _ApiError | None = None


class _Parsed(Payload):
    title: str = ""
    text: str = ""


class _ParseResponse(Payload):
    parse: _Parsed | None = None
    error: _ApiError | None = None


class _PageUrls(Payload):
    page: str | None = None


class _ContentUrls(Payload):
    desktop: _PageUrls = Field(default_factory=_PageUrls)


class _Summary(Payload):
    type: str = "standard"
    title: str
    pageid: int | None = None
    extract: str = ""
    description: str | None = None
    content_urls: _ContentUrls = Field(default_factory=_ContentUrls)


class WikipediaSource:
    """Current Wikipedia pages, found with the MediaWiki search API, quoted from their lead.

    ``search`` runs the Action API's full-text search, then fetches the REST page summary of
    each hit and keeps the first ``sentences`` sentences of its plain-text extract (all of
    it when ``sentences`` is 0). The score is rank-based: 1 for the first hit, 1/2 for the
    second, and so on. The id of a passage is the page title, which ``lookup`` accepts.

    Dates: these are the pages as they are today, which carry no publication date, so
    ``published`` is None and a ``before`` cutoff cannot remove them: they are kept, as
    `apply_filters` keeps every undated passage. A method that needs evidence frozen at a
    date must use a dated source (or an offline dump) instead.

    ``lookup`` returns the page's summary; redirects are followed, so a redirect title
    gives its target page. A disambiguation page is returned like any other, its text
    being the lead of the list ("Mercury may refer to:"), and marked as such in its
    ``metadata`` (``{"disambiguation": True}``).

    ``senses`` returns the pages Wikipedia lists as the senses of a term: the term's own
    page if it is an article, and the entries of its disambiguation page (the term's page
    itself, or "Term (disambiguation)"). A disambiguation page is never a sense.

        wiki = WikipediaSource(lang="de", sentences=2)
        hits = wiki.search("Eiffelturm Höhe", k=3, exclude_domains=["example.org"])
        wiki.lookup("Eiffelturm")
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        lang: str = "en",
        sentences: int = 3,
        name: str = "wikipedia",
    ) -> None:
        if not _LANG.fullmatch(lang):
            raise ConfigError(f"not a Wikipedia language code: {lang!r}")
        if sentences < 0:
            raise ConfigError(f"sentences must be 0 (all) or more, got {sentences}")
        self.lang = lang
        self.sentences = sentences
        self.name = name
        self._site = f"https://{lang}.wikipedia.org"
        self._client = http_client(client)

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` page leads, best first (``before`` keeps them all: undated)."""
        text = check_query(query, k)
        if is_excluded(self._site, exclude_domains):
            return []
        response = self._get(
            f"{self._site}/w/api.php",
            params={
                "action": "query",
                "list": "search",
                "srsearch": text,
                "srlimit": k,
                "format": "json",
                "formatversion": 2,
            },
        )
        found = _parse(_SearchResponse, response)
        if found.error is not None:
            raise SourceUnavailableError(
                f"Wikipedia search failed: {found.error.code}: {found.error.info}"
            )
        results: list[Evidence] = []
        for rank, hit in enumerate(found.query.search):
            summary = self._summary(hit.title)
            # A hit can vanish between search and fetch (deleted), or have no lead: skip it.
            evidence = None if summary is None else self._evidence(summary, score=1 / (rank + 1))
            if evidence is not None:
                results.append(evidence)
        return apply_filters(results, k, before=before, exclude_domains=exclude_domains)

    def lookup(self, title: str, *, fuzzy: bool = True) -> Evidence | None:
        """Return the page with this title (redirects followed), or None if there is none.

        A redirect is Wikipedia's own statement that two titles name one page, so it is
        followed whatever ``fuzzy`` says; there is no fuzzy matching here.
        """
        if not title.strip():
            raise BadInputError("the page title is empty")
        summary = self._summary(title)
        found = None if summary is None else self._evidence(summary, score=None)
        return None if found is None else shorten(found, passage_limit())

    def senses(self, term: str, limit: int = 10) -> list[Evidence]:
        """The pages Wikipedia lists as senses of ``term``, at most ``limit``, in its order.

        The term's own page (redirects followed) comes first when it is an article. When it
        is a disambiguation page, that page is the list of senses to examine and never a
        sense itself; when it is an article, the list is "Term (disambiguation)", if that
        page exists. Each listed entry is the first link of a list item, as Wikipedia's
        disambiguation pages put one entry per item with its link first; entries that are
        themselves disambiguation pages, or have no page, are passed over.

            WikipediaSource().senses("Washington", limit=3)
            # [George Washington, Washington (state), Washington, D.C.]
        """
        if not term.strip():
            raise BadInputError("the term is empty")
        if limit < 1:
            return []
        found: list[Evidence] = []
        own = self._summary(term)
        listing = f"{term.strip()} (disambiguation)"
        if own is not None and own.type == "disambiguation":
            listing = own.title
        elif own is not None:
            page = self._evidence(own, score=None)
            if page is not None:
                found.append(shorten(page, passage_limit()))
        if len(found) >= limit:
            return found
        # Listed titles already tried, and the titles of the pages kept (a listed title
        # may redirect to a page already kept).
        tried = {ev.title.casefold() for ev in found}
        for title in self._listed(listing):
            if len(found) >= limit:
                break
            if title.casefold() in tried:
                continue
            tried.add(title.casefold())
            summary = self._summary(title)
            if summary is None or summary.type == "disambiguation":
                continue
            page = self._evidence(summary, score=None)
            if page is not None and all(e.title != page.title for e in found):
                found.append(shorten(page, passage_limit()))
        return found

    def _listed(self, title: str) -> list[str]:
        """The entries of a disambiguation page, in page order; none if it does not exist."""
        response = self._get(
            f"{self._site}/w/api.php",
            params={
                "action": "parse",
                "page": title,
                "prop": "text",
                "redirects": 1,
                "format": "json",
                "formatversion": 2,
            },
        )
        parsed = _parse(_ParseResponse, response)
        if parsed.error is not None:
            if parsed.error.code == "missingtitle":
                return []
            raise SourceUnavailableError(
                f"Wikipedia parse failed: {parsed.error.code}: {parsed.error.info}"
            )
        if parsed.parse is None:
            return []
        reader = _EntryLinks()
        reader.feed(parsed.parse.text)
        reader.close()
        return list(dict.fromkeys(reader.entries))

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration."""
        return {
            "type": "wikipedia",
            "name": self.name,
            "lang": self.lang,
            "sentences": self.sentences,
        }

    def _summary(self, title: str) -> _Summary | None:
        # Titles are path segments: spaces become underscores and "/" must be escaped.
        path = quote(title.strip().replace(" ", "_"), safe="")
        response = self._get(f"{self._site}/api/rest_v1/page/summary/{path}")
        if response.status_code == 404:
            return None
        return _parse(_Summary, response)

    def _get(self, url: str, *, params: dict[str, Any] | None = None) -> httpx.Response:
        try:
            return self._client.get(
                url,
                params=params,
                headers={"Accept": "application/json"},
                follow_redirects=True,
            )
        except httpx.HTTPError as exc:
            raise SourceUnavailableError(f"Wikipedia could not be reached: {exc}") from exc

    def _evidence(self, summary: _Summary, *, score: float | None) -> Evidence | None:
        text = first_sentences(summary.extract, self.sentences) or (summary.description or "")
        if not text.strip():
            return None
        url = summary.content_urls.desktop.page or (
            f"{self._site}/wiki/{quote(summary.title.replace(' ', '_'))}"
        )
        return Evidence(
            text=text,
            title=summary.title,
            source=self.name,
            url=url,
            id=summary.title,
            score=score,
            published=None,
            metadata={"disambiguation": True} if summary.type == "disambiguation" else {},
        )


# Link targets in these namespaces are not articles, so never a sense.
_NAMESPACES = frozenset(
    {
        "category", "file", "help", "image", "module", "portal", "special", "talk",
        "template", "user", "wikipedia", "wikt", "wiktionary", "wp", "mos", "draft",
    }
)  # fmt: skip


class _EntryLinks(HTMLParser):
    """The first article link of every list item of a page's HTML, in page order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.entries: list[str] = []
        self._open: list[bool] = []  # per open <li>: has its first link been taken?

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "li":
            self._open.append(False)
            return
        if tag != "a" or not self._open or self._open[-1]:
            return
        title = _article_title(dict(attrs).get("href") or "")
        if title:
            self.entries.append(title)
            self._open[-1] = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._open:
            self._open.pop()


def _article_title(href: str) -> str:
    """The article title an internal link points to, else empty (anchors, other spaces)."""
    if not href.startswith("/wiki/"):
        return ""  # a red link (/w/index.php?...), an external link or an anchor
    title = unquote(href.removeprefix("/wiki/").split("#", 1)[0]).replace("_", " ").strip()
    space, colon, _ = title.partition(":")
    if colon and space.strip().casefold() in _NAMESPACES:
        return ""
    return title


def _parse(model: type[_Model], response: httpx.Response) -> _Model:
    """Check the status and validate the JSON body; any failure is `SourceUnavailableError`."""
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        raise SourceUnavailableError(
            f"Wikipedia answered HTTP {response.status_code} for {response.request.url}"
        ) from exc
    try:
        return model.model_validate(response.json())
    except (ValueError, ValidationError) as exc:
        raise SourceUnavailableError(
            f"Wikipedia answered in an unexpected shape for {response.request.url}"
        ) from exc


# Words whose trailing period does not end a sentence.
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "inc", "ltd", "co", "corp", "vs",
        "no", "nos", "vol", "ca", "approx", "fig", "gen", "gov", "sen", "rep", "mt", "ft", "lt",
        "col", "sgt", "capt", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
        "oct", "nov", "dec",
    }
)  # fmt: skip
_END = re.compile(r"[.!?][\"'”’)\]]*\s+|[。！？][\"'”’)\]]*\s*")


def first_sentences(text: str, n: int) -> str:
    """Return the first ``n`` sentences of ``text`` (all of it when ``n`` is 0).

    A period after an initial (``John F. Kennedy``), a dotted abbreviation (``U.S.``) or a
    common abbreviation (``Dr.``, ``c.``), or before a lower-case word, does not end a
    sentence.

        first_sentences("Paris is in France. It is large.", 1)   # 'Paris is in France.'
    """
    text = text.strip()
    if n <= 0:
        return text
    count = 0
    for match in _END.finditer(text):
        following = text[match.end() : match.end() + 1]
        if following.islower():
            continue
        if match.group()[0] == ".":
            word = text[: match.start()].rsplit(None, 1)[-1] if match.start() else ""
            word = word.lstrip("(\"'“‘[")
            if len(word) == 1 or "." in word or word.lower() in _ABBREVIATIONS:
                continue
        count += 1
        if count == n:
            return text[: match.end()].strip()
    return text
