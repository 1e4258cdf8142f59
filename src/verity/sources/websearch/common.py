"""What the web-search providers share: keys, queries, dates, requests, snippets.

`WebSearch` is the base of every provider: its ``search`` checks the query, asks the
provider's ``_candidates`` hook for results and filters them. `KeyedSearch` adds the API
key, the HTTP client and ``to_dict`` of the providers reached with a key. The live
Wikipedia source borrows `http_client`, `check_query` and `Payload`.

Usage:

    key = read_key("Brave Search", "BRAVE_API_KEY")       # MissingKeyError when unset
    q = query_with_exclusions("eiffel tower height", ["wikipedia.org"])
    # 'eiffel tower height -site:wikipedia.org'
    fit_query("eiffel tower", ["a.com", "b.com"], max_chars=30, max_words=50)
    # FittedQuery(text='eiffel tower -site:a.com', domains=('a.com',))
    parse_date("Mar 3, 2021")                              # date(2021, 3, 3)
"""

from __future__ import annotations

import email.utils
import html
import logging
import os
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from typing import Any, ClassVar, NamedTuple, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from verity.domain import Evidence
from verity.errors import BadInputError, MissingKeyError, SourceUnavailableError
from verity.http import shared_http_client
from verity.sources.base import apply_filters

_Model = TypeVar("_Model", bound=BaseModel)

log = logging.getLogger(__name__)

#: How many results a provider is asked for beyond ``k`` when a filter may drop some.
EXTRA_WHEN_FILTERED = 5


def read_key(service: str, env_var: str) -> str:
    """Return the API key in ``env_var``; raise `MissingKeyError` when it is unset or blank."""
    value = os.environ.get(env_var, "").strip()
    if not value:
        raise MissingKeyError(service, env_var)
    return value


def http_client(client: httpx.Client | None) -> httpx.Client:
    """The caller's client when given (tests pass a mock transport), else the shared one."""
    return client if client is not None else shared_http_client()


def check_query(query: str, k: int) -> str:
    """Return the stripped query; raise `BadInputError` for a blank query or ``k`` below 1."""
    text = query.strip()
    if not text:
        raise BadInputError("the search query is empty")
    if k < 1:
        raise BadInputError(f"k must be at least 1, got {k}")
    return text


def fetch_count(
    k: int, *, before: date | None, exclude_domains: Sequence[str], cap: int | None = None
) -> int:
    """How many results to request so that ``k`` are likely left after filtering."""
    count = k + EXTRA_WHEN_FILTERED if before is not None or exclude_domains else k
    return min(count, cap) if cap is not None else count


def query_with_exclusions(query: str, exclude_domains: Sequence[str]) -> str:
    """Append a ``-site:`` operator per domain, for providers without an exclusion parameter."""
    domains = [d.strip().lower().removeprefix("www.") for d in exclude_domains]
    return " ".join([query, *(f"-site:{d}" for d in domains if d)])


class FittedQuery(NamedTuple):
    """The query text to send and the domains whose ``-site:`` operators it carries."""

    text: str
    domains: tuple[str, ...]


def fit_query(
    query: str, exclude_domains: Sequence[str], *, max_chars: int, max_words: int
) -> FittedQuery:
    """The query with as many ``-site:`` operators as a provider's length limits allow.

    For providers that refuse a query over ``max_chars`` characters or ``max_words``
    words (whitespace-separated tokens). The query itself comes first: when it alone is
    over a limit it is cut at a word boundary (see `_cut_query`). Operators follow in the
    order given, each only if both limits still hold; from the first that does not fit
    on, none is sent. Leaving an operator out is safe because ``WebSearch.search`` drops
    results from every excluded domain afterwards, whether or not it went into the query.

        fit_query('"eiffel tower" paris', ["x.com", "y.com"], max_chars=36, max_words=10)
        # FittedQuery(text='"eiffel tower" paris -site:x.com', domains=('x.com',))
    """
    text = _cut_query(query, max_chars=max_chars, max_words=max_words)
    chars, words = len(text), len(text.split())
    sent: list[str] = []
    for raw in exclude_domains:
        domain = raw.strip().lower().removeprefix("www.")
        if not domain or domain in sent:
            continue
        operator = f"-site:{domain}"
        # One space before the operator; an operator is one word.
        if chars + 1 + len(operator) > max_chars or words + 1 > max_words:
            break
        text = f"{text} {operator}"
        chars, words = len(text), words + 1
        sent.append(domain)
    return FittedQuery(text, tuple(sent))


# Words that only join their neighbours; one left at the end of a cut query joins nothing.
_JOINERS = frozenset({"OR", "AND", "|"})


def _cut_query(query: str, *, max_chars: int, max_words: int) -> str:
    """The query unchanged when it fits both limits, else its longest prefix that does.

    The cut falls between words and never inside a double-quoted phrase: a phrase that
    does not fit whole is dropped, since half a phrase, or a lone quote, would ask the
    provider for something else. A joining word (``OR``) left at the end goes too. Only
    when not even the first word or phrase fits does the query lose its quotes and get cut
    word by word (a single word longer than ``max_chars`` is cut inside), so that there is
    still something to search for.
    """
    tokens = query.split()
    if len(query) <= max_chars and len(tokens) <= max_words:
        return query
    kept = _prefix(tokens, max_chars=max_chars, max_words=max_words, whole_phrases=True)
    if not kept:
        words = query.replace('"', " ").split()
        kept = _prefix(words, max_chars=max_chars, max_words=max_words, whole_phrases=False)
        kept = kept or words[:1]
    cut = " ".join(kept)[:max_chars]
    # Lengths only: the query is the user's text and may be long.
    log.info(
        "search query cut to fit %d characters and %d words: kept %d of %d characters, "
        "%d of %d words",
        max_chars,
        max_words,
        len(cut),
        len(query),
        len(cut.split()),
        len(tokens),
    )
    return cut


def _prefix(
    tokens: Sequence[str], *, max_chars: int, max_words: int, whole_phrases: bool
) -> list[str]:
    """The most leading tokens that fit, joined by single spaces, without a trailing joiner.

    With ``whole_phrases`` the prefix ends only where every double quote opened in it
    has been closed.
    """
    kept: list[str] = []
    usable = 0  # how many of the kept tokens may end the prefix
    length = -1  # the first token has no space before it
    quotes = 0
    for token in tokens[:max_words]:
        length += 1 + len(token)
        if length > max_chars:
            break
        kept.append(token)
        quotes += token.count('"')
        if not whole_phrases or quotes % 2 == 0:
            usable = len(kept)
    kept = kept[:usable]
    while kept and kept[-1].upper() in _JOINERS:
        kept.pop()
    return kept


_RELATIVE = re.compile(
    r"^(?:(?P<n>\d+|an?|one)\s+)?(?P<unit>second|minute|hour|day|week|month|year)s?\s+ago$"
)
_UNIT_DAYS = {"second": 0, "minute": 0, "hour": 0, "day": 1, "week": 7, "month": 30, "year": 365}
_FORMATS = ("%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y", "%Y/%m/%d", "%m/%d/%Y")


def parse_date(value: object, *, today: date | None = None) -> date | None:
    """Read the calendar date of a provider's date string; None when it cannot be read.

    Understands ISO dates and datetimes (``2021-03-03``, ``2021-03-03T10:00:00Z``),
    RFC 2822 (``Wed, 03 Mar 2021 10:00:00 GMT``), Google-style ``Mar 3, 2021`` and
    relative ages (``3 days ago``, counted back from ``today``; a month is 30 days). A
    relative age must be read, not dropped: a result from "2 hours ago" is exactly what a
    past cutoff has to exclude.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    iso = text.replace("Z", "+00:00") if text.endswith("Z") else text
    try:
        return datetime.fromisoformat(iso).date()
    except ValueError:
        pass
    for fmt in _FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    relative = _RELATIVE.match(text.lower())
    if relative:
        raw = relative.group("n")
        count = int(raw) if raw and raw.isdigit() else 1
        return (today or date.today()) - timedelta(days=count * _UNIT_DAYS[relative["unit"]])
    try:
        return email.utils.parsedate_to_datetime(text).date()
    except (TypeError, ValueError):
        return None


_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")


def clean_text(value: object) -> str:
    """Plain text of a snippet: tags removed, entities decoded, whitespace collapsed.

    Brave marks the matched words with ``<strong>``; the others send plain text.
    """
    if not isinstance(value, str):
        return ""
    return _SPACE.sub(" ", html.unescape(_TAG.sub("", value))).strip()


def capped(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut.

    For provider metadata and other short fields, where a word boundary does not matter.
    """
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def to_evidence(
    *,
    source: str,
    title: object,
    url: object,
    text: object,
    score: float | None,
    published: date | None,
) -> Evidence | None:
    """One result as evidence, or None when it has no URL or no text to quote.

    A result whose snippet is empty keeps its title as text, so that it still counts.
    """
    body = clean_text(text) or clean_text(title)
    if not isinstance(url, str) or not url.strip() or not body:
        return None
    return Evidence(
        text=body,
        title=clean_text(title),
        source=source,
        url=url.strip(),
        score=score,
        published=published,
    )


def rank_score(rank: int) -> float:
    """Score of the result at 0-based ``rank`` when the provider gives none: 1, 1/2, 1/3..."""
    return 1.0 / (rank + 1)


def request_json(
    client: httpx.Client,
    service: str,
    method: str,
    url: str,
    *,
    key_env: str | None = None,
    forbidden_hint: str | None = None,
    **kwargs: Any,
) -> Any:
    """Send a request and return its JSON body; every failure is a `SourceUnavailableError`.

    ``key_env`` names the key's variable, so that a 401 or 403 can say which key was
    rejected; keyless services may pass ``forbidden_hint`` to explain a 401 or 403 instead.
    ``kwargs`` go to ``httpx.Client.request`` (``params``, ``json``, ``headers``).
    """
    try:
        response = client.request(method, url, **kwargs)
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        status = exc.response.status_code
        if status in (401, 403) and key_env is not None:
            message = f"{service} rejected the API key (HTTP {status}); check {key_env}"
        elif status in (401, 403) and forbidden_hint is not None:
            message = f"{service} refused the request (HTTP {status}): {forbidden_hint}"
        else:
            detail = exc.response.text[:200].strip()
            message = f"{service} answered HTTP {status}" + (f": {detail}" if detail else "")
        raise SourceUnavailableError(message) from exc
    except httpx.HTTPError as exc:
        raise SourceUnavailableError(f"{service} could not be reached: {exc}") from exc
    try:
        return response.json()
    except ValueError as exc:
        raise SourceUnavailableError(f"{service} did not answer with JSON") from exc


class Payload(BaseModel):
    """Base of the response models: the fields verity reads; any other field is ignored."""

    model_config = ConfigDict(extra="ignore")


def parse_payload(model: type[_Model], payload: Any, service: str) -> _Model:
    """Validate a provider's JSON against the part of its shape verity reads."""
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise SourceUnavailableError(f"{service} answered in an unexpected shape: {exc}") from exc


class WebSearch:
    """A web-search provider as a `verity.sources.base.Source`, around one hook.

    ``search`` checks the query, takes the provider's results from ``_candidates`` (best
    first, None for a result that cannot be evidence) and keeps the first ``k`` that pass
    `apply_filters`, whatever the provider did with the filters. ``_candidates`` may be
    lazy: ``search`` stops reading once it has ``k``.

        class Echo(WebSearch):
            kind = name = "echo"

            def _candidates(self, text, k, *, before, exclude_domains):
                return [to_evidence(source=self.name, title=text, url="https://echo.example",
                                    text=text, score=1.0, published=None)]

        Echo().search("eiffel", k=3)             # one Evidence, text 'eiffel'
    """

    #: The provider's key in ``PROVIDERS`` and its ``to_dict()["type"]``.
    kind: ClassVar[str]
    name: str

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` results, best first, none dated on or after ``before``."""
        text = check_query(query, k)
        candidates = self._candidates(text, k, before=before, exclude_domains=exclude_domains)
        return apply_filters(
            (ev for ev in candidates if ev is not None),
            k,
            before=before,
            exclude_domains=exclude_domains,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration."""
        return {"type": self.kind, "name": self.name}

    def _candidates(
        self, text: str, k: int, *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterable[Evidence | None]:
        """Ask the provider for the checked query ``text``; its results as evidence."""
        raise NotImplementedError


class KeyedSearch(WebSearch):
    """A provider reached over HTTP with an API key, read from the environment at construction.

    Subclasses set ``kind`` and ``service`` (the name in messages), keep their own
    ``__init__`` for its defaults, and send their request with ``_fetch``.

        class Acme(KeyedSearch):
            kind, service = "acme", "Acme Search"

            def _candidates(self, text, k, *, before, exclude_domains):
                answer = self._fetch(_Response, "GET", ENDPOINT, params={"q": text})
                return (to_evidence(...) for hit in answer.results)
    """

    #: The provider's name in error messages.
    service: ClassVar[str]

    def __init__(self, *, client: httpx.Client | None, api_key_env: str, name: str) -> None:
        self._key = read_key(self.service, api_key_env)
        self.api_key_env = api_key_env
        self.name = name
        self._client = http_client(client)

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration; the key appears only as its variable's name."""
        return {**super().to_dict(), "api_key_env": self.api_key_env}

    def _fetch(self, model: type[_Model], method: str, url: str, **kwargs: Any) -> _Model:
        """Send a request with `request_json` and validate its answer against ``model``."""
        payload = request_json(
            self._client, self.service, method, url, key_env=self.api_key_env, **kwargs
        )
        return parse_payload(model, payload, self.service)
