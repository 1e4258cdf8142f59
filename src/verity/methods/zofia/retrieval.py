"""ZoFia stage 1, retrieval (section 3.4): the web query and Wikipedia senses.

    web = search_web(sources, ["Obama", "Affordable Care Act"], "and", before=day, log=log)
    sense = wikipedia_sense(wiki_sources, "Obama", context, encoder, log=log)

Web: one query that requires every keyword (eq. 6, the AND composition). Providers treat a
quoted term as required only loosely, and local corpora (BM25) not at all, so every result
is also checked here: an AND result must contain each keyword. News sites, Wikipedia and
the fact-checking sites the datasets were built from are excluded, so the evidence cannot
be the article itself or its verdict. ``before`` is the publication date: only passages
from the day before or earlier are kept.

Wikipedia: eq. 7 chooses among the senses Wikipedia lists for a keyword. A source that
knows them (`SenseSource`: live Wikipedia reads the keyword's disambiguation page, the
offline summaries go by Wikipedia's sense titles) gives them itself; for any other page
source the senses are the page the keyword's title leads to and the search hits titled
"Keyword (qualifier)" or "Keyword, qualifier". A disambiguation page is never a sense:
it is the list of senses, and its lead ("Mercury may refer to:") describes none of them.
A keyword with no sense gets no page; a search hit about something else is never a
candidate. The candidates are scored by context-aware disambiguation
(`names.disambiguate`) and the first three sentences of the chosen page's summary are
kept (section 3.4, 5.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, Protocol, runtime_checkable

from verity.domain import Evidence, Retrieval
from verity.errors import SourceUnavailableError
from verity.llm.calllog import CallLog
from verity.methods.zofia.names import disambiguate, find_name
from verity.nlp.embed import Encoder
from verity.nlp.text import split_sentences
from verity.sources.base import PageSource, Source
from verity.sources.offline_wiki import names_sense

Composition = Literal["and", "or"]

FACT_CHECK_DOMAINS = ("politifact.com", "snopes.com", "gossipcop.com")
# Major news outlets: the article under test, or a copy of it, is usually on one of them.
NEWS_DOMAINS = (
    "abcnews.go.com",
    "apnews.com",
    "bbc.co.uk",
    "bbc.com",
    "breitbart.com",
    "cbsnews.com",
    "cnn.com",
    "dailymail.co.uk",
    "eonline.com",
    "foxnews.com",
    "huffpost.com",
    "latimes.com",
    "nbcnews.com",
    "npr.org",
    "nypost.com",
    "nytimes.com",
    "people.com",
    "politico.com",
    "reuters.com",
    "theguardian.com",
    "thehill.com",
    "tmz.com",
    "usatoday.com",
    "usmagazine.com",
    "washingtonpost.com",
    "wsj.com",
)
# The fact-checking sites first: a provider that can take only some exclusions in its
# query (Brave) then leaves out news sites, and every list is still applied to results.
DEFAULT_EXCLUDED = (*FACT_CHECK_DOMAINS, "wikipedia.org", *NEWS_DOMAINS)


def is_wikipedia(source: Source) -> bool:
    """Wikipedia-kind sources are those with titled pages (``offline-wiki``, ``wikipedia``)."""
    return isinstance(source, PageSource)


def compose(terms: Sequence[str], composition: Composition) -> str:
    """The query text: every term quoted, joined by spaces (AND) or ``OR`` (eq. 6)."""
    quoted = [f'"{t}"' for t in terms]
    return " OR ".join(quoted) if composition == "or" else " ".join(quoted)


def contains_all(evidence: Evidence, terms: Sequence[str]) -> bool:
    """True when the passage (title or text) names every term as whole words, ignoring case.

    Whole words (`find_name`), so that "US" is not found in "because".
    """
    haystack = f"{evidence.title}\n{evidence.text}"
    return all(find_name(haystack, t) is not None for t in terms)


@dataclass
class WebSearch:
    """What the web quadrant got: the query, what was kept and why the rest was not."""

    query: str
    composition: str
    results: list[Evidence] = field(default_factory=list)
    missing_terms: int = 0
    errors: list[str] = field(default_factory=list)

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return {
            "query": self.query,
            "composition": self.composition,
            "kept": len(self.results),
            "dropped_missing_terms": self.missing_terms,
            "errors": self.errors,
            "results": [
                {"title": ev.title, "url": ev.url, "source": ev.source} for ev in self.results
            ],
        }


def search_web(
    sources: Sequence[Source],
    terms: Sequence[str],
    composition: Composition | Literal["text"],
    *,
    k: int = 10,
    before: date | None,
    exclude_domains: Sequence[str],
    log: CallLog,
) -> WebSearch:
    """At most ``k`` results over every web source; ``text`` sends ``terms[0]`` as it is."""
    query = terms[0] if composition == "text" else compose(terms, composition)
    found = WebSearch(query=query, composition=composition)
    if not terms:
        return found
    # AND results that lack a term are dropped afterwards, so ask for more than k.
    ask = k * 3 if composition == "and" else k
    for source in sources:
        try:
            results = source.search(query, ask, before=before, exclude_domains=exclude_domains)
        except SourceUnavailableError as exc:
            found.errors.append(f"{source.name}: {exc}")
            log.add_retrieval(
                Retrieval(source=source.name, query=query, k=ask, before=before, error=str(exc))
            )
            continue
        log.add_retrieval(
            Retrieval(source=source.name, query=query, k=ask, before=before, results=tuple(results))
        )
        for ev in results:
            if composition == "and" and not contains_all(ev, terms):
                found.missing_terms += 1
            elif len(found.results) < k:
                found.results.append(ev)
    return found


@dataclass
class WikiSense:
    """One keyword's Wikipedia page, chosen among its senses by eq. 7."""

    keyword: str
    context: str
    candidates: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    chosen: Evidence | None = None

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return {
            "keyword": self.keyword,
            "candidates": [
                {"title": t, "score": s} for t, s in zip(self.candidates, self.scores, strict=True)
            ],
            "rejected_hits": self.rejected,
            "chosen": self.chosen.title if self.chosen else None,
            "url": self.chosen.url if self.chosen else None,
            "text": self.chosen.text if self.chosen else None,
        }


def first_sentences(text: str, n: int) -> str:
    """The first ``n`` sentences of a text."""
    return " ".join(split_sentences(text)[:n])


@runtime_checkable
class SenseSource(Protocol):
    """A page source that knows which of its pages Wikipedia lists as a term's senses."""

    name: str

    def senses(self, term: str, limit: int = 10) -> list[Evidence]:
        """At most ``limit`` sense pages of ``term``; never a disambiguation page."""
        ...


def is_listing(page: Evidence) -> bool:
    """True for a disambiguation page, which lists senses and is none of them."""
    return bool(page.metadata.get("disambiguation"))


def sense_candidates(
    source: PageSource,
    keyword: str,
    k: int,
    *,
    before: date | None,
    log: CallLog,
) -> tuple[list[Evidence], list[str]]:
    """The pages of one source that are senses of ``keyword``, and the pages turned away.

    A `SenseSource` lists at most ``k`` senses itself. Otherwise the exact title (or the
    provider's redirect) comes first, then "Keyword (qualifier)" and "Keyword, qualifier"
    pages among the source's top ``k`` search hits. A fuzzy title match is not a sense, and
    neither is a disambiguation page (`is_listing`).
    """
    listed = isinstance(source, SenseSource)
    exact: Evidence | None = None
    try:
        if isinstance(source, SenseSource):
            found = source.senses(keyword, k)
        else:
            exact = source.lookup(keyword, fuzzy=False)
            found = source.search(keyword, k, before=before)
    except SourceUnavailableError as exc:
        log.add_retrieval(Retrieval(source=source.name, query=keyword, k=k, error=str(exc)))
        return [], []
    log.add_retrieval(Retrieval(source=source.name, query=keyword, k=k, results=tuple(found)))
    pages: list[Evidence] = []
    rejected: list[str] = []
    for page in [exact, *found] if exact is not None else found:
        # A source's own sense list needs no title check ("George Washington" is a sense
        # of "Washington"); a search hit must be titled by the keyword.
        is_sense = listed or page is exact or names_sense(page.title, keyword)
        if is_sense and not is_listing(page):
            pages.append(page)
        else:
            rejected.append(page.title)
    return pages, rejected


def wikipedia_sense(
    sources: Sequence[Source],
    keyword: str,
    context: str,
    encoder: Encoder,
    *,
    candidates: int = 5,
    sentences: int = 3,
    before: date | None = None,
    log: CallLog,
) -> WikiSense:
    """Pick the sense of ``keyword`` whose description fits its context best (eq. 7).

    ``candidates`` is how many senses a `SenseSource` lists at most, or how many search
    hits of another page source are looked through for sense titles.
    """
    sense = WikiSense(keyword=keyword, context=context)
    pages: list[Evidence] = []
    seen: set[str] = set()
    for source in sources:
        if not isinstance(source, PageSource):
            continue
        found, rejected = sense_candidates(source, keyword, candidates, before=before, log=log)
        sense.rejected.extend(rejected)
        for page in found:
            if page.title.casefold() not in seen:
                seen.add(page.title.casefold())
                pages.append(page)
    if not pages:
        return sense
    descriptions = [first_sentences(p.text, 1) or p.title for p in pages]
    if find_name(context, keyword) is None:
        # A term the article does not spell out (an LLM-named entity) gets itself as
        # its context, so eq. 7 still has a mention to replace.
        context = f"{keyword}. {context}"
        sense.context = context
    index, scores = disambiguate(context, keyword, descriptions, encoder)
    page = pages[index]
    sense.candidates = [p.title for p in pages]
    sense.scores = scores
    sense.chosen = page.model_copy(update={"text": first_sentences(page.text, sentences)})
    return sense
