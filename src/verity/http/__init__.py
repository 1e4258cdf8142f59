"""The one HTTP layer of verity: a polite, bounded, retrying, caching ``httpx.Client``.

Every remote source builds its client here, or takes one from the caller (tests pass an
``httpx.MockTransport``). The client is a stack of small transports, one module each::

    RedirectTransport     follows redirects itself; every hop must go to a public address
                          (or an allowed host), and credentials never cross to another origin
                          (redirects.py, guard.py)
      CacheTransport      a 200 or a redirect seen within the TTL is served from disk
                          (cache.py)
        RetryTransport    429, 5xx, timeouts and broken connections are retried, with jitter
                          (retry.py)
          LimitTransport  at most ``max_bytes`` of body, the whole exchange within ``deadline``
                          (limits.py)
            PinnedTransport
                          httpx's connection pool, but each connection goes to an address
                          checked in the very lookup it connects by (pinned.py, pool.py)

The redirect follower sits on top so that every hop, including one answered from the
cache, passes the address check; the cache sits outside the retries, so a hit never
touches the network and a retried request is stored once, when it finally succeeds; the
limits sit under the retries, so each attempt has the whole deadline and an answer over
the limit never reaches the cache. `make_http_client` (clients.py) builds the stack, with
the limits' defaults and the ``VERITY_HTTP_*`` variables that change them; errors.py holds
the errors each layer raises.

The address check is made twice, on purpose. The redirect follower's is the early one: a
refused URL never reaches the cache or the retries, and its message names the URL. The
pinned transport's is the one that holds: httpx would look the name up again to connect,
and a name server may answer differently the second time (DNS rebinding), so the
connection makes its own lookup (``resolve``, once per new connection, as httpx did),
refuses it when any address is not public, and opens the socket to a vetted address
itself; TLS and the ``Host`` header still use the name. A pooled connection is reused
without a new lookup. No proxy is used: httpx reads ``HTTP(S)_PROXY`` only for a client
built without a transport, and every client here is built with one.

    client = make_http_client()
    response = client.get("https://en.wikipedia.org/api/rest_v1/page/summary/Eiffel_Tower")

The cache, in short (cache.py has it in full): only a 200 in a media type the request
asked for, and the redirects of a chain that ended in one, are stored; an entry is keyed
on a SHA-256 digest of the method, the full URL, the body and a few request headers (so
no secret is stored), and is a miss once older than ``ttl``; the URL kept beside it has
its password and credential-like query values masked. The file is SQLite in WAL mode,
shared by threads and processes; a failing read or write is skipped, and a file that is
not a database turns the cache off with one logged warning rather than failing a request.
"""

from verity.http.cache import DEFAULT_VARY_HEADERS, CacheTransport
from verity.http.clients import (
    ENV_BACKOFF,
    ENV_DEADLINE,
    ENV_MAX_BYTES,
    ENV_RETRIES,
    USER_AGENT,
    PooledClient,
    configured_http_client,
    http_limits_from_env,
    make_http_client,
    shared_http_client,
)
from verity.http.errors import (
    BlockedTargetError,
    DeadlineExceededError,
    RedirectError,
    ResponseTooLargeError,
)
from verity.http.guard import TargetGuard, no_lookup, resolve_host
from verity.http.limits import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_BYTES,
    AsyncLimitTransport,
    LimitTransport,
)
from verity.http.pinned import (
    AsyncPinnedBackend,
    AsyncPinnedTransport,
    PinnedBackend,
    PinnedTransport,
)
from verity.http.pool import AsyncPoolTransport, PoolTransport
from verity.http.redirects import DEFAULT_MAX_REDIRECTS, AsyncRedirectTransport, RedirectTransport
from verity.http.retry import RetryTransport, full_jitter, retry_after_seconds, retry_delay

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_VARY_HEADERS",
    "ENV_BACKOFF",
    "ENV_DEADLINE",
    "ENV_MAX_BYTES",
    "ENV_RETRIES",
    "USER_AGENT",
    "AsyncLimitTransport",
    "AsyncPinnedBackend",
    "AsyncPinnedTransport",
    "AsyncPoolTransport",
    "AsyncRedirectTransport",
    "BlockedTargetError",
    "CacheTransport",
    "DeadlineExceededError",
    "LimitTransport",
    "PinnedBackend",
    "PinnedTransport",
    "PoolTransport",
    "PooledClient",
    "RedirectError",
    "RedirectTransport",
    "ResponseTooLargeError",
    "RetryTransport",
    "TargetGuard",
    "configured_http_client",
    "full_jitter",
    "http_limits_from_env",
    "make_http_client",
    "no_lookup",
    "resolve_host",
    "retry_after_seconds",
    "retry_delay",
    "shared_http_client",
]
