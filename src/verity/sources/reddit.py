"""Reddit posts as an evidence source: post search, each post with its top comments.

The ToE paper's retrieval agent can be "searching Reddit discussions" (ToE §III-B). Reddit
asks API clients to authenticate with OAuth2; the app-only flow (client credentials, no
user account) is enough for reading, so a Reddit app's id and secret are needed.

Usage:

    source = RedditSource()                # reads REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET
    for ev in source.search("5G towers coronavirus", k=3, before=date(2021, 1, 1)):
        print(ev.url, ev.metadata["subreddit"], ev.metadata["score"])
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, Field, RootModel

from verity.domain import Evidence
from verity.errors import SourceUnavailableError
from verity.http import http_limits_from_env, make_http_client
from verity.sources.base import apply_filters, domain_of, is_excluded
from verity.sources.websearch.common import (
    Payload,
    capped,
    check_query,
    clean_text,
    fetch_count,
    fit_query,
    http_client,
    parse_payload,
    rank_score,
    read_key,
    request_json,
)

_Model = TypeVar("_Model", bound=BaseModel)

log = logging.getLogger(__name__)

SERVICE = "Reddit"
# Application-only OAuth: POST grant_type=client_credentials to the token endpoint with the
# app's id and secret as HTTP Basic auth, then call oauth.reddit.com with the bearer token
# (https://github.com/reddit-archive/reddit/wiki/OAuth2#application-only-oauth).
TOKEN_ENDPOINT = "https://www.reddit.com/api/v1/access_token"
API = "https://oauth.reddit.com"
# GET /search: `q` is "a string no longer than 512 characters", `limit` at most 100
# (https://www.reddit.com/dev/api/#GET_search).
MAX_QUERY_CHARS = 512
MAX_LIMIT = 100
# Our own bounds: comments quoted per post, and the size of what is quoted.
TOP_COMMENTS = 3
MAX_TITLE_CHARS = 300
MAX_POST_CHARS = 4000
MAX_COMMENT_CHARS = 1000
MAX_META_CHARS = 200
# A token is renewed this many seconds before Reddit says it expires.
TOKEN_MARGIN = 60.0
# Authors whose karma is remembered per source; beyond that the memory starts afresh.
MAX_REMEMBERED_AUTHORS = 10_000
_POST_ID = re.compile(r"[a-z0-9]{1,13}")  # base-36 ids
_USERNAME = re.compile(r"[A-Za-z0-9_-]{3,20}")  # Reddit user names: 3-20 of these
_PERMALINK = re.compile(r"/r/[A-Za-z0-9_]{2,21}/comments/[a-z0-9]{1,13}/[A-Za-z0-9_%-]*/?")
_GONE = frozenset({"[deleted]", "[removed]"})


def _default_user_agent() -> str:
    # Reddit's API rules ask for "<platform>:<app ID>:<version string> (by /u/<username>)"
    # (https://github.com/reddit-archive/reddit/wiki/API); REDDIT_USER_AGENT may name the
    # user who runs it.
    try:
        release = version("verity")
    except PackageNotFoundError:
        release = "0"
    return f"python:verity:{release} (+https://github.com/verity-fact-checking/verity)"


class _Token(Payload):
    access_token: str | None = None
    expires_in: float = 3600.0
    error: str | None = None


class _Post(Payload):
    id: str = ""
    title: str | None = None
    selftext: str | None = None
    url: str | None = None
    permalink: str | None = None
    subreddit: str | None = None
    author: str | None = None
    score: int | None = None
    num_comments: int | None = None
    created_utc: float | None = None
    is_self: bool = False


class _PostChild(Payload):
    kind: str = ""
    data: _Post = Field(default_factory=_Post)


class _PostPage(Payload):
    children: list[_PostChild] = Field(default_factory=list)


class _PostListing(Payload):
    data: _PostPage = Field(default_factory=_PostPage)


class _Comment(Payload):
    body: str | None = None
    author: str | None = None
    score: int | None = None
    created_utc: float | None = None


class _CommentChild(Payload):
    # "t1" for a comment, "more" for the stub standing for those not sent.
    kind: str = ""
    data: _Comment = Field(default_factory=_Comment)


class _CommentPage(Payload):
    children: list[_CommentChild] = Field(default_factory=list)


class _CommentListing(Payload):
    data: _CommentPage = Field(default_factory=_CommentPage)


class _Thread(RootModel[list[_CommentListing]]):
    """The answer of ``/comments/{id}``: the post's listing, then its comments' listing."""


class _UserData(Payload):
    link_karma: int | None = None
    comment_karma: int | None = None


class _User(Payload):
    data: _UserData = Field(default_factory=_UserData)


class RedditSource:
    """Reddit posts from the search API, each quoted with its top comments.

    ``search`` asks ``GET /search`` (``sort=relevance``, ``t=all``, ``type=link``) for the
    posts, keeps those not dated on or after the cutoff and not linking to an excluded
    domain, and for each of the first ``k`` fetches its ``top_comments`` best comments
    (``/comments/{id}?sort=top``; comments written on or after the cutoff are left out)
    and its author's karma (``/user/{name}/about``, remembered per source). So one search
    costs at most ``1 + 2k`` requests, plus one for a token about once a day. A failing
    comment or karma request only leaves the comments or the karma out.

    Reddit's search has no date range, so the cutoff is enforced on ``created_utc`` only.
    A passage's ``text`` is the post's title, its self text or ``Link: URL``, then one
    line per comment (``Comment by u/NAME (N points): ...``); ``url`` is the permalink,
    ``published`` the post's UTC date, ``score`` 1/(rank+1) in Reddit's order, and
    ``metadata`` holds ``subreddit``, ``author``, ``author_karma`` (link plus comment
    karma, when known), ``score`` and ``num_comments`` (as of today, not of the cutoff),
    and ``link_domain`` for link posts. Excluding ``reddit.com`` returns nothing.

    The app's id and secret are read from ``REDDIT_CLIENT_ID`` and ``REDDIT_CLIENT_SECRET``
    at construction (`MissingKeyError` when unset). The token request never goes through
    verity's HTTP cache, which would store the token. The User-Agent follows Reddit's
    rules; set ``REDDIT_USER_AGENT`` to add your Reddit user name as they ask.

        source = RedditSource(top_comments=0)          # posts only: one request a search
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        client_id_env: str = "REDDIT_CLIENT_ID",
        client_secret_env: str = "REDDIT_CLIENT_SECRET",
        user_agent: str | None = None,
        top_comments: int = TOP_COMMENTS,
        name: str = "reddit",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_id = read_key(SERVICE, client_id_env)
        self._secret = read_key(SERVICE, client_secret_env)
        self.client_id_env = client_id_env
        self.client_secret_env = client_secret_env
        self.user_agent = (
            user_agent or os.environ.get("REDDIT_USER_AGENT", "").strip() or _default_user_agent()
        )
        self.top_comments = max(0, top_comments)
        self.name = name
        self._client = http_client(client)
        # Tests give one client for everything; otherwise the token goes through a client
        # without the cache, made when first needed.
        self._auth_client = client
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = float("-inf")
        self._karma: dict[str, int | None] = {}

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` posts, best first, none created on or after ``before``."""
        text = check_query(query, k)
        if is_excluded("https://www.reddit.com/", exclude_domains):
            return []
        params = {
            # Cut at a word boundary to Reddit's length; 512 characters hold fewer words.
            "q": fit_query(text, (), max_chars=MAX_QUERY_CHARS, max_words=MAX_QUERY_CHARS).text,
            "limit": fetch_count(k, before=before, exclude_domains=exclude_domains, cap=MAX_LIMIT),
            "sort": "relevance",
            "t": "all",
            "type": "link",
            # Without it Reddit sends text with &, < and > escaped as HTML entities.
            "raw_json": 1,
        }
        listing = self._get(_PostListing, "/search", params)
        chosen: list[tuple[int, _Post]] = []
        for rank, child in enumerate(listing.data.children):
            post = child.data
            if child.kind == "t3" and _usable(post, before, exclude_domains):
                chosen.append((rank, post))
                if len(chosen) >= k:
                    break
        results = [self._evidence(post, rank, before) for rank, post in chosen]
        return apply_filters(
            (ev for ev in results if ev is not None),
            k,
            before=before,
            exclude_domains=exclude_domains,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return this source's configuration; credentials appear only as variable names."""
        return {
            "type": "reddit",
            "name": self.name,
            "top_comments": self.top_comments,
            "client_id_env": self.client_id_env,
            "client_secret_env": self.client_secret_env,
        }

    # -- requests ----------------------------------------------------------------------------

    @property
    def _credentials(self) -> str:
        return f"{self.client_id_env} and {self.client_secret_env}"

    def _bearer(self, *, renew: bool = False) -> str:
        with self._lock:
            if not renew and self._token is not None and self._clock() < self._expires:
                return self._token
            if self._auth_client is None:
                self._auth_client = make_http_client(
                    cache=False, **http_limits_from_env(os.environ)
                )
            payload = request_json(
                self._auth_client,
                SERVICE,
                "POST",
                TOKEN_ENDPOINT,
                key_env=self._credentials,
                auth=(self._client_id, self._secret),
                data={"grant_type": "client_credentials"},
                headers={"User-Agent": self.user_agent, "Accept": "application/json"},
            )
            answer = parse_payload(_Token, payload, SERVICE)
            if not answer.access_token:
                reason = clean_text(answer.error)[:MAX_META_CHARS] or "no reason given"
                raise SourceUnavailableError(f"{SERVICE} gave no access token: {reason}")
            self._token = answer.access_token
            self._expires = self._clock() + max(answer.expires_in - TOKEN_MARGIN, 0.0)
            return self._token

    def _get(self, model: type[_Model], path: str, params: dict[str, Any]) -> _Model:
        """GET an API path with the bearer token; a token refused with 401 is renewed once."""
        try:
            payload = self._request(path, params, self._bearer())
        except SourceUnavailableError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == 401):
                raise
            payload = self._request(path, params, self._bearer(renew=True))
        return parse_payload(model, payload, SERVICE)

    def _request(self, path: str, params: dict[str, Any], token: str) -> Any:
        return request_json(
            self._client,
            SERVICE,
            "GET",
            f"{API}{path}",
            key_env=self._credentials,
            params=params,
            headers={
                "Authorization": f"bearer {token}",
                "User-Agent": self.user_agent,
                "Accept": "application/json",
            },
        )

    # -- passages ----------------------------------------------------------------------------

    def _evidence(self, post: _Post, rank: int, before: date | None) -> Evidence | None:
        title = capped(clean_text(post.title), MAX_TITLE_CHARS)
        if not title:
            return None
        body = clean_text(post.selftext)
        lines = [title]
        if not post.is_self and post.url:
            lines.append(f"Link: {capped(post.url.strip(), MAX_META_CHARS)}")
        elif body and body not in _GONE:
            lines.append(capped(body, MAX_POST_CHARS))
        comments = self._comments(post.id, before)
        lines.extend(comments)
        author = post.author if post.author and _USERNAME.fullmatch(post.author) else ""
        metadata: dict[str, str | int | float | bool] = {
            "subreddit": capped(clean_text(post.subreddit), MAX_META_CHARS),
            "author": author or "[deleted]",
            "score": post.score or 0,
            "num_comments": post.num_comments or 0,
            "comments_quoted": len(comments),
        }
        karma = self._author_karma(author) if author else None
        if karma is not None:
            metadata["author_karma"] = karma
        if not post.is_self and post.url:
            metadata["link_domain"] = capped(domain_of(post.url), MAX_META_CHARS)
        permalink = (post.permalink or "").strip()
        url = (
            f"https://www.reddit.com{permalink}"
            if _PERMALINK.fullmatch(permalink)
            else f"https://www.reddit.com/comments/{post.id}/"
        )
        return Evidence(
            text="\n".join(lines),
            title=title,
            source=self.name,
            url=url,
            id=post.id,
            score=rank_score(rank),
            published=_utc_date(post.created_utc),
            metadata=metadata,
        )

    def _comments(self, post_id: str, before: date | None) -> list[str]:
        """Lines quoting the post's best comments written before the cutoff; [] on failure."""
        if self.top_comments == 0:
            return []
        params = {
            "sort": "top",
            # A few more than needed: some are stubs, removed, or too late.
            "limit": self.top_comments + 5,
            "depth": 1,
            "raw_json": 1,
        }
        try:
            thread = self._get(_Thread, f"/comments/{post_id}", params)
        except SourceUnavailableError as exc:
            log.debug("Reddit comments of %s left out: %s", post_id, exc)
            return []
        listings = thread.root
        if len(listings) < 2:
            return []
        lines: list[str] = []
        for child in listings[1].data.children:
            comment = child.data
            body = clean_text(comment.body)
            written = _utc_date(comment.created_utc)
            if child.kind != "t1" or not body or body in _GONE:
                continue
            if before is not None and (written is None or written >= before):
                continue  # a comment of unknown date could be from after the cutoff
            who = comment.author if comment.author and _USERNAME.fullmatch(comment.author) else ""
            lines.append(
                f"Comment by u/{who or '[deleted]'} ({comment.score or 0} points): "
                + capped(body, MAX_COMMENT_CHARS)
            )
            if len(lines) >= self.top_comments:
                break
        return lines

    def _author_karma(self, author: str) -> int | None:
        """The author's link plus comment karma, None when it cannot be had."""
        if author in self._karma:
            return self._karma[author]
        try:
            user = self._get(_User, f"/user/{author}/about", {"raw_json": 1})
            parts = (user.data.link_karma, user.data.comment_karma)
            karma = None if all(p is None for p in parts) else sum(p or 0 for p in parts)
        except SourceUnavailableError as exc:
            log.debug("Reddit karma of an author left out: %s", exc)
            return None  # not remembered: the next search may try again
        if len(self._karma) >= MAX_REMEMBERED_AUTHORS:
            self._karma.clear()
        self._karma[author] = karma
        return karma


def _usable(post: _Post, before: date | None, exclude_domains: Sequence[str]) -> bool:
    """Whether a post may be quoted: a valid id, before the cutoff, not linking out of bounds."""
    if not _POST_ID.fullmatch(post.id):
        return False
    created = _utc_date(post.created_utc)
    if before is not None and created is not None and created >= before:
        return False
    # A link post quotes its target's headline: an excluded site must not come in this way.
    return post.is_self or not is_excluded(post.url, exclude_domains)


def _utc_date(timestamp: float | None) -> date | None:
    if timestamp is None:
        return None
    try:
        return datetime.fromtimestamp(timestamp, UTC).date()
    except (OverflowError, OSError, ValueError):
        return None
