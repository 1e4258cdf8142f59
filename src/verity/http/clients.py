"""The client builders: the whole stack in one ``httpx.Client``, configured once.

`make_http_client` builds the stack of the package documentation; its arguments, with
their defaults (the process-wide `shared_http_client` and `configured_http_client` read the
environment variables, and a value out of shape there is a `verity.errors.ConfigError`):

* ``max_bytes`` (``VERITY_HTTP_MAX_BYTES``, 10 MiB) and ``deadline``
  (``VERITY_HTTP_DEADLINE``, 90 s): see `verity.http.limits`.
* ``timeout`` (20 s): httpx's limit on each connect, read and write.
* ``retries`` (``VERITY_HTTP_RETRIES``, 3) and ``backoff`` (``VERITY_HTTP_BACKOFF``,
  0.5 s): see `verity.http.retry`.
* ``max_redirects`` (5): more, or a loop, is a `RedirectError`.
* ``allowed_hosts``: the non-public hosts the user configured (see `verity.http.guard`).

    client = make_http_client()
    response = client.get("https://en.wikipedia.org/api/rest_v1/page/summary/Eiffel_Tower")
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import httpx

from verity.errors import ConfigError
from verity.http.cache import CacheTransport
from verity.http.guard import TargetGuard, no_lookup, resolve_host
from verity.http.limits import DEFAULT_DEADLINE, DEFAULT_MAX_BYTES, LimitTransport
from verity.http.pinned import PinnedTransport
from verity.http.redirects import DEFAULT_MAX_REDIRECTS, RedirectTransport
from verity.http.retry import RetryTransport, full_jitter

__all__ = [
    "ENV_BACKOFF",
    "ENV_DEADLINE",
    "ENV_MAX_BYTES",
    "ENV_RETRIES",
    "USER_AGENT",
    "PooledClient",
    "configured_http_client",
    "http_limits_from_env",
    "make_http_client",
    "shared_http_client",
]


def _package_version() -> str:
    try:
        return version("verity")
    except PackageNotFoundError:
        return "0"


USER_AGENT = (
    f"verity/{_package_version()} "
    "(+https://github.com/verity-fact-checking/verity; automated fact-checking research)"
)

#: Environment variables read by `shared_http_client` (and `configured_http_client`).
ENV_MAX_BYTES = "VERITY_HTTP_MAX_BYTES"
ENV_DEADLINE = "VERITY_HTTP_DEADLINE"
ENV_RETRIES = "VERITY_HTTP_RETRIES"
ENV_BACKOFF = "VERITY_HTTP_BACKOFF"


def _lookup_for(transport: object) -> Callable[[str], Sequence[str]]:
    return resolve_host if transport is None else no_lookup


def _close_transports(transports: list[httpx.BaseTransport]) -> None:
    # What httpx.Client.close does, without the client (which is gone, or going).
    for transport in transports:
        with contextlib.suppress(Exception):
            transport.close()


class PooledClient(httpx.Client):
    """An ``httpx.Client`` that closes its pooled connections when it is collected.

    A source or model backend owns its client for as long as it lives and has no
    ``close`` of its own; this one lets its sockets go with it (the openai SDK does the
    same for the clients it makes), and at the latest when the interpreter exits.

        client = PooledClient(transport=httpx.HTTPTransport(), timeout=20)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A finaliser, not __del__: a client still alive at interpreter exit (the shared
        # one, a source cached for the whole process) would be collected only once this
        # module's globals were torn down, and could close nothing. weakref.finalize runs
        # at exit, before any module is torn down, too. It holds the transports, never
        # the client, which it would keep alive.
        transports = [self._transport, *(t for t in self._mounts.values() if t is not None)]
        weakref.finalize(self, _close_transports, transports)


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
    max_bytes: int = DEFAULT_MAX_BYTES,
    deadline: float | None = DEFAULT_DEADLINE,
    allowed_hosts: Iterable[str] = (),
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    credential_headers: Iterable[str] = (),
    resolve: Callable[[str], Sequence[str]] | None = None,
    jitter: Callable[[float], float] = full_jitter,
) -> httpx.Client:
    """Build the client every remote source uses: the stack of `verity.http`.

    ``transport`` replaces the network (tests pass ``httpx.MockTransport``); the limits,
    retries, cache and redirect checks wrap it all the same. Without one, the network is
    a `verity.http.pinned.PinnedTransport`: each connection goes to an address vetted in
    the very lookup it connects by. ``cache=False`` leaves the cache out entirely.
    ``allowed_hosts`` are the non-public hosts the user configured; ``credential_headers``
    names key headers beyond those recognised by name. ``resolve`` looks names up, for the
    address check and for each connection: by default `resolve_host` on the real network
    and `no_lookup` with an injected ``transport``, which decides itself where requests go
    (address literals are checked either way).

        client = make_http_client(ttl_seconds=3600)
        searx = make_http_client(allowed_hosts=["localhost"])
        offline = make_http_client(transport=httpx.MockTransport(handler), cache=False)
    """
    guard = TargetGuard(allowed_hosts, resolve=resolve or _lookup_for(transport))
    # On the network, each connection goes to an address the guard vetted in the lookup
    # it connects by (pinned.py): the check above every hop cannot be rebound under it.
    inner = transport if transport is not None else PinnedTransport(guard)
    stack: httpx.BaseTransport = LimitTransport(inner, max_bytes=max_bytes, deadline=deadline)
    stack = RetryTransport(stack, retries, backoff, sleep, jitter=jitter)
    if cache:
        stack = CacheTransport(stack, cache_path, ttl_seconds)
    stack = RedirectTransport(
        stack,
        guard=guard,
        max_redirects=max_redirects,
        credential_headers=credential_headers,
    )
    return PooledClient(
        transport=stack,
        timeout=timeout,
        headers={"User-Agent": user_agent},
        # RedirectTransport follows them, checking every hop.
        follow_redirects=False,
    )


# Each variable: the argument it sets, how it is read, which values it accepts, in words.
_ENV_ARGUMENTS: tuple[
    tuple[str, str, Callable[[str], float], Callable[[float], bool], str], ...
] = (
    (ENV_MAX_BYTES, "max_bytes", int, lambda v: v >= 1, "a whole number of bytes, at least 1"),
    (ENV_DEADLINE, "deadline", float, lambda v: 0 < v < math.inf, "a number of seconds above 0"),
    (ENV_RETRIES, "retries", int, lambda v: v >= 0, "a whole number, 0 or more"),
    (ENV_BACKOFF, "backoff", float, lambda v: 0 <= v < math.inf, "a number of seconds, 0 or more"),
)


def http_limits_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """`make_http_client` arguments from the ``VERITY_HTTP_*`` variables that are set.

    ``VERITY_HTTP_MAX_BYTES``, ``VERITY_HTTP_DEADLINE``, ``VERITY_HTTP_RETRIES`` and
    ``VERITY_HTTP_BACKOFF``; a value out of shape is a `ConfigError` naming the variable.

        http_limits_from_env({"VERITY_HTTP_MAX_BYTES": "1048576"})   # {'max_bytes': 1048576}
    """
    found: dict[str, Any] = {}
    for var, argument, read, accepts, shape in _ENV_ARGUMENTS:
        raw = env.get(var, "").strip()
        if not raw:
            continue
        try:
            value = read(raw)
        except ValueError:
            value = math.nan
        if not accepts(value):
            raise ConfigError(f"{var} must be {shape}, got {raw!r}")
        found[argument] = value
    return found


def configured_http_client(*, allowed_hosts: Iterable[str] = ()) -> httpx.Client:
    """A new client with the defaults and the ``VERITY_HTTP_*`` limits of the environment.

    For a source that must allow a host of its own (SearXNG on localhost); every other
    source shares `shared_http_client`.

        client = configured_http_client(allowed_hosts=["localhost"])
    """
    return make_http_client(allowed_hosts=allowed_hosts, **http_limits_from_env(os.environ))


_shared: httpx.Client | None = None
_shared_lock = threading.Lock()


def shared_http_client() -> httpx.Client:
    """The process-wide client that remote sources use unless given their own.

    One client means one connection pool, one cache and one rate of retries for every
    source in a run. Its limits come from ``VERITY_HTTP_MAX_BYTES`` and
    ``VERITY_HTTP_DEADLINE`` when set (a bad value is a `ConfigError`).
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = configured_http_client()
        return _shared
