"""What stands between a connection and the routes: deadlines, the Host check, the body cap.

    app.add_middleware(BodyLimit, max_bytes=1 << 20)
    app.add_middleware(AllowedHosts, hosts=("localhost", "127.0.0.1", "::1"))
    app.add_middleware(SafeHeaders)
    uvicorn.Config(app, http=header_deadline(10.0))

`BodyLimit` refuses a body over the cap with 413 before it is read when the request
says its length (Content-Length), and while it is read otherwise (a chunked body is
counted as it arrives, and reading stops at the cap): the server never holds more than
the cap of anyone's body. `AllowedHosts` answers 421 to a request for a host name the
server does not answer for. `HeaderDeadline` is uvicorn's HTTP/1.1 protocol with a
deadline for a request's headers, which uvicorn itself does not have.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable

import h11
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from verity.service.errors import ApiError

log = logging.getLogger("verity.service")


def _error_body(error: ApiError) -> bytes:
    return json.dumps(error.body().model_dump(mode="json")).encode()


class BodyTooLarge(HTTPException):
    """The body went past the cap while it was read."""


class BodyLimit:
    """413 for a request body over ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    def too_large(self) -> ApiError:
        """The answer to a body over the cap."""
        return ApiError(
            413, "too_large", f"the request body is larger than {self.max_bytes:,} bytes"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting its body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared == -1:
            await _send_error(
                send, ApiError(400, "bad_request", "the Content-Length header is not a number")
            )
            return
        if declared is not None and declared > self.max_bytes:
            await _send_error(send, self.too_large())
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # Raised inside the route's body read: the error handlers answer 413.
                    raise BodyTooLarge(413, self.too_large().message)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if not started:
                await _send_error(send, self.too_large())


class SafeHeaders:
    """Headers that keep a browser from sniffing types or framing the pages elsewhere."""

    HEADERS = (
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
    )

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, adding the headers to its answer."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in self.HEADERS if n not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


class AllowedHosts:
    """421 for a request whose Host header names none of ``hosts`` (any port; ``*``: any).

    A loopback server is reached by its loopback names only. A page of another site that
    makes its own name resolve to 127.0.0.1 (DNS rebinding) is, to the browser, the same
    origin as the server, so its scripts could read the answers; what gives it away is
    the Host header, which still carries the page's own name.
    """

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        # Written as a Host header would be ("[::1]", "name:8000") or bare ("::1").
        self.hosts = {host_name(h) or h.strip().lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on if its Host is allowed."""
        if scope["type"] != "http" or "*" in self.hosts:
            await self.app(scope, receive, send)
            return
        given = [v for n, v in scope.get("headers", []) if n == b"host"]
        name = host_name(given[0].decode("latin-1")) if len(given) == 1 else None
        if name is not None and name in self.hosts:
            await self.app(scope, receive, send)
            return
        # The name sent is not repeated: the answer says only that it is not this server's.
        await _send_error(
            send, ApiError(421, "misdirected", "this server does not answer for this host name")
        )


def host_name(header: str) -> str | None:
    """The host of a Host header, lower case, without brackets or port; None if malformed.

    >>> host_name("[::1]:8000"), host_name("LocalHost"), host_name("::1")
    ('::1', 'localhost', None)
    """
    value = header.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        name, _, port = value.partition(":")
    if not name or (port and not port.isdigit()):
        return None  # a bare IPv6 address (its colons) has a "port" that is not a number
    return name


class HeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request headers are late.

    A request's headers must be complete within `seconds` of the connection opening, or
    of the previous response ending on a connection kept alive; otherwise the connection
    is closed. Without it, a client that sends one header line now and then ("slowloris")
    holds a connection for as long as it likes, and a few hundred such clients hold them
    all. The body and the answer have no deadline here: a route reads the body, and an
    event stream is meant to stay open. Use `header_deadline` to set `seconds`.
    """

    seconds = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the deadline of the first request's headers."""
        super().connection_made(transport)
        self._start_deadline()

    def data_received(self, data: bytes) -> None:
        """Read as uvicorn does; once a request's headers are in, its deadline is met."""
        super().data_received(data)
        if not self._awaiting_headers():
            self._stop_deadline()

    def on_response_complete(self) -> None:
        """After an answer, the next request on the connection has its own deadline."""
        super().on_response_complete()
        if self._awaiting_headers() and not self.transport.is_closing():
            self._start_deadline()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        """Hand the connection on with its request in: the deadline is met."""
        self._stop_deadline()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline with the connection."""
        self._stop_deadline()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        # No request yet, or the last one answered (a pipelined next one would already
        # have its own cycle here).
        return self.cycle is None or self.cycle.response_complete

    def _start_deadline(self) -> None:
        self._stop_deadline()
        self._deadline = self.loop.call_later(self.seconds, self._too_late)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_late(self) -> None:
        self._deadline = None
        if self._awaiting_headers() and not self.transport.is_closing():
            log.info("closed a connection whose request headers took over %g s", self.seconds)
            self.transport.close()


def header_deadline(seconds: float) -> type[HeaderDeadline]:
    """`HeaderDeadline` with its deadline, for ``uvicorn.Config(http=...)`` (a class)."""
    return type("HeaderDeadline", (HeaderDeadline,), {"seconds": seconds})


def _content_length(scope: Scope) -> int | None:
    """The declared body length; None if not declared, -1 if not a number."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return -1
            return length if length >= 0 else -1
    return None


async def _send_error(send: Send, error: ApiError) -> None:
    body = _error_body(error)
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
