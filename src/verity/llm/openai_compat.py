"""Any OpenAI-compatible chat endpoint, through the official ``openai`` SDK.

    backend = OpenAIBackend("gpt-4o-mini")                                   # OPENAI_API_KEY
    backend = OpenAIBackend("qwen2.5:7b", base_url="http://localhost:11434/v1")   # Ollama
    backend = OpenAIBackend("deepseek-chat", base_url="https://api.deepseek.com",
                            api_key_env="DEEPSEEK_API_KEY")

Structured output is negotiated per endpoint and model: ``json_schema`` first (OpenAI,
vLLM, recent Ollama, LM Studio), then ``json_object`` with the schema attached (llama.cpp's
server), then plain instructions in the prompt. A mode the server rejects (an error that
names ``response_format`` or the schema) is not tried again by this backend. Whatever the
mode, the answer is validated by `ModelClient`.

What can go wrong with an endpoint, and what becomes of it:

* Retries are the SDK's own, ``retries`` times (default 3): 408, 409, 429 and 5xx answers,
  timeouts and refused or broken connections; never a 5xx that refuses the output mode or
  the prompt's length, which no retry cures, and never a server asking to wait more than
  two minutes. The wait is the server's ``retry-after-ms`` or ``Retry-After`` (seconds or
  an HTTP date, clamped to [0, 60] s; ``nan``, ``inf`` or text are ignored), else a random
  wait up to ``retry_backoff * 2**n`` seconds (0.5 s by default). After the last retry the
  error is a `ModelUnavailableError` (`EndpointBusyError` for 429 and 5xx) that is not
  retried again: the backend ``retries_itself``, and `ModelClient` leaves it at that.
* Each attempt must finish, body included, within ``timeout`` seconds, and its body may
  not pass ``max_response_bytes`` (default 8 MiB); redirects are followed only to public
  addresses or the endpoint's own host, without the key when the origin changes
  (`verity.http`).
* A 200 answer that is not a chat completion (not JSON, HTML, no choices, a choice without
  a message) is a `ModelUnavailableError` saying what was wrong, with at most a short
  excerpt of the body.
* A prompt longer than the model's context is a `ContextOverflowError`, recognised in the
  wordings of OpenAI, vLLM, llama.cpp's servers, Ollama and LM Studio; it never costs a
  structured-output mode. Both are read in `verity.llm.endpoint_replies`.
* The endpoint appears in messages and in `OpenAIBackend.identity` without its password
  or credential-like query values. ``identity`` is part of the answer cache's key, so two
  passwords for one endpoint share cached answers (a password does not change an answer).
"""

from __future__ import annotations

import functools
import json
import math
import os
import ssl
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai

from verity.domain import Message
from verity.errors import ConfigError, ContextOverflowError, MissingKeyError, SourceUnavailableError
from verity.http import (
    AsyncLimitTransport,
    AsyncPinnedTransport,
    AsyncRedirectTransport,
    LimitTransport,
    PinnedTransport,
    PooledClient,
    RedirectTransport,
    TargetGuard,
    no_lookup,
    resolve_host,
    retry_after_seconds,
    retry_delay,
)
from verity.llm.base import GenParams, ModelUnavailableError, RawCompletion
from verity.llm.endpoint_replies import (
    CONTEXT_OVERFLOW,
    UnusableReply,
    excerpt,
    overflows_context,
    read_reply,
    read_usage,
    rejects_mode,
    server_said,
)
from verity.redact import redact_url

MODES = ("json_schema", "json_object", "prompt")
# Endpoints without a key (Ollama, vLLM, llama.cpp) still need a non-empty string for the SDK.
NO_KEY = "no-key"
#: The largest chat-completion body accepted; a long answer is a few hundred kilobytes.
DEFAULT_MAX_RESPONSE_BYTES = 8 * 2**20
#: The longest wait before a retry, whatever the server asks for.
MAX_RETRY_WAIT = 60.0
# The SDK does not retry a server that asks for longer than this (its MAX_RETRY_AFTER_DELAY).
_SDK_LONGEST_WAIT = 120.0
_OPENAI_URL = "https://api.openai.com/v1"


def schema_instruction(schema: dict[str, Any]) -> str:
    """The plain-language request for JSON, used where the server cannot enforce a schema."""
    return (
        "Answer with only one JSON object, no prose and no code fence, matching this "
        "JSON schema:\n" + json.dumps(schema, ensure_ascii=False)
    )


class EndpointBusyError(ModelUnavailableError):
    """The endpoint still answered 429 or 5xx after every retry.

    ``retry_after`` is the wait the server asked for, within [0, 60] s, or None.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = _usable_wait(retry_after)
        super().__init__(message)


def _usable_wait(seconds: float | None) -> float | None:
    if seconds is None or math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_WAIT)


# The SDK decides what to retry and how long to wait in two methods its clients call for
# every retry; verity's clients override both, and nothing else:
# * ``_calculate_retry_timeout``: the wait is `verity.http.retry_delay` (the server's
#   ``Retry-After`` clamped to [0, 60] s, else full jitter from ``retry_backoff``), where
#   the SDK's first wait is a fixed 0.5 s (tests need it tiny);
# * ``_should_retry``: never a 5xx that a retry cannot cure, a refused output mode
#   (llama.cpp's Python server answers one with a 500 naming ``response_format``) or a
#   prompt over the context; else the SDK's own rule (408, 409, 429, 5xx).


def _retry_wait(retries: int, remaining: int, backoff: float, headers: Any) -> float:
    return retry_delay(retries - remaining, headers, backoff=backoff, max_delay=MAX_RETRY_WAIT)


def _curable(response: Any) -> bool:
    try:
        text = str(response.text)[:4000]
    except httpx.ResponseNotRead:
        return True
    lowered = text.lower()
    refused_mode = "response_format" in lowered or "json_schema" in lowered
    return not (refused_mode or CONTEXT_OVERFLOW.search(text))


class _VerityRetries:
    """The SDK's retry hooks with verity's wait and verity's rule (see above)."""

    verity_backoff = 0.5
    max_retries: int

    def _calculate_retry_timeout(
        self, remaining_retries: int, options: Any, response_headers: Any = None
    ) -> float:
        return _retry_wait(
            self.max_retries, remaining_retries, self.verity_backoff, response_headers
        )

    def _should_retry(self, response: Any) -> bool:
        return _curable(response) and bool(super()._should_retry(response))  # type: ignore[misc]


class _OpenAI(_VerityRetries, openai.OpenAI):
    pass


class _AsyncOpenAI(_VerityRetries, openai.AsyncOpenAI):
    pass


def check_base_url(url: str) -> None:
    """Refuse an endpoint URL no request can use, before any request (`ConfigError`).

    An http(s) URL with a host; no query string or fragment, since the client appends
    the API path to the URL as written (a key in the query string would be cut in two).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise ConfigError(f"the endpoint URL {redact_url(url)!r} is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"the endpoint URL {redact_url(url)!r} must start with http:// or https:// and "
            "name a host, as in http://localhost:11434/v1"
        )
    if parts.query or parts.fragment:
        raise ConfigError(
            f"the endpoint URL {redact_url(url)!r} must not have a query string or fragment; "
            "give a key with --api-key-env"
        )


class OpenAIBackend:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``transport`` and ``async_transport`` replace the network (tests pass an
    ``httpx.MockTransport``) under the same limits and redirect checks; ``http_client``
    and ``async_http_client`` replace the whole HTTP client, limits included.

        backend = OpenAIBackend("qwen2.5:7b", base_url="http://localhost:11434/v1",
                                timeout=60, retries=2)
        backend.complete([Message(role="user", content="Hi")], GenParams())
    """

    backend = "openai"
    #: The SDK retries; `ModelClient` must not retry again on top.
    retries_itself = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        structured_mode: str = "auto",
        retries: int = 3,
        retry_backoff: float = 0.5,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        http_client: Any = None,
        async_http_client: Any = None,
    ) -> None:
        if not model:
            raise ConfigError("an openai model needs a name, as in openai:gpt-4o-mini")
        if structured_mode not in ("auto", *MODES):
            raise ConfigError(f"structured_mode must be auto or one of {', '.join(MODES)}")
        if base_url is not None:
            check_base_url(base_url)
        if retries < 0 or retry_backoff < 0 or max_response_bytes < 1 or not timeout > 0:
            raise ConfigError(
                "retries and retry_backoff must not be negative, timeout and "
                "max_response_bytes must be positive"
            )
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.structured_mode = structured_mode
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.max_response_bytes = max_response_bytes
        self._rejected: set[str] = set()
        self._rejected_lock = threading.Lock()
        key = os.environ.get(api_key_env, "")
        if not key and base_url is None:
            raise MissingKeyError("the OpenAI API", api_key_env)
        self._sdk_args: dict[str, Any] = {
            "api_key": key or NO_KEY,
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": retries,
        }
        # The endpoint's own host was named by the user: it may be private (a local server).
        configured = base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL
        # An injected transport decides itself where requests go: no name lookups then.
        real = transport is None and async_transport is None
        self._guard = TargetGuard(
            [urlsplit(configured).hostname or ""], resolve=resolve_host if real else no_lookup
        )
        self._async_transport = async_transport
        self._async_http = async_http_client
        self._client = self._sdk(_OpenAI, http_client or self._http_client(transport))

    # -- configuration -----------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """Model name and endpoint (no password, no key): part of answer-cache keys."""
        return {"backend": self.backend, "model": self.model, "base_url": self._endpoint()}

    def _endpoint(self) -> str:
        return redact_url(str(self._client.base_url))

    def _where(self) -> str:
        return f"{self.model} at {self._endpoint()}"

    def _sdk(self, kind: type[Any], http: Any) -> Any:
        client = kind(**self._sdk_args, http_client=http)
        client.verity_backoff = self.retry_backoff
        return client

    def _http_client(self, transport: httpx.BaseTransport | None) -> httpx.Client:
        limited = LimitTransport(
            # Each connection goes to the address the guard just checked (no rebinding).
            transport or PinnedTransport(self._guard, verify=self._ssl),
            max_bytes=self.max_response_bytes,
            deadline=self.timeout,
        )
        return PooledClient(
            transport=RedirectTransport(limited, guard=self._guard),
            timeout=self.timeout,
            follow_redirects=False,  # RedirectTransport follows them, checking each hop
        )

    @functools.cached_property
    def _ssl(self) -> ssl.SSLContext:
        # Made once: loading the certificate store takes about 17 ms, and each async call
        # has a transport of its own (`acomplete`).
        return httpx.create_ssl_context(trust_env=True)

    def _async_http_client(self) -> httpx.AsyncClient:
        limited = AsyncLimitTransport(
            self._async_transport or AsyncPinnedTransport(self._guard, verify=self._ssl),
            max_bytes=self.max_response_bytes,
            deadline=self.timeout,
        )
        return httpx.AsyncClient(
            transport=AsyncRedirectTransport(limited, guard=self._guard),
            timeout=self.timeout,
            follow_redirects=False,
        )

    def _modes(self, schema: dict[str, Any] | None) -> list[str | None]:
        if schema is None:
            return [None]
        if self.structured_mode != "auto":
            return [self.structured_mode]
        with self._rejected_lock:
            return [m for m in MODES if m not in self._rejected]

    def _reject(self, mode: str) -> None:
        with self._rejected_lock:
            self._rejected.add(mode)

    def _request(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None,
        mode: str | None,
    ) -> dict[str, Any]:
        msgs = [m.model_dump() for m in messages]
        if schema is not None and mode in ("json_object", "prompt"):
            # OpenAI requires the word JSON in the prompt for json_object; weak servers need it.
            msgs = [*msgs, {"role": "system", "content": schema_instruction(schema)}]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": msgs,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": False},
            }
        elif schema is not None and mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    # -- calls ---------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """One chat completion, falling back through structured-output modes on rejection."""
        modes = self._modes(schema)
        for i, mode in enumerate(modes):
            request = self._request(messages, params, schema, mode)
            try:
                raw = self._client.chat.completions.with_raw_response.create(**request)
            except openai.OpenAIError as exc:
                self._give_up_or_next_mode(exc, mode, last=i == len(modes) - 1)
                continue
            except SourceUnavailableError as exc:  # a limit or redirect check in verity.http
                raise ModelUnavailableError(f"{self._where()}: {exc}") from exc
            return self._completion(raw.content, mode)
        raise ModelUnavailableError(f"{self.model}: no structured-output mode is accepted")

    async def acomplete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Async twin of `complete`."""
        # One async client per call: a pooled connection belongs to the event loop that
        # opened it, and callers (asyncio.run in a loop, benchmark workers) change loops.
        # An injected http client belongs to the caller, who closes it.
        if self._async_http is not None:
            aclient = self._sdk(_AsyncOpenAI, self._async_http)
            return await self._acomplete(aclient, messages, params, schema)
        async with self._async_http_client() as http:
            aclient = self._sdk(_AsyncOpenAI, http)
            return await self._acomplete(aclient, messages, params, schema)

    async def _acomplete(
        self,
        aclient: openai.AsyncOpenAI,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None,
    ) -> RawCompletion:
        modes = self._modes(schema)
        for i, mode in enumerate(modes):
            request = self._request(messages, params, schema, mode)
            try:
                raw = await aclient.chat.completions.with_raw_response.create(**request)
            except openai.OpenAIError as exc:
                self._give_up_or_next_mode(exc, mode, last=i == len(modes) - 1)
                continue
            except SourceUnavailableError as exc:
                raise ModelUnavailableError(f"{self._where()}: {exc}") from exc
            return self._completion(raw.content, mode)
        raise ModelUnavailableError(f"{self.model}: no structured-output mode is accepted")

    def _give_up_or_next_mode(
        self, exc: openai.OpenAIError, mode: str | None, *, last: bool
    ) -> None:
        """Raise the translated error, unless the server only refused this output mode."""
        if last or overflows_context(exc) or not rejects_mode(exc, mode):
            raise self._translate(exc) from exc
        self._reject(str(mode))

    # -- answers and errors ---------------------------------------------------------------

    def _completion(self, body: bytes, mode: str | None) -> RawCompletion:
        try:
            reply = read_reply(body)
        except UnusableReply as exc:
            raise ModelUnavailableError(f"{self._where()}: answered 200 with {exc}") from None
        choice = reply.choices[0]
        usage = read_usage(reply.usage)
        details = usage.prompt_tokens_details
        return RawCompletion(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=(details.cached_tokens or 0) if details else 0,
            structured_mode=mode,
            finish_reason=choice.finish_reason if isinstance(choice.finish_reason, str) else None,
        )

    def _translate(self, exc: openai.OpenAIError) -> Exception:
        where = self._where()
        retried = " after retries" if self.retries else ""
        if isinstance(exc, openai.APIStatusError):
            return self._status_error(exc, retried)
        if isinstance(exc, openai.APITimeoutError):
            return ModelUnavailableError(
                f"{where}: no complete answer within {self.timeout:g} s{retried}"
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            detail = excerpt(str(cause) or type(cause).__name__) if cause else "no details"
            if isinstance(cause, httpx.ConnectError):
                return ModelUnavailableError(f"cannot reach {self._endpoint()}{retried}: {detail}")
            return ModelUnavailableError(f"{where}: the exchange failed{retried}: {detail}")
        return ModelUnavailableError(f"{where}: {excerpt(str(exc))}")

    def _status_error(self, exc: openai.APIStatusError, retried: str) -> Exception:
        where, status, said = self._where(), exc.status_code, server_said(exc)
        if overflows_context(exc):
            return ContextOverflowError(
                f"{where}: the prompt is longer than the model's context window ({said}); "
                "shorten the input or use a model with a longer context"
            )
        if status in (401, 403):
            return ModelUnavailableError(
                f"{where}: the key in {self.api_key_env} was rejected (HTTP {status})"
            )
        if status == 404:
            return ModelUnavailableError(f"{where}: model or endpoint not found ({said})")
        if status in (408, 409, 429) or status >= 500:
            asked = retry_after_seconds(exc.response.headers)
            if asked is not None and asked > _SDK_LONGEST_WAIT:
                retried = f" and asked to wait {asked:.0f} s, too long to retry"
            return EndpointBusyError(
                f"{where}: answered HTTP {status}{retried}: {said}", retry_after=asked
            )
        return ModelUnavailableError(f"{where}: refused the request (HTTP {status}): {said}")
