"""An httpx transport over an httpcore connection pool that verity builds itself.

``httpx.HTTPTransport`` builds its httpcore pool inside, with no say over how sockets are
opened; `PoolTransport` takes a pool made elsewhere (`verity.http.pinned` gives it a
network backend of its own) and does the rest of what httpx's transport does: it hands
each request to the pool, streams the answer back, and turns httpcore's errors into the
httpx errors the layers above expect (a ``ConnectError`` is retried, a ``ReadTimeout``
is a timeout). An error that is not httpcore's, such as `BlockedTargetError`, passes as
it is.

    pool = httpcore.ConnectionPool(network_backend=httpcore.SyncBackend())
    client = httpx.Client(transport=PoolTransport(pool))
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

import httpcore
import httpx

__all__ = ["AsyncPoolTransport", "PoolTransport"]

# The same translation as httpx's own transport; the most specific class comes first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    """Raise httpcore's errors as httpx's, and give an httpx error its request."""
    try:
        yield
    except httpx.HTTPError as exc:
        # Raised by a network backend of verity's (a refused address): already httpx's.
        exc.request = request
        raise
    except Exception as exc:
        for theirs, ours in _ERRORS:
            if isinstance(exc, theirs):
                raise ours(str(exc), request=request) from exc
        raise


def _core_request(request: httpx.Request) -> httpcore.Request:
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=request.headers.raw,
        content=request.stream,
        extensions=request.extensions,
    )


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors(self._request):
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors(self._request):
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


class PoolTransport(httpx.BaseTransport):
    """Send requests through an httpcore ``ConnectionPool`` built by the caller.

    pool = httpcore.ConnectionPool(network_backend=httpcore.SyncBackend())
    transport = PoolTransport(pool)
    """

    def __init__(self, pool: httpcore.ConnectionPool) -> None:
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request on a pooled connection; the answer's body streams."""
        if not isinstance(request.stream, httpx.SyncByteStream):
            raise TypeError("a sync transport was given a request with an async body")
        with _httpx_errors(request):
            answer = self._pool.handle_request(_core_request(request))
        if not isinstance(answer.stream, Iterable):
            raise TypeError("the pool answered with an async body")
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream, request),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()


class AsyncPoolTransport(httpx.AsyncBaseTransport):
    """Async twin of `PoolTransport`, over an httpcore ``AsyncConnectionPool``.

    pool = httpcore.AsyncConnectionPool(network_backend=httpcore.AnyIOBackend())
    transport = AsyncPoolTransport(pool)
    """

    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request on a pooled connection; the answer's body streams."""
        if not isinstance(request.stream, httpx.AsyncByteStream):
            raise TypeError("an async transport was given a request with a sync body")
        with _httpx_errors(request):
            answer = await self._pool.handle_async_request(_core_request(request))
        if not isinstance(answer.stream, AsyncIterable):
            raise TypeError("the pool answered with a sync body")
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_AsyncBody(answer.stream, request),
            extensions=answer.extensions,
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._pool.aclose()
