"""Connections pinned to the address that was checked, so DNS rebinding gets no request.

`TargetGuard.check` judges a name by one lookup; a connect that looked the name up again
could be told something else (a name server that answers a public address first and a
loopback one a moment later), and the request would go where the check never looked.
So the lookup the connection goes by is made here, in an httpcore network backend:
`PinnedBackend.connect_tcp` asks the guard for the host's addresses
(`TargetGuard.addresses`: one call of its ``resolve``, every answer vetted, the host's
``allowed_hosts`` honoured), is refused before any socket is opened when one of them is
not public, and opens the socket to a vetted address itself, trying them in the
resolver's order. Nothing else resolves the name on the way to the socket.

TLS still goes by the name: httpcore starts TLS on the returned stream with the URL's
host as ``server_hostname``, so SNI and the certificate check are the name's, and the
``Host`` header is the URL's as always. Connections are pooled as by httpx's own transport
(up to 100, 20 kept alive for 5 s): one lookup per new connection, none per request
reusing one, as when httpx resolved the name itself. `PinnedTransport` and
`AsyncPinnedTransport` are those pools as httpx transports (`verity.http.pool`).

No proxy is involved: httpx reads ``HTTP_PROXY`` and ``HTTPS_PROXY`` only for a client
built without a transport, and every verity client is built with one, so requests have
always gone straight to the target. Should a proxy be configured one day, it is a host
the user named (allowed as such); the target check stays at the redirect layer, and the
proxy, which resolves the target itself, would have to be trusted with the pinning.

    transport = PinnedTransport(TargetGuard(allowed_hosts=["localhost"]))
    client = httpx.Client(transport=RedirectTransport(transport, guard=transport.guard))
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import anyio.to_thread
import httpcore
import httpx

from verity.http.guard import TargetGuard
from verity.http.pool import AsyncPoolTransport, PoolTransport

__all__ = ["AsyncPinnedBackend", "AsyncPinnedTransport", "PinnedBackend", "PinnedTransport"]

# httpx's default pool size and keep-alive (httpx.HTTPTransport's DEFAULT_LIMITS).
_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
_SocketOptions = Iterable[httpcore.SOCKET_OPTION] | None
_Stream = TypeVar("_Stream")
_CONNECT_ERRORS = (httpcore.ConnectError, httpcore.ConnectTimeout)


def _unresolved(host: str) -> httpcore.ConnectError:
    # What a failed lookup at connect has always been: a ConnectError, retried above.
    return httpcore.ConnectError(f"{host} does not resolve to any address")


def _first(addresses: list[str], host: str, connect: Callable[[str], _Stream]) -> _Stream:
    """The stream to the first address that accepts; the last failure when none does."""
    failure: Exception = _unresolved(host)
    for address in addresses:
        try:
            return connect(address)
        except _CONNECT_ERRORS as exc:
            failure = exc
    raise failure


async def _afirst(
    addresses: list[str], host: str, connect: Callable[[str], Awaitable[_Stream]]
) -> _Stream:
    failure: Exception = _unresolved(host)
    for address in addresses:
        try:
            return await connect(address)
        except _CONNECT_ERRORS as exc:
            failure = exc
    raise failure


class PinnedBackend(httpcore.NetworkBackend):
    """Open each connection to an address ``guard`` vetted in that same lookup.

    ``inner`` opens the socket to the address (httpcore's own ``SyncBackend``).

        pool = httpcore.ConnectionPool(network_backend=PinnedBackend(TargetGuard()))
    """

    def __init__(self, guard: TargetGuard, inner: httpcore.NetworkBackend | None = None) -> None:
        self.guard = guard
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: _SocketOptions = None,
    ) -> httpcore.NetworkStream:
        """Connect to a vetted address of ``host``; `BlockedTargetError` when it has none."""
        addresses = self.guard.addresses(host)
        return _first(
            addresses,
            host,
            lambda address: self._inner.connect_tcp(
                address, port, timeout, local_address, socket_options
            ),
        )

    def sleep(self, seconds: float) -> None:
        """Wait, as the wrapped backend does."""
        self._inner.sleep(seconds)


class AsyncPinnedBackend(httpcore.AsyncNetworkBackend):
    """Async twin of `PinnedBackend`; the lookup runs in a worker thread.

    pool = httpcore.AsyncConnectionPool(network_backend=AsyncPinnedBackend(TargetGuard()))
    """

    def __init__(
        self, guard: TargetGuard, inner: httpcore.AsyncNetworkBackend | None = None
    ) -> None:
        self.guard = guard
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: _SocketOptions = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to a vetted address of ``host``; `BlockedTargetError` when it has none."""
        # A lookup blocks; abandoned on cancel, so a deadline above is not held up by DNS.
        addresses = await anyio.to_thread.run_sync(
            self.guard.addresses, host, abandon_on_cancel=True
        )
        return await _afirst(
            addresses,
            host,
            lambda address: self._inner.connect_tcp(
                address, port, timeout, local_address, socket_options
            ),
        )

    async def sleep(self, seconds: float) -> None:
        """Wait, as the wrapped backend does."""
        await self._inner.sleep(seconds)


def _ssl_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    # As httpx.HTTPTransport makes it: certifi's roots, or SSL_CERT_FILE / SSL_CERT_DIR.
    return httpx.create_ssl_context(verify=verify, trust_env=True)


class PinnedTransport(PoolTransport):
    """httpx's transport, but each connection goes to an address ``guard`` just vetted.

    ``verify`` is an ``ssl.SSLContext`` (or False, for no certificate check), as for
    ``httpx.HTTPTransport``; ``backend`` opens the sockets (a test's). Failed connects
    are not retried here: `verity.http.retry` does that above.

        transport = PinnedTransport(TargetGuard(allowed_hosts=["localhost"]))
    """

    def __init__(
        self,
        guard: TargetGuard | None = None,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits = _LIMITS,
        backend: httpcore.NetworkBackend | None = None,
    ) -> None:
        self.guard = guard or TargetGuard()
        super().__init__(
            httpcore.ConnectionPool(
                ssl_context=_ssl_context(verify),
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=PinnedBackend(self.guard, backend),
            )
        )


class AsyncPinnedTransport(AsyncPoolTransport):
    """Async twin of `PinnedTransport`.

    transport = AsyncPinnedTransport(TargetGuard(allowed_hosts=["localhost"]))
    """

    def __init__(
        self,
        guard: TargetGuard | None = None,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits = _LIMITS,
        backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self.guard = guard or TargetGuard()
        super().__init__(
            httpcore.AsyncConnectionPool(
                ssl_context=_ssl_context(verify),
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=AsyncPinnedBackend(self.guard, backend),
            )
        )
