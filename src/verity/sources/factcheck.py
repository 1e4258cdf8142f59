"""Fact-checking sites as evidence sources: site-restricted web search, ClaimReview, offline.

The ToE paper's retrieval agent queries "fact-checking sites such as PolitiFact and
Snopes" (ToE §III-B). `FactCheckSearch` is that tool: a web provider asked for pages of
those sites only. `GoogleFactCheck` is a named substitution, not the paper's tool: Google's
Fact Check Tools API, which returns the ClaimReview ratings that fact-checkers publish.
`OfflineFactCheck` is the corpus of rulings that stands in for both offline.

Usage:

    source = FactCheckSearch()                          # ddgs; politifact.com, snopes.com
    source = FactCheckSearch(BraveSearch(), name="factcheck:brave")
    google = GoogleFactCheck()                          # reads GOOGLE_FACTCHECK_API_KEY
    hits = source.search("vaccines contain microchips", k=3, before=date(2021, 1, 1))

A rating in a passage is evidence for a method to weigh, never a verdict: nothing here
maps a rating onto a label.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import httpx
from pydantic import ConfigDict, Field

from verity.domain import Evidence
from verity.errors import ConfigError, SourceUnavailableError
from verity.sources.base import Source, apply_filters, domain_of, is_excluded
from verity.sources.corpus import CorpusSource
from verity.sources.websearch.common import (
    EXTRA_WHEN_FILTERED,
    Payload,
    check_query,
    clean_text,
    fetch_count,
    http_client,
    parse_date,
    parse_payload,
    rank_score,
    read_key,
    request_json,
)

#: The sites the paper names: "fact-checking sites such as PolitiFact and Snopes" (ToE
#: §III-B). Pass ``sites`` to `FactCheckSearch` for others.
FACTCHECK_SITES: tuple[str, ...] = ("politifact.com", "snopes.com")

# Fact Check Tools API, method claims.search
# (https://developers.google.com/fact-check/tools/api/reference/rest/v1alpha1/claims/search).
GOOGLE_ENDPOINT = "https://factchecktools.googleapis.com/v1alpha1/claims:search"
GOOGLE_SERVICE = "Google Fact Check Tools"
GOOGLE_KEY_ENV = "GOOGLE_FACTCHECK_API_KEY"
# Our own bound on pageSize (the API defaults to 10 and documents no maximum).
GOOGLE_MAX_PAGE = 50
MAX_CLAIM_CHARS = 1000
MAX_FIELD_CHARS = 200
_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")


class FactCheckSearch:
    """Pages of fact-checking sites, found by a web provider restricted to those sites.

    The query goes to ``web`` (any `Source`; by default `DdgsSearch`, which needs no key)
    with the sites as ``site:`` operators in front, ``(site:politifact.com OR
    site:snopes.com) QUERY``: in front, because a provider that must shorten a long query
    keeps its start. Only results whose URL is on one of the sites (or a subdomain) are
    kept, whatever the provider did with the operators; they are renamed to this source
    and carry ``metadata["site"]`` and ``metadata["provider"]``. A site in
    ``exclude_domains`` is left out of the query, and with every site excluded nothing is
    asked. The cutoff and exclusions go to the provider and are enforced again here.

        source = FactCheckSearch(sites=("fullfact.org",), name="factcheck-uk")
    """

    def __init__(
        self,
        web: Source | None = None,
        *,
        sites: Sequence[str] = FACTCHECK_SITES,
        name: str = "factcheck",
    ) -> None:
        if web is None:
            from verity.sources.websearch import DdgsSearch

            web = DdgsSearch()
        cleaned = tuple(
            dict.fromkeys(s.strip().lower().removeprefix("www.") for s in sites if s.strip())
        )
        if not cleaned or any(not _HOST.fullmatch(site) for site in cleaned):
            raise ConfigError(f"fact-checking sites must be host names, got {list(sites)!r}")
        self.web = web
        self.sites = cleaned
        self.name = name

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` site pages, best first, none dated on or after ``before``."""
        text = check_query(query, k)
        sites = [s for s in self.sites if not is_excluded(f"https://{s}/", exclude_domains)]
        if not sites:
            return []
        hits = self.web.search(
            site_query(text, sites),
            k + EXTRA_WHEN_FILTERED,  # results off the sites are dropped below
            before=before,
            exclude_domains=exclude_domains,
        )
        return apply_filters(
            self._relabelled(hits, sites), k, before=before, exclude_domains=exclude_domains
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration, with the provider's."""
        return {
            "type": "factcheck",
            "name": self.name,
            "sites": list(self.sites),
            "web": self.web.to_dict(),
        }

    def _relabelled(self, hits: Sequence[Evidence], sites: Sequence[str]) -> Iterator[Evidence]:
        for ev in hits:
            site = next((s for s in sites if _on_site(ev.url, s)), None)
            if site is None:
                continue
            metadata = {**ev.metadata, "site": site, "provider": self.web.name}
            yield ev.model_copy(update={"source": self.name, "metadata": metadata})


def site_query(text: str, sites: Sequence[str]) -> str:
    """The query restricted to ``sites``: ``(site:a OR site:b) text``, or ``site:a text``.

    site_query("moon landing", ["politifact.com", "snopes.com"])
    # '(site:politifact.com OR site:snopes.com) moon landing'
    """
    operators = " OR ".join(f"site:{site}" for site in sites)
    return f"({operators}) {text}" if len(sites) > 1 else f"{operators} {text}"


def _on_site(url: str | None, site: str) -> bool:
    """Whether ``url`` is on ``site`` or one of its subdomains."""
    return is_excluded(url, [site])


# -- Google Fact Check Tools -----------------------------------------------------------------


class _Publisher(Payload):
    name: str | None = None
    site: str | None = None


class _Review(Payload):
    model_config = ConfigDict(populate_by_name=True)

    publisher: _Publisher = Field(default_factory=_Publisher)
    url: str | None = None
    title: str | None = None
    review_date: str | None = Field(default=None, alias="reviewDate")
    rating: str | None = Field(default=None, alias="textualRating")
    language: str | None = Field(default=None, alias="languageCode")


class _Claim(Payload):
    model_config = ConfigDict(populate_by_name=True)

    text: str | None = None
    claimant: str | None = None
    claim_date: str | None = Field(default=None, alias="claimDate")
    reviews: list[_Review] = Field(default_factory=list, alias="claimReview")


class _Response(Payload):
    # Absent when nothing matched.
    claims: list[_Claim] = Field(default_factory=list)


class GoogleFactCheck:
    """Fact-checkers' ClaimReview ratings from Google's Fact Check Tools API (``claims:search``).

    A named substitution for the paper's tool (ToE §III-B searches the fact-checking sites
    themselves, which is `FactCheckSearch`): the API returns, for each matching claim, the
    reviews fact-checkers marked up with schema.org ClaimReview. Each review becomes one
    passage whose text lists its fields one per line::

        Claim: Vaccines contain microchips.
        Claimant: Facebook posts
        Rating: False
        Reviewed by: PolitiFact

    ``url`` is the review, ``title`` its headline (else the claim), ``published`` the
    review date, ``score`` 1/(rank+1) in the API's order, and ``metadata`` holds
    ``claimant``, ``rating``, ``reviewer``, ``reviewer_site``, ``claim_date`` and
    ``language`` where given. The rating is the fact-checker's words, kept as evidence: it
    is never turned into a verdict here.

    The API has no date cutoff (``maxAgeDays`` counts back from today), so the cutoff is
    enforced on the answer: a review dated on or after it is dropped, and so is one whose
    claim is dated on or after it (a review cannot precede its claim). Excluded domains
    drop a review whose URL or whose publisher's site is in them. The key is read from
    ``GOOGLE_FACTCHECK_API_KEY`` at construction and sent as the ``key`` parameter.

        source = GoogleFactCheck(language="fr")
        hits = source.search("5G coronavirus", k=5, exclude_domains=["politifact.com"])
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        api_key_env: str = GOOGLE_KEY_ENV,
        language: str = "en",
        name: str = "factcheck:google",
    ) -> None:
        self._key = read_key(GOOGLE_SERVICE, api_key_env)
        self.api_key_env = api_key_env
        self.language = language
        self.name = name
        self._client = http_client(client)

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` reviews, best first, none dated on or after ``before``."""
        text = check_query(query, k)
        params = {
            "query": text,
            "languageCode": self.language,
            "pageSize": fetch_count(
                k, before=before, exclude_domains=exclude_domains, cap=GOOGLE_MAX_PAGE
            ),
            "key": self._key,
        }
        answer = parse_payload(_Response, self._get(params), GOOGLE_SERVICE)
        return apply_filters(
            self._reviews(answer, before=before, exclude_domains=exclude_domains),
            k,
            before=before,
            exclude_domains=exclude_domains,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration; the key appears only as its variable's name."""
        return {
            "type": "factcheck-google",
            "name": self.name,
            "language": self.language,
            "api_key_env": self.api_key_env,
        }

    def _get(self, params: dict[str, Any]) -> Any:
        try:
            return request_json(
                self._client,
                GOOGLE_SERVICE,
                "GET",
                GOOGLE_ENDPOINT,
                key_env=self.api_key_env,
                params=params,
                headers={"Accept": "application/json"},
            )
        except SourceUnavailableError as exc:
            # Google answers a wrong key with 400 INVALID_ARGUMENT ("API key not valid"),
            # not 401, so request_json cannot tell it from a bad query by the status alone.
            cause = exc.__cause__
            if isinstance(cause, httpx.HTTPStatusError) and "API_KEY_INVALID" in (
                cause.response.text
            ):
                raise SourceUnavailableError(
                    f"{GOOGLE_SERVICE} rejected the API key (HTTP 400); check {self.api_key_env}"
                ) from cause
            raise

    def _reviews(
        self, answer: _Response, *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterator[Evidence]:
        rank = 0
        for claim in answer.claims:
            claim_date = parse_date(claim.claim_date)
            if before is not None and claim_date is not None and claim_date >= before:
                continue
            for review in claim.reviews:
                if review.publisher.site and is_excluded(
                    f"https://{review.publisher.site}/", exclude_domains
                ):
                    continue
                ev = self._evidence(claim, review, claim_date, rank)
                if ev is not None:
                    rank += 1
                    yield ev

    def _evidence(
        self, claim: _Claim, review: _Review, claim_date: date | None, rank: int
    ) -> Evidence | None:
        url = (review.url or "").strip()
        if not url.startswith(("https://", "http://")) or not domain_of(url):
            return None
        said = _field(claim.text, MAX_CLAIM_CHARS)
        claimant = _field(claim.claimant)
        rating = _field(review.rating)
        reviewer = _field(review.publisher.name) or _field(review.publisher.site)
        if not said and not rating:
            return None
        lines = [
            f"{label}: {value}"
            for label, value in (
                ("Claim", said),
                ("Claimant", claimant),
                ("Rating", rating),
                ("Reviewed by", reviewer),
            )
            if value
        ]
        metadata: dict[str, str | int | float | bool] = {
            key: value
            for key, value in (
                ("claimant", claimant),
                ("rating", rating),
                ("reviewer", reviewer),
                ("reviewer_site", _field(review.publisher.site)),
                ("claim_date", claim_date.isoformat() if claim_date else ""),
                ("language", _field(review.language)),
            )
            if value
        }
        return Evidence(
            text="\n".join(lines),
            title=_field(review.title, 300) or said[:300],
            source=self.name,
            url=url,
            score=rank_score(rank),
            published=parse_date(review.review_date),
            metadata=metadata,
        )


def _field(value: str | None, limit: int = MAX_FIELD_CHARS) -> str:
    """A payload string as one plain line of at most ``limit`` characters."""
    text = clean_text(value)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- offline -------------------------------------------------------------------------------


class OfflineFactCheck(CorpusSource):
    """The offline stand-in for the fact-checking tool: a BM25 corpus of fact-check rulings.

    Built with ``verity index build --standin factcheck`` as the corpus
    ``standin-factcheck`` and used as the source ``factcheck:offline``. Its passages are
    PolitiFact rulings without URLs, so domain exclusion cannot see where they come from;
    ``publishers`` says it instead, for the leakage guard (`verity.sources.leakage`), which
    silences the whole source when every publisher is excluded.

        source = OfflineFactCheck()
        source.publishers          # ('politifact.com',)
    """

    #: The sites whose rulings the corpus holds.
    publishers: tuple[str, ...] = ("politifact.com",)

    def __init__(
        self,
        corpus: str = "standin-factcheck",
        *,
        root: Path | None = None,
        label: str = "factcheck:offline",
    ) -> None:
        super().__init__(corpus, root=root, label=label)

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration, with the publishers."""
        return {**super().to_dict(), "publishers": list(self.publishers)}
