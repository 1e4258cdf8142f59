"""arXiv papers as an evidence source: the arXiv API's Atom feed, one passage per paper.

The ToE paper's retrieval agent queries "arXiv for academic papers" (ToE §III-B); this is
that tool. No key is needed.

Usage:

    source = ArxivSource()
    for ev in source.search("mRNA vaccine myocarditis", k=3, before=date(2021, 6, 1)):
        print(ev.title, ev.url, ev.published, ev.metadata["authors"])
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import xml.parsers.expat
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

import httpx

from verity.domain import Evidence
from verity.errors import BadInputError, SourceUnavailableError
from verity.http.pacing import RateLimiter
from verity.sources.base import apply_filters, is_excluded
from verity.sources.websearch.common import (
    capped,
    check_query,
    clean_text,
    fetch_count,
    http_client,
    parse_date,
    rank_score,
)

# The query interface of the arXiv API User's Manual, §3.1
# (https://info.arxiv.org/help/api/user-manual.html); the manual's examples use http://,
# the export host answers the same over https.
ENDPOINT = "https://export.arxiv.org/api/query"
SERVICE = "arXiv"
# The API's Terms of Use ask for "no more than one request every three seconds" and a
# single connection at a time (https://info.arxiv.org/help/api/tou.html#rate-limits).
MIN_INTERVAL = 3.0
# Our own bound on max_results: a relevance search needs only the first few papers (the
# manual allows up to 2,000 per request).
MAX_RESULTS = 50
# Our own bound on the size of one feed; 50 entries take well under a megabyte.
MAX_FEED_BYTES = 4 * 2**20
# Our own bound on how many words of a query go into search_query.
MAX_TERMS = 24
# arXiv's submission form limits an abstract to 1,920 characters
# (https://info.arxiv.org/help/prep.html); anything much longer is not one.
MAX_ABSTRACT_CHARS = 4000
MAX_TITLE_CHARS = 300
MAX_META_CHARS = 200
# The lower end of the submittedDate range: before arXiv's first paper (August 1991).
FIRST_SUBMISSION = "199101010000"

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
# New-style (2101.00001v2) and old-style (hep-ex/0307015v1, math.GT/0309136) identifiers,
# User's Manual §3.3.2.1 and https://info.arxiv.org/help/arxiv_identifier.html.
_ARXIV_ID = re.compile(r"(?:\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Za-z-]+)?/\d{7})(?:v\d+)?")
_WORD = re.compile(r"[^\W_]+")
# Too common to help a relevance search; arXiv's own analyser drops most of them anyway.
_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in",
        "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "were",
        "will", "with",
    }
)  # fmt: skip

# One limiter for the whole process: the Terms of Use count requests per client, not per
# source object.
_SHARED_LIMITER = RateLimiter(MIN_INTERVAL)


class ArxivSource:
    """Papers from the arXiv API, ranked by its relevance order, quoted by their abstracts.

    The query's words are searched in all fields (``all:word``, joined by ``OR`` so that a
    long query still finds papers; the relevance order puts those matching most words
    first). A cutoff goes into the query as a ``submittedDate`` range ending the day before
    it, and is enforced again on each entry's ``published`` date (the first version's
    submission date). The title and abstract are those of the latest version, which may
    have been revised after that date; ``metadata["updated"]`` says when.

    Politeness: requests from every `ArxivSource` in the process are spaced at least
    ``MIN_INTERVAL`` (3) seconds apart, as arXiv's Terms of Use ask; an answer served from
    verity's HTTP cache gives its turn back, so repeated queries do not wait.

    Each passage: ``text`` the abstract, ``title``, ``url`` the abstract page
    (``https://arxiv.org/abs/ID``), ``id`` the versioned arXiv identifier, ``published``,
    ``score`` 1/(rank+1), and ``metadata`` with ``authors`` (the first names, ``;``
    separated), ``author_count``, ``primary_category``, ``updated``, and ``doi`` and
    ``journal_ref`` when arXiv has them. Excluding ``arxiv.org`` returns nothing.

        source = ArxivSource(limiter=RateLimiter(0))     # no spacing (tests, mirrors)
        hits = source.search("transformer attention", k=5)
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        limiter: RateLimiter | None = None,
        name: str = "arxiv",
    ) -> None:
        self.name = name
        self.limiter = limiter if limiter is not None else _SHARED_LIMITER
        self._client = http_client(client)

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` papers, best first, none submitted on or after ``before``."""
        text = check_query(query, k)
        if is_excluded("https://arxiv.org/", exclude_domains):
            return []
        params = {
            "search_query": search_query(text, before),
            "start": 0,
            "max_results": fetch_count(
                k, before=before, exclude_domains=exclude_domains, cap=MAX_RESULTS
            ),
            "sortBy": "relevance",
            "sortOrder": "descending",
        }
        entries = parse_feed(self._fetch(params))
        results = (self._evidence(entry, rank) for rank, entry in enumerate(entries))
        return apply_filters(
            (ev for ev in results if ev is not None),
            k,
            before=before,
            exclude_domains=exclude_domains,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration."""
        return {"type": "arxiv", "name": self.name, "min_interval": self.limiter.min_interval}

    def _fetch(self, params: dict[str, Any]) -> bytes:
        turn = self.limiter.acquire()
        try:
            response = self._client.get(
                ENDPOINT,
                params=params,
                headers={"Accept": "application/atom+xml, application/xml;q=0.9"},
            )
        except httpx.HTTPError as exc:
            raise SourceUnavailableError(f"{SERVICE} could not be reached: {exc}") from exc
        if response.extensions.get("verity_cache") == "hit":
            self.limiter.release(turn)
        body = response.content
        if len(body) > MAX_FEED_BYTES:
            raise SourceUnavailableError(
                f"{SERVICE} answered with {len(body)} bytes, over the {MAX_FEED_BYTES} accepted"
            )
        if response.status_code != 200:
            # A bad query is answered with HTTP 400 and an Atom feed saying why (§3.4).
            reason = _error_summary(body)
            raise SourceUnavailableError(
                f"{SERVICE} answered HTTP {response.status_code}"
                + (f": {reason}" if reason else "")
            )
        return body

    def _evidence(self, entry: ET.Element, rank: int) -> Evidence | None:
        raw_id = (entry.findtext(f"{_ATOM}id") or "").strip()
        arxiv_id = raw_id.rpartition("/abs/")[2]
        if not _ARXIV_ID.fullmatch(arxiv_id):
            return None
        title = capped(clean_text(entry.findtext(f"{_ATOM}title")), MAX_TITLE_CHARS)
        abstract = capped(clean_text(entry.findtext(f"{_ATOM}summary")), MAX_ABSTRACT_CHARS)
        body = abstract or title
        if not body:
            return None
        return Evidence(
            text=body,
            title=title,
            source=self.name,
            url=f"https://arxiv.org/abs/{arxiv_id}",
            id=arxiv_id,
            score=rank_score(rank),
            published=parse_date(entry.findtext(f"{_ATOM}published")),
            metadata=_metadata(entry),
        )


def search_query(text: str, before: date | None) -> str:
    """The ``search_query`` for a free-text query and an optional cutoff.

    Each distinct word (letters and digits; common words left out) becomes ``all:word``,
    joined by ``OR``; arXiv's own operators and brackets in the text are therefore never
    passed on. A cutoff adds ``submittedDate:[... TO <day before>2359]``, the range syntax
    of the User's Manual §5.1 (times in GMT, inclusive).

        search_query("Is COVID-19 airborne?", date(2020, 6, 1))
        # '(all:covid OR all:19 OR all:airborne) AND submittedDate:[199101010000 TO 202005312359]'
    """
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in _STOP_WORDS and word not in words:
            words.append(word)
    if not words:
        raise BadInputError("the query has no words to search arXiv for")
    terms = " OR ".join(f"all:{word}" for word in words[:MAX_TERMS])
    if before is None:
        return terms
    last = before - timedelta(days=1)
    return f"({terms}) AND submittedDate:[{FIRST_SUBMISSION} TO {last:%Y%m%d}2359]"


class _Refused(Exception):
    """A feed declared a document type or an entity."""


def _refuse(*_: object) -> None:
    raise _Refused


def parse_feed(body: bytes) -> list[ET.Element]:
    """The ``<entry>`` elements of an arXiv Atom feed; anything else is `SourceUnavailableError`.

    A document type or entity declaration is refused before the tree is built: an Atom
    feed has none, and they are how XML documents expand entities into gigabytes or pull
    in local files. An error feed (an entry whose id is under ``/api/errors``, User's
    Manual §3.4) is raised with its message.
    """
    entries = _read_feed(body)
    reason = _error_reason(entries)
    if reason is not None:
        raise SourceUnavailableError(f"{SERVICE} refused the query: {reason}")
    return entries


def _read_feed(body: bytes) -> list[ET.Element]:
    checker = xml.parsers.expat.ParserCreate()
    checker.StartDoctypeDeclHandler = _refuse
    checker.EntityDeclHandler = _refuse
    try:
        checker.Parse(body, True)
        root = ET.fromstring(body)
    except _Refused:
        raise SourceUnavailableError(
            f"{SERVICE} answered with a document type or entity declaration; refused"
        ) from None
    except (xml.parsers.expat.ExpatError, ET.ParseError) as exc:
        raise SourceUnavailableError(f"{SERVICE} answered with malformed XML: {exc}") from exc
    if root.tag != f"{_ATOM}feed":
        raise SourceUnavailableError(f"{SERVICE} did not answer with an Atom feed")
    return root.findall(f"{_ATOM}entry")


def _error_reason(entries: list[ET.Element]) -> str | None:
    """The message of an error feed's entry; None when the feed is not one."""
    for entry in entries:
        if "/api/errors" in (entry.findtext(f"{_ATOM}id") or ""):
            return capped(clean_text(entry.findtext(f"{_ATOM}summary")), MAX_META_CHARS)
    return None


def _error_summary(body: bytes) -> str | None:
    """Why a request failed, when the body is an error feed."""
    try:
        return _error_reason(_read_feed(body))
    except SourceUnavailableError:
        return None


def _metadata(entry: ET.Element) -> dict[str, str | int | float | bool]:
    authors = [
        name
        for author in entry.findall(f"{_ATOM}author")
        if (name := clean_text(author.findtext(f"{_ATOM}name")))
    ]
    found: dict[str, str | int | float | bool] = {
        "authors": capped("; ".join(authors), MAX_META_CHARS),
        "author_count": len(authors),
    }
    category = entry.find(f"{_ARXIV}primary_category")
    if category is not None and category.get("term"):
        found["primary_category"] = capped(clean_text(category.get("term")), MAX_META_CHARS)
    updated = parse_date(entry.findtext(f"{_ATOM}updated"))
    if updated is not None:
        found["updated"] = updated.isoformat()
    for key in ("doi", "journal_ref"):
        value = clean_text(entry.findtext(f"{_ARXIV}{key}"))
        if value:
            found[key] = capped(value, MAX_META_CHARS)
    return found
