"""An OpenAI-compatible endpoint on loopback that answers every request after a fixed delay.

    with LatencyEndpoint(delay=0.5) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url)
        ...                                  # run checks; every call takes 0.5 s
        endpoint.count, endpoint.peak        # requests served, most ever in flight at once

There is no model behind it: a structured request is answered with a small valid instance
of the JSON schema it sends (`instance`), a plain one with a sentence. What a benchmark
measures against it is therefore verity's own work and concurrency, with the model's
latency fixed. ``answer`` overrides the made-up answer for requests a bench knows better
(a schema with a pattern the generator cannot satisfy, a debate that should run several
rounds): it gets the request's messages and schema and returns a payload, or None.

It listens on 127.0.0.1 only, reads at most `MAX_BODY` bytes of a request, and keeps its
delay under `MAX_DELAY`: a helper for tests and benches, not a server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from faults.model import completion

MAX_BODY = 8 * 2**20
MAX_DELAY = 10.0
# Items in a made-up list, within the schema's bounds: enough to exercise a method's
# per-item work (claims, sub-questions), close to ZoFia's 3.24 claims per article.
LIST_ITEMS = 3

Answer = Callable[[list[dict[str, Any]], dict[str, Any] | None], Any]


class LatencyEndpoint:
    """A chat-completions endpoint whose every answer takes ``delay`` seconds."""

    def __init__(self, delay: float = 0.5, answer: Answer | None = None) -> None:
        if not 0 <= delay <= MAX_DELAY:
            raise ValueError(f"delay must be within 0..{MAX_DELAY} s")
        self.delay = delay
        self.answer = answer
        self.count = 0
        self.peak = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.endpoint = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def reset(self) -> None:
        """Forget the counts (between the runs of a bench)."""
        with self._lock:
            self.count, self.peak = 0, self._in_flight

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """The completion for one request body, after the delay."""
        with self._lock:
            self.count += 1
            self._in_flight += 1
            self.peak = max(self.peak, self._in_flight)
        try:
            self._stopping.wait(self.delay)
            return completion(_content(request, self.answer))
        finally:
            with self._lock:
                self._in_flight -= 1

    def __enter__(self) -> LatencyEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _content(request: dict[str, Any], answer: Answer | None) -> str:
    messages = request.get("messages") or []
    schema = _schema_of(request)
    if answer is not None:
        payload = answer(messages, schema)
        if payload is not None:
            return payload if isinstance(payload, str) else json.dumps(payload)
    if schema is None:
        return "A plain answer."
    return json.dumps(instance(schema))


def _schema_of(request: dict[str, Any]) -> dict[str, Any] | None:
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    schema = fmt.get("schema")
    return schema if isinstance(schema, dict) else None


def instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small value valid against ``schema`` (the JSON-schema subset pydantic writes).

    The first choice wherever there is one (enum, anyOf), every property of an object,
    `LIST_ITEMS` items in a list within its bounds, numbers within their bounds. String
    patterns are not honoured: pass an ``answer`` for those.
    """
    root = root if root is not None else schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return instance(root["$defs"][name], root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return instance(options[0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: instance(sub, root) for name, sub in props.items()}
    if kind == "array":
        if "prefixItems" in schema:
            return [instance(sub, root) for sub in schema["prefixItems"]]
        n = max(schema.get("minItems", 0), min(LIST_ITEMS, schema.get("maxItems", LIST_ITEMS)))
        return [instance(schema.get("items", {}), root) for _ in range(n)]
    if kind == "string":
        text = "Some text."
        text = text.ljust(schema.get("minLength", 0), "x")
        return text[: schema.get("maxLength", len(text))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 1))
        value = (low + high) / 2
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # Room for a bench's 32 clients connecting at once.
    request_queue_size = 128
    endpoint: LatencyEndpoint

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up: nothing to report


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, {"error": {"message": "request too large"}})
            self.close_connection = True
            return
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "the body is not JSON"}})
            return
        self._send(200, self.server.endpoint.reply(request))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
