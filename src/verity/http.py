"""The one HTTP layer of verity: a polite, retrying, caching ``httpx.Client``.

Every remote source builds its client here, or takes one from the caller (tests pass an
``httpx.MockTransport``). The client is a stack of small transports::

    CacheTransport        a 200 answer seen within the TTL is served from disk, no network
      RetryTransport      429 and 5xx are retried with exponential backoff
        HTTPTransport     httpx's own transport (it retries failed connects by itself)

The cache sits outside the retries, so a hit never touches the network and a retried
request is stored once, when it finally succeeds.

    client = make_http_client()
    response = client.get("https://en.wikipedia.org/api/rest_v1/page/summary/Eiffel_Tower")

Cache behaviour, in full:

* Only answers with status 200 are stored; errors, redirects and partial content never are.
* An entry is keyed on the method, the full URL (with its query string), the request body
  (search APIs such as Serper and Tavily take the query in a POST body) and the values of a
  few request headers that can change the answer (``vary_headers``). The key is a SHA-256
  digest: header values, API keys among them, only ever enter it hashed, so the file holds
  no secret. The URL is stored beside the entry for inspection, with credential-like query
  parameters (``key``, ``api_key``, ``token``...) masked.
* An entry older than ``ttl`` seconds is a miss and is replaced by the next success.
* The file is SQLite in WAL mode, shared by threads (one connection behind a lock) and by
  processes; delete it (with its ``-wal`` and ``-shm`` files) to empty the cache. A
  broken cache file degrades to no cache, with a logged warning, rather than failing the
  request.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from verity import paths

__all__ = [
    "DEFAULT_VARY_HEADERS",
    "USER_AGENT",
    "CacheTransport",
    "RetryTransport",
    "make_http_client",
    "shared_http_client",
]

log = logging.getLogger(__name__)


def _package_version() -> str:
    try:
        return version("verity")
    except PackageNotFoundError:
        return "0"


USER_AGENT = (
    f"verity/{_package_version()} "
    "(+https://github.com/verity-fact-checking/verity; automated fact-checking research)"
)

#: Request headers whose value can change the answer, so they are part of the cache key.
#: The API-key headers are here so that an answer is only reused for the same account;
#: like every header value they enter the key hashed and are never stored.
DEFAULT_VARY_HEADERS = (
    "accept",
    "accept-language",
    "authorization",
    "x-api-key",
    "x-subscription-token",
)

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_SECRET_PARAMS = frozenset({"key", "api_key", "apikey", "access_token", "token", "auth"})
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    status INTEGER NOT NULL,
    headers TEXT NOT NULL,
    body BLOB NOT NULL,
    stored_at REAL NOT NULL
)
"""


class RetryTransport(httpx.BaseTransport):
    """Retry answers that say "try again later": 429 and 5xx, never other 4xx.

    The wait before retry ``n`` (from 0) is ``backoff * 2**n`` seconds, or the server's
    ``Retry-After`` when it sends one, and never more than ``max_delay``. After
    ``retries`` retries the last answer is returned as it is, for the caller to map.

        transport = RetryTransport(httpx.HTTPTransport(), retries=3, backoff=0.5)
        client = httpx.Client(transport=transport)
    """

    def __init__(
        self,
        inner: httpx.BaseTransport,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        *,
        max_delay: float = 30.0,
    ) -> None:
        if retries < 0 or backoff < 0 or max_delay < 0:
            raise ValueError("retries, backoff and max_delay must not be negative")
        self._inner = inner
        self._retries = retries
        self._backoff = backoff
        self._sleep = sleep
        self._max_delay = max_delay

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request, retrying while the answer is retryable and retries remain."""
        attempt = 0
        while True:
            response = self._inner.handle_request(request)
            if response.status_code not in _RETRY_STATUSES or attempt >= self._retries:
                return response
            delay = self._delay(attempt, response)
            # Free the connection before waiting; the body of a 429/5xx is not needed.
            response.close()
            self._sleep(delay)
            attempt += 1

    def _delay(self, attempt: int, response: httpx.Response) -> float:
        wait = _retry_after(response.headers.get("retry-after"))
        if wait is None:
            wait = self._backoff * (2**attempt)
        return min(max(wait, 0.0), self._max_delay)

    def close(self) -> None:
        """Close the wrapped transport."""
        self._inner.close()


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


class CacheTransport(httpx.BaseTransport):
    """Serve repeated requests from an on-disk SQLite cache of successful answers.

    See the module documentation for what is stored and how entries are keyed. ``path``
    defaults to ``verity.paths.cache_path("http", "cache.sqlite")``; the file is opened on
    the first request, not at construction.

        transport = CacheTransport(RetryTransport(httpx.HTTPTransport()), ttl=3600)
        client = httpx.Client(transport=transport)
        client.get("https://example.org/")   # network
        client.get("https://example.org/")   # disk; response.extensions["verity_cache"] == "hit"
    """

    def __init__(
        self,
        inner: httpx.BaseTransport,
        path: Path | None = None,
        ttl: float = 86400,
        *,
        vary_headers: Iterable[str] = DEFAULT_VARY_HEADERS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._inner = inner
        self._path = path
        self._ttl = ttl
        self._vary = tuple(sorted({name.lower() for name in vary_headers}))
        self._clock = clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    @property
    def path(self) -> Path:
        """Where the cache file lives."""
        if self._path is None:
            self._path = paths.cache_path("http", "cache.sqlite")
        return self._path

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer from the cache when a fresh entry exists, else send and store a 200."""
        if request.method not in ("GET", "POST"):
            return self._inner.handle_request(request)
        key = self._key(request)
        cached = self._load(key)
        if cached is not None:
            return cached
        response = self._inner.handle_request(request)
        if response.status_code != 200 or not isinstance(response.stream, httpx.SyncByteStream):
            return response
        try:
            # The raw (still content-encoded) bytes, so the stored headers stay truthful.
            body = b"".join(response.stream)
        finally:
            response.close()
        self._store(key, request, response, body)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(body),
            extensions={
                name: response.extensions[name]
                for name in ("http_version", "reason_phrase")
                if name in response.extensions
            },
        )

    def close(self) -> None:
        """Close the cache file and the wrapped transport."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        self._inner.close()

    def _key(self, request: httpx.Request) -> str:
        digest = hashlib.sha256()
        parts = [request.method.encode(), str(request.url).encode()]
        for name in self._vary:
            if name in request.headers:
                value = hashlib.sha256(request.headers[name].encode()).hexdigest()
                parts.append(f"{name}:{value}".encode())
        parts.append(request.read())
        for part in parts:
            # Length-prefixed, so that no two different requests concatenate alike.
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        return digest.hexdigest()

    def _connection(self) -> sqlite3.Connection:
        # Called with the lock held.
        if self._db is None:
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            db.commit()
            self._db = db
        return self._db

    def _load(self, key: str) -> httpx.Response | None:
        with self._lock:
            if self._broken:
                return None
            try:
                db = self._connection()
                row = db.execute(
                    "SELECT status, headers, body, stored_at FROM responses WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:
                self._give_up(exc)
                return None
        if row is None:
            return None
        status, headers, body, stored_at = row
        if self._clock() - stored_at > self._ttl:
            return None
        return httpx.Response(
            status,
            headers=[(name, value) for name, value in json.loads(headers)],
            stream=httpx.ByteStream(body),
            extensions={"verity_cache": "hit"},
        )

    def _store(
        self, key: str, request: httpx.Request, response: httpx.Response, body: bytes
    ) -> None:
        # Cookies belong to a session, not to the answer.
        headers = [
            [name, value]
            for name, value in response.headers.multi_items()
            if name.lower() != "set-cookie"
        ]
        row = (
            key,
            request.method,
            _masked_url(request.url),
            response.status_code,
            json.dumps(headers),
            body,
            self._clock(),
        )
        with self._lock:
            if self._broken:
                return
            try:
                db = self._connection()
                db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)", row)
                db.commit()
            except sqlite3.Error as exc:
                self._give_up(exc)

    def _give_up(self, exc: sqlite3.Error) -> None:
        # Called with the lock held. A cache must never be the reason a search fails.
        self._broken = True
        log.warning("HTTP cache %s disabled: %s", self._path, exc)


def _masked_url(url: httpx.URL) -> str:
    """Replace the values of credential-like query parameters in the URL by ``***``."""
    parts = urlsplit(str(url))
    if not parts.query:
        return str(url)
    query = [
        (name, "***" if name.lower() in _SECRET_PARAMS else value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(query, safe="*")))


def make_http_client(
    *,
    transport: httpx.BaseTransport | None = None,
    cache: bool = True,
    cache_path: Path | None = None,
    ttl_seconds: float = 86400,
    timeout: float = 20.0,
    retries: int = 3,
    backoff: float = 0.5,
    user_agent: str = USER_AGENT,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Client:
    """Build the client every remote source uses: descriptive User-Agent, retries, cache.

    ``transport`` replaces the network (tests pass ``httpx.MockTransport``); retries and
    the cache wrap it all the same. ``cache=False`` leaves the cache out entirely.

        client = make_http_client(ttl_seconds=3600)
        offline = make_http_client(transport=httpx.MockTransport(handler), cache=False)
    """
    inner = transport if transport is not None else httpx.HTTPTransport(retries=retries)
    stack: httpx.BaseTransport = RetryTransport(inner, retries, backoff, sleep)
    if cache:
        stack = CacheTransport(stack, cache_path, ttl_seconds)
    return httpx.Client(
        transport=stack,
        timeout=timeout,
        headers={"User-Agent": user_agent},
        follow_redirects=True,
    )


_shared: httpx.Client | None = None
_shared_lock = threading.Lock()


def shared_http_client() -> httpx.Client:
    """The process-wide client that remote sources use unless given their own.

    One client means one connection pool, one cache and one rate of retries for every
    source in a run.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = make_http_client()
        return _shared
