"""Social media as an evidence source: Bluesky's post search.

The ToE paper's retrieval agent can be "searching social media platforms" (ToE §III-B),
Twitter in its experiments (§IV-B: "Twitter and Reddit"). Twitter's API is paid, so
`BlueskySource` is a named substitution for it: posts from Bluesky, found with
``app.bsky.feed.searchPosts``.

Usage:

    source = BlueskySource()          # with BLUESKY_HANDLE and BLUESKY_APP_PASSWORD if set
    for ev in source.search("measles outbreak", k=3, before=date(2024, 1, 1)):
        print(ev.url, ev.metadata["author_handle"], ev.metadata["likes"])
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from datetime import date
from typing import Any

import httpx
from pydantic import ConfigDict, Field

from verity.domain import Evidence
from verity.errors import ConfigError, SourceUnavailableError
from verity.http import http_limits_from_env, make_http_client
from verity.sources.base import apply_filters, is_excluded
from verity.sources.websearch.common import (
    Payload,
    capped,
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

SERVICE = "Bluesky"
# Hosts of the Bluesky API (https://docs.bsky.app/docs/advanced-guides/api-directory):
# the public AppView answers without an account, a PDS (bsky.social for most accounts)
# answers an account's session and proxies app.bsky.* calls to the AppView.
PUBLIC_APPVIEW = "https://public.api.bsky.app"
DEFAULT_SERVICE = "https://bsky.social"
SEARCH_PATH = "/xrpc/app.bsky.feed.searchPosts"
SESSION_PATH = "/xrpc/com.atproto.server.createSession"
HANDLE_ENV = "BLUESKY_HANDLE"
PASSWORD_ENV = "BLUESKY_APP_PASSWORD"
# searchPosts: `limit` from 1 to 100, `sort` "top" or "latest", `until` exclusive and may
# be an ISO date (https://docs.bsky.app/docs/api/app-bsky-feed-search-posts).
MAX_LIMIT = 100
SORTS = ("top", "latest")
# Our own bounds on what is quoted (a post's text is at most 300 graphemes anyway).
MAX_TEXT_CHARS = 3000
MAX_META_CHARS = 200
_FORBIDDEN_HINT = (
    "Bluesky often closes post search to clients without an account; set "
    f"{HANDLE_ENV} and {PASSWORD_ENV} (an app password, not the account's own)"
)
# Handle and record-key syntax of the AT Protocol (https://atproto.com/specs/handle,
# https://atproto.com/specs/record-key); DIDs as did:METHOD:ID, kept to a sane length.
_HANDLE = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
)
_DID = re.compile(r"did:[a-z]+:[a-zA-Z0-9._:%-]{1,200}")
_POST_URI = re.compile(r"at://([^/]+)/app\.bsky\.feed\.post/([A-Za-z0-9._:~-]{1,512})")


class _Author(Payload):
    model_config = ConfigDict(populate_by_name=True)

    did: str = ""
    handle: str = ""
    display_name: str | None = Field(default=None, alias="displayName")


class _Feature(Payload):
    # A link facet carries `uri`; mentions and tags carry other fields.
    uri: str | None = None


class _Facet(Payload):
    features: list[_Feature] = Field(default_factory=list)


class _Record(Payload):
    model_config = ConfigDict(populate_by_name=True)

    text: str | None = None
    created_at: str | None = Field(default=None, alias="createdAt")
    facets: list[_Facet] = Field(default_factory=list)


class _External(Payload):
    uri: str | None = None


class _Embed(Payload):
    # app.bsky.embed.external#view: a link card.
    external: _External | None = None


class _Post(Payload):
    model_config = ConfigDict(populate_by_name=True)

    uri: str = ""
    author: _Author = Field(default_factory=_Author)
    record: _Record = Field(default_factory=_Record)
    embed: _Embed | None = None
    reply_count: int | None = Field(default=None, alias="replyCount")
    repost_count: int | None = Field(default=None, alias="repostCount")
    like_count: int | None = Field(default=None, alias="likeCount")
    quote_count: int | None = Field(default=None, alias="quoteCount")
    indexed_at: str | None = Field(default=None, alias="indexedAt")


class _Response(Payload):
    posts: list[_Post] = Field(default_factory=list)


class _Session(Payload):
    model_config = ConfigDict(populate_by_name=True)

    access_jwt: str = Field(alias="accessJwt")


class BlueskySource:
    """Bluesky posts from ``app.bsky.feed.searchPosts``, standing in for the paper's Twitter.

    Two ways in, as Bluesky's documentation describes them: without an account, the public
    AppView (``public.api.bsky.app``), which Bluesky often closes to search (a 403 then
    says to set the account variables); with ``BLUESKY_HANDLE`` and
    ``BLUESKY_APP_PASSWORD`` set, a session from ``com.atproto.server.createSession`` on
    ``service`` (default ``bsky.social``), whose access token is sent to the same host and
    renewed once when refused as expired. The session is made once per source and never
    goes through verity's HTTP cache, which would store the token.

    The query goes as ``q`` with ``sort`` (default ``top``) and a ``limit``; a cutoff goes
    as ``until`` (exclusive). Bluesky filters on a post's sort time, not on the
    ``createdAt`` its author's app wrote, so the cutoff is enforced again here on both
    ``createdAt`` and ``indexedAt``: a post whose record claims an earlier date than Bluesky
    saw it may be backdated. Excluded domains drop posts that link to them (link facets or
    a link card); excluding ``bsky.app`` returns nothing.

    A passage: ``text`` the post's text, ``url`` ``https://bsky.app/profile/HANDLE/post/RKEY``
    (the DID when the handle is invalid), ``published`` the record's ``createdAt``,
    ``score`` 1/(rank+1), and ``metadata`` with ``author_handle``, ``author_name``,
    ``likes``, ``reposts``, ``replies`` and ``quotes`` (as of today, not of the cutoff).

        source = BlueskySource(sort="latest")
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        handle_env: str = HANDLE_ENV,
        password_env: str = PASSWORD_ENV,
        service: str = DEFAULT_SERVICE,
        sort: str = "top",
        name: str = "social",
    ) -> None:
        if sort not in SORTS:
            raise ConfigError(f"Bluesky sort must be one of {', '.join(SORTS)}, got {sort!r}")
        if not service.startswith("https://"):
            raise ConfigError(f"the Bluesky service must be an https:// URL, got {service!r}")
        self._handle = os.environ.get(handle_env, "").strip()
        self._password = os.environ.get(password_env, "").strip()
        if self._handle or self._password:
            # One without the other is a mistake, not a wish to search without an account.
            self._handle = read_key(SERVICE, handle_env)
            self._password = read_key(SERVICE, password_env)
        self.handle_env = handle_env
        self.password_env = password_env
        self.authenticated = bool(self._handle)
        self.service = service.rstrip("/")
        self.sort = sort
        self.name = name
        self._client = http_client(client)
        # Tests give one client for everything; otherwise the session goes through a
        # client without the cache, made when first needed.
        self._auth_client = client
        self._lock = threading.Lock()
        self._token: str | None = None

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` posts, best first, none posted on or after ``before``."""
        text = check_query(query, k)
        if is_excluded("https://bsky.app/", exclude_domains):
            return []
        params: dict[str, Any] = {
            "q": text,
            "limit": fetch_count(k, before=before, exclude_domains=exclude_domains, cap=MAX_LIMIT),
            "sort": self.sort,
        }
        if before is not None:
            params["until"] = before.isoformat()
        answer = parse_payload(_Response, self._search(params), SERVICE)
        return apply_filters(
            self._passages(answer.posts, before=before, exclude_domains=exclude_domains),
            k,
            before=before,
            exclude_domains=exclude_domains,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration; the account appears only as variable names."""
        return {
            "type": "bluesky",
            "name": self.name,
            "host": self.service if self.authenticated else PUBLIC_APPVIEW,
            "authenticated": self.authenticated,
            "sort": self.sort,
            "handle_env": self.handle_env,
            "password_env": self.password_env,
        }

    # -- requests ----------------------------------------------------------------------------

    def _search(self, params: dict[str, Any]) -> Any:
        if not self.authenticated:
            return request_json(
                self._client,
                SERVICE,
                "GET",
                f"{PUBLIC_APPVIEW}{SEARCH_PATH}",
                forbidden_hint=_FORBIDDEN_HINT,
                params=params,
                headers={"Accept": "application/json"},
            )
        try:
            return self._search_as(self._session(), params)
        except SourceUnavailableError as exc:
            if not _expired(exc):
                raise
            return self._search_as(self._session(renew=True), params)

    def _search_as(self, token: str, params: dict[str, Any]) -> Any:
        return request_json(
            self._client,
            SERVICE,
            "GET",
            f"{self.service}{SEARCH_PATH}",
            key_env=f"{self.handle_env} and {self.password_env}",
            params=params,
            headers={"Accept": "application/json", "Authorization": f"Bearer {token}"},
        )

    def _session(self, *, renew: bool = False) -> str:
        with self._lock:
            if self._token is not None and not renew:
                return self._token
            if self._auth_client is None:
                self._auth_client = make_http_client(
                    cache=False, **http_limits_from_env(os.environ)
                )
            payload = request_json(
                self._auth_client,
                SERVICE,
                "POST",
                f"{self.service}{SESSION_PATH}",
                key_env=f"{self.handle_env} and {self.password_env}",
                json={"identifier": self._handle, "password": self._password},
                headers={"Accept": "application/json"},
            )
            self._token = parse_payload(_Session, payload, SERVICE).access_jwt
            return self._token

    # -- passages ----------------------------------------------------------------------------

    def _passages(
        self, posts: Sequence[_Post], *, before: date | None, exclude_domains: Sequence[str]
    ) -> Iterator[Evidence]:
        for rank, post in enumerate(posts):
            if before is not None:
                seen = parse_date(post.indexed_at)
                if seen is not None and seen >= before:
                    continue
            if exclude_domains and any(is_excluded(u, exclude_domains) for u in _links(post)):
                continue
            ev = self._evidence(post, rank)
            if ev is not None:
                yield ev

    def _evidence(self, post: _Post, rank: int) -> Evidence | None:
        found = _POST_URI.fullmatch(post.uri)
        text = capped(clean_text(post.record.text), MAX_TEXT_CHARS)
        if found is None or not text:
            return None
        handle = post.author.handle
        if not _HANDLE.fullmatch(handle) or handle == "handle.invalid":
            handle = found.group(1)
            if not _DID.fullmatch(handle):
                return None
        name = capped(clean_text(post.author.display_name), MAX_META_CHARS)
        return Evidence(
            text=text,
            title=f"{name} (@{handle})" if name else f"@{handle}",
            source=self.name,
            url=f"https://bsky.app/profile/{handle}/post/{found.group(2)}",
            id=post.uri,
            score=rank_score(rank),
            published=parse_date(post.record.created_at),
            metadata={
                "author_handle": capped(handle, MAX_META_CHARS),
                "author_name": name,
                "likes": post.like_count or 0,
                "reposts": post.repost_count or 0,
                "replies": post.reply_count or 0,
                "quotes": post.quote_count or 0,
            },
        )


def _links(post: _Post) -> Iterator[str]:
    """Every URL a post links to: its link facets and its link card."""
    for facet in post.record.facets:
        for feature in facet.features:
            if feature.uri:
                yield feature.uri
    if post.embed is not None and post.embed.external is not None and post.embed.external.uri:
        yield post.embed.external.uri


def _expired(exc: SourceUnavailableError) -> bool:
    """Whether the server refused the access token as expired or invalid."""
    cause = exc.__cause__
    if not isinstance(cause, httpx.HTTPStatusError) or cause.response.status_code not in (
        400,
        401,
    ):
        return False
    return any(code in cause.response.text for code in ("ExpiredToken", "InvalidToken"))
