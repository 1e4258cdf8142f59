"""The one layer every model call goes through.

    client = ModelClient(LocalBackend())
    done = client.chat([Message(role="user", content="Hi")], step="greet")
    verdict = client.chat(messages, schema=JudgeOutput, step="judge", log=log).parsed

It adds, whatever the backend: an on-disk answer cache, usage accounting (per call, per
`CallLog`, and a running total per client), a concurrency limit, retries with backoff on
rate limits and server errors only, and validation of structured answers against their
pydantic schema with a bounded repair round before a typed error.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from verity.domain import Message, ModelCall, RejectedAnswer, Usage
from verity.errors import ModelOutputError
from verity.llm.base import ChatBackend, GenParams, RawCompletion, TransientModelError
from verity.llm.cache import ResponseCache, cache_key
from verity.llm.calllog import CallLog

T = TypeVar("T", bound=BaseModel)

_REPAIR = (
    "Your previous answer could not be used: {error}\n"
    "Answer again with only one JSON object that matches this JSON schema:\n{schema}"
)


@dataclass(frozen=True)
class Completion(Generic[T]):
    """A model's answer: its text, the validated object when a schema was given, the record."""

    text: str
    parsed: T | None
    call: ModelCall


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to backends for a pydantic output type."""
    return model.model_json_schema()


def parse_json_answer(text: str, schema: type[T]) -> T:
    """Validate a model's text against the schema, tolerating a fenced or wrapped object."""
    candidate = text.strip()
    if candidate.startswith("```"):
        candidate = candidate.strip("`")
        candidate = candidate.removeprefix("json").strip()
    start, end = candidate.find("{"), candidate.rfind("}")
    if start != -1 and end > start:
        candidate = candidate[start : end + 1]
    try:
        # strict=False accepts raw newlines inside strings, which llama.cpp's JSON grammar
        # lets a model write; anything else malformed is still an error.
        data = json.loads(candidate, strict=False)
    except json.JSONDecodeError:
        return schema.model_validate_json(candidate)  # raises with pydantic's own message
    return schema.model_validate(data)


class ModelClient:
    """A chat backend with caching, accounting, limits, retries and validation added."""

    def __init__(
        self,
        backend: ChatBackend,
        *,
        cache: ResponseCache | None = None,
        params: GenParams | None = None,
        max_concurrency: int = 4,
        retries: int = 3,
        backoff: float = 1.0,
        repair_attempts: int = 1,
        role: str = "default",
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.params = params or GenParams()
        self.retries = retries
        self.backoff = backoff
        self.repair_attempts = repair_attempts
        self.role = role
        self.max_concurrency = max_concurrency
        self._sync_slots = threading.BoundedSemaphore(max_concurrency)
        self._async_slots: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()
        self._meter = _Meter()
        # Injected in tests so retries do not wait.
        self.sleep = time.sleep

    @property
    def usage(self) -> Usage:
        """Usage of every call through this client and its role twins since creation (a run)."""
        return self._meter.total

    def to_dict(self) -> dict[str, Any]:
        """The exact configuration, for run manifests."""
        return {
            **self.backend.identity(),
            "role": self.role,
            "params": self.params.model_dump(),
            "cache": str(self.cache.path) if self.cache else None,
            "max_concurrency": self.max_concurrency,
            "retries": self.retries,
            "repair_attempts": self.repair_attempts,
        }

    def with_role(self, role: str) -> ModelClient:
        """The same model, its calls labelled with another agent role.

        The twin shares the concurrency limit and the usage total: they are the endpoint's.
        """
        twin = copy.copy(self)
        twin.role = role
        return twin

    # -- sync ---------------------------------------------------------------------------

    def chat(
        self,
        messages: Sequence[Message],
        *,
        step: str = "chat",
        schema: type[T] | None = None,
        params: GenParams | None = None,
        log: CallLog | None = None,
    ) -> Completion[T]:
        """Send messages; with ``schema``, return the validated object in ``parsed``."""
        params = params or self.params
        json_schema = schema_of(schema) if schema else None
        convo = list(messages)
        total, started = Usage(), time.perf_counter()
        rejected: list[RejectedAnswer] = []
        while True:
            raw, key = self._complete_cached(convo, params, json_schema)
            total = total + _usage_of(raw, cached=key is None)
            parsed, error = _validate(raw.text, schema)
            if key is not None and error is None:
                self._store(key, raw)
            if error is None or len(rejected) >= self.repair_attempts:
                break
            rejected.append(RejectedAnswer(output=raw.text, error=error))
            convo = _repair_messages(convo, raw.text, error, json_schema)
        return self._finish(
            step, messages, params, raw, parsed, error, total, rejected, started, log
        )

    def _complete_cached(
        self, messages: Sequence[Message], params: GenParams, schema: dict[str, Any] | None
    ) -> tuple[RawCompletion, str | None]:
        """A stored answer (with key None), else a fresh one with the key to store it under."""
        key = cache_key(self.backend.identity(), messages, params, schema)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit, None
        for attempt in range(self.retries + 1):
            try:
                with self._sync_slots:
                    raw = self.backend.complete(messages, params, schema)
                break
            except TransientModelError as exc:
                if attempt >= self.retries:
                    raise
                self.sleep(self._delay(attempt, exc))
        return raw, key

    # -- async --------------------------------------------------------------------------

    async def achat(
        self,
        messages: Sequence[Message],
        *,
        step: str = "chat",
        schema: type[T] | None = None,
        params: GenParams | None = None,
        log: CallLog | None = None,
    ) -> Completion[T]:
        """Async twin of `chat`."""
        params = params or self.params
        json_schema = schema_of(schema) if schema else None
        convo = list(messages)
        total, started = Usage(), time.perf_counter()
        rejected: list[RejectedAnswer] = []
        while True:
            raw, key = await self._acomplete_cached(convo, params, json_schema)
            total = total + _usage_of(raw, cached=key is None)
            parsed, error = _validate(raw.text, schema)
            if key is not None and error is None:
                await asyncio.to_thread(self._store, key, raw)
            if error is None or len(rejected) >= self.repair_attempts:
                break
            rejected.append(RejectedAnswer(output=raw.text, error=error))
            convo = _repair_messages(convo, raw.text, error, json_schema)
        return self._finish(
            step, messages, params, raw, parsed, error, total, rejected, started, log
        )

    async def _acomplete_cached(
        self, messages: Sequence[Message], params: GenParams, schema: dict[str, Any] | None
    ) -> tuple[RawCompletion, str | None]:
        key = cache_key(self.backend.identity(), messages, params, schema)
        if self.cache is not None:
            hit = await asyncio.to_thread(self.cache.get, key)
            if hit is not None:
                return hit, None
        slots = self._async_slots.setdefault(
            asyncio.get_running_loop(), asyncio.Semaphore(self.max_concurrency)
        )
        for attempt in range(self.retries + 1):
            try:
                async with slots:
                    raw = await self.backend.acomplete(messages, params, schema)
                break
            except TransientModelError as exc:
                if attempt >= self.retries:
                    raise
                await asyncio.sleep(self._delay(attempt, exc))
        return raw, key

    # -- shared -------------------------------------------------------------------------

    def _store(self, key: str, raw: RawCompletion) -> None:
        # Only answers that validated are stored: a rerun retries a failed step afresh
        # instead of replaying the failure.
        if self.cache is not None:
            self.cache.put(key, raw)

    def _delay(self, attempt: int, exc: TransientModelError) -> float:
        if exc.retry_after is not None:
            return min(exc.retry_after, 60.0)
        return float(self.backoff * (2**attempt))

    def _finish(
        self,
        step: str,
        messages: Sequence[Message],
        params: GenParams,
        raw: RawCompletion,
        parsed: BaseModel | None,
        error: str | None,
        usage: Usage,
        rejected: list[RejectedAnswer],
        started: float,
        log: CallLog | None,
    ) -> Completion[Any]:
        usage = usage.model_copy(update={"seconds": time.perf_counter() - started})
        call = ModelCall(
            step=step,
            role=self.role,
            backend=self.backend.backend,
            model=self.backend.model,
            messages=tuple(messages),
            params=params.model_dump(),
            output=raw.text,
            parsed=parsed.model_dump(mode="json") if parsed is not None else None,
            usage=usage,
            cached=usage.cached_calls == usage.llm_calls,
            structured_mode=raw.structured_mode,
            attempts=len(rejected) + 1,
            rejected=tuple(rejected),
            finish_reason=raw.finish_reason,
        )
        self._meter.add(usage)
        if log is not None:
            log.add_call(call)
        if error is not None:
            raise ModelOutputError(
                f"{self.backend.backend}:{self.backend.model} gave no valid answer for step "
                f"{step!r} after {len(rejected) + 1} attempt(s): {error}",
                raw=raw.text,
            )
        return Completion(text=raw.text, parsed=parsed, call=call)


class _Meter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = Usage()

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.total = self.total + usage


def _usage_of(raw: RawCompletion, *, cached: bool) -> Usage:
    return Usage(
        llm_calls=1,
        prompt_tokens=raw.prompt_tokens,
        completion_tokens=raw.completion_tokens,
        cached_tokens=raw.cached_tokens,
        cached_calls=1 if cached else 0,
    )


def _validate(text: str, schema: type[T] | None) -> tuple[T | None, str | None]:
    if schema is None:
        return None, None
    try:
        return parse_json_answer(text, schema), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        return None, problems


def _repair_messages(
    convo: list[Message], bad: str, error: str, schema: dict[str, Any] | None
) -> list[Message]:
    return [
        *convo,
        Message(role="assistant", content=bad),
        Message(
            role="user",
            content=_REPAIR.format(error=error, schema=json.dumps(schema, ensure_ascii=False)),
        ),
    ]
