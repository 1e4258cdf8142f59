"""ASGI middleware of the service: the request body cap, and headers every answer carries.

    app.add_middleware(BodyLimit, max_bytes=1 << 20)
    app.add_middleware(SafeHeaders)

`BodyLimit` refuses a body over the cap with 413 before it is read when the request
says its length (Content-Length), and while it is read otherwise (a chunked body is
counted as it arrives, and reading stops at the cap): the server never holds more than
the cap of anyone's body.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from verity.service.errors import ApiError


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
