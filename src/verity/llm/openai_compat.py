"""Any OpenAI-compatible chat endpoint, through the official ``openai`` SDK.

    backend = OpenAIBackend("gpt-4o-mini")                                   # OPENAI_API_KEY
    backend = OpenAIBackend("qwen2.5:7b", base_url="http://localhost:11434/v1")   # Ollama
    backend = OpenAIBackend("deepseek-chat", base_url="https://api.deepseek.com",
                            api_key_env="DEEPSEEK_API_KEY")

Structured output is negotiated per endpoint and model: ``json_schema`` first (OpenAI,
vLLM, recent Ollama, LM Studio), then ``json_object`` with the schema attached (llama.cpp's
server), then plain instructions in the prompt. A mode the server rejects (an error that
names ``response_format`` or the schema) is not tried again by this backend. Whatever the mode, the
answer is validated by `ModelClient`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

import openai

from verity.domain import Message
from verity.errors import ConfigError, MissingKeyError
from verity.llm.base import GenParams, ModelUnavailableError, RawCompletion, TransientModelError

MODES = ("json_schema", "json_object", "prompt")
# Endpoints without a key (Ollama, vLLM, llama.cpp) still need a non-empty string for the SDK.
NO_KEY = "no-key"


def schema_instruction(schema: dict[str, Any]) -> str:
    """The plain-language request for JSON, used where the server cannot enforce a schema."""
    return (
        "Answer with only one JSON object, no prose and no code fence, matching this "
        "JSON schema:\n" + json.dumps(schema, ensure_ascii=False)
    )


class OpenAIBackend:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    backend = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        structured_mode: str = "auto",
        # The SDK's own httpx flavour or plain httpx clients (tests inject a MockTransport).
        http_client: Any = None,
        async_http_client: Any = None,
    ) -> None:
        if not model:
            raise ConfigError("an openai model needs a name, as in openai:gpt-4o-mini")
        if structured_mode not in ("auto", *MODES):
            raise ConfigError(f"structured_mode must be auto or one of {', '.join(MODES)}")
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.structured_mode = structured_mode
        self._rejected: set[str] = set()
        self._rejected_lock = threading.Lock()
        key = os.environ.get(api_key_env, "")
        if not key and base_url is None:
            raise MissingKeyError("the OpenAI API", api_key_env)
        common: dict[str, Any] = {
            "api_key": key or NO_KEY,
            "base_url": base_url,
            "timeout": timeout,
            # Retries belong to ModelClient, which retries rate limits and 5xx only.
            "max_retries": 0,
        }
        self._client = openai.OpenAI(**common, http_client=http_client)
        self._async_args = common
        self._async_http = async_http_client

    def identity(self) -> dict[str, Any]:
        """Model name and endpoint; never the key."""
        return {"backend": self.backend, "model": self.model, "base_url": self._endpoint()}

    def _endpoint(self) -> str:
        return str(self._client.base_url)

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

    def complete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """One chat completion, falling back through structured-output modes on rejection."""
        modes = self._modes(schema)
        for i, mode in enumerate(modes):
            try:
                resp = self._client.chat.completions.create(
                    **self._request(messages, params, schema, mode)
                )
            except openai.OpenAIError as exc:
                if not _rejects_mode(exc, mode) or i == len(modes) - 1:
                    raise self._translate(exc) from exc
                self._reject(str(mode))
                continue
            return _completion(resp, mode)
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
            aclient = openai.AsyncOpenAI(**self._async_args, http_client=self._async_http)
            return await self._acomplete(aclient, messages, params, schema)
        async with openai.AsyncOpenAI(**self._async_args) as owned:
            return await self._acomplete(owned, messages, params, schema)

    async def _acomplete(
        self,
        aclient: openai.AsyncOpenAI,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None,
    ) -> RawCompletion:
        modes = self._modes(schema)
        for i, mode in enumerate(modes):
            try:
                resp = await aclient.chat.completions.create(
                    **self._request(messages, params, schema, mode)
                )
            except openai.OpenAIError as exc:
                if not _rejects_mode(exc, mode) or i == len(modes) - 1:
                    raise self._translate(exc) from exc
                self._reject(str(mode))
                continue
            return _completion(resp, mode)
        raise ModelUnavailableError(f"{self.model}: no structured-output mode is accepted")

    def _translate(self, exc: openai.OpenAIError) -> Exception:
        where = f"{self.model} at {self._endpoint()}"
        if isinstance(exc, openai.RateLimitError | openai.InternalServerError):
            retry_after = _retry_after(exc.response)
            return TransientModelError(f"{where}: {exc}", retry_after=retry_after)
        if isinstance(exc, openai.AuthenticationError):
            return ModelUnavailableError(f"{where}: the key in {self.api_key_env} was rejected")
        if isinstance(exc, openai.NotFoundError):
            return ModelUnavailableError(f"{where}: model or endpoint not found ({exc})")
        if isinstance(exc, openai.APITimeoutError):
            return ModelUnavailableError(f"{where}: no answer within {self.timeout:g} s")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailableError(f"cannot reach {self._endpoint()}: {exc}")
        return ModelUnavailableError(f"{where}: {exc}")


def _rejects_mode(exc: openai.OpenAIError, mode: str | None) -> bool:
    """Whether an error means the server does not accept this structured-output mode.

    Servers say so with a 400, a 422, or (llama.cpp's Python server) a 500 carrying a
    validation error; all of them name the offending field. Other errors of the same
    status, such as a prompt longer than the context, must not cost a mode.
    """
    if mode is None or mode == "prompt" or not isinstance(exc, openai.APIStatusError):
        return False
    if exc.status_code not in (400, 422) and exc.status_code < 500:
        return False
    text = str(exc).lower()
    return any(word in text for word in ("response_format", "json_schema", "schema"))


def _retry_after(response: Any) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _completion(resp: Any, mode: str | None) -> RawCompletion:
    choice = resp.choices[0]
    usage = resp.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return RawCompletion(
        text=choice.message.content or "",
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
        structured_mode=mode,
        finish_reason=choice.finish_reason,
    )
