"""The one layer every model call goes through.

    client = ModelClient(LocalBackend())
    done = client.chat([Message(role="user", content="Hi")], step="greet")
    verdict = client.chat(messages, schema=JudgeOutput, step="judge", log=log).parsed

It adds, whatever the backend: an on-disk answer cache, usage accounting (per call, per
`CallLog`, and a running total per client) with the cost of each call at the model's
price (`verity.llm.prices`), the check's budget (`verity.llm.budget`: each request is
admitted by it before it is sent and charged to it after), a concurrency limit, retries
with jittered backoff on rate limits and server errors only (unless the backend retries
by itself), a cap on the size of an answer, and validation of structured answers against
their pydantic schema, numbers normalised first (`verity.llm.parse`), with a bounded
repair round before a typed error.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from verity import schedule
from verity.domain import Message, ModelCall, RejectedAnswer, Usage
from verity.errors import BudgetExceededError, ModelOutputError
from verity.http.retry import retry_delay
from verity.llm import budget
from verity.llm.base import ChatBackend, GenParams, RawCompletion, TransientModelError
from verity.llm.cache import ResponseCache, cache_key
from verity.llm.calllog import CallLog
from verity.llm.parse import parse_answer, parse_json_answer
from verity.llm.prices import Price
from verity.llm.slots import Slots

__all__ = [
    "ANSWER_SLACK_CHARS",
    "CHARS_PER_TOKEN",
    "MAX_RETRY_WAIT",
    "Completion",
    "ModelClient",
    "parse_json_answer",
    "schema_of",
]

T = TypeVar("T", bound=BaseModel)

# The longest answer accepted is max_tokens * CHARS_PER_TOKEN + ANSWER_SLACK_CHARS. Prose
# and JSON average about 4 characters per token and the longest tokens of common
# vocabularies (runs of spaces or of one punctuation mark) a few dozen, so no answer within
# max_tokens comes near 32 per token; one beyond it comes from an endpoint that ignored
# max_tokens and is not worth caching, parsing or writing out.
CHARS_PER_TOKEN = 32
# Room for tokenizers that count a little differently from the endpoint's, at small max_tokens.
ANSWER_SLACK_CHARS = 1024
# Remote endpoints expose no tokenizer: English text averages about 4 characters per token
# in the common vocabularies, which is close enough to decide what fits a context window.
ESTIMATE_CHARS_PER_TOKEN = 4
# The longest wait between two retries, whatever a server asks for: a longer pause is an
# outage, better reported than waited out.
MAX_RETRY_WAIT = 60.0

# Calls one check may have in flight when nothing else is said: the widest fan-out of the
# built-in methods (ZoFia: five linguist dimensions, the expert and a claim at once) with
# room to spare. A run of N checks at once allows N times as many (`ModelClient.follow`).
CALLS_PER_CHECK = 8

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


# pydantic builds a type's JSON schema anew at every call, a share of the CPU a model
# call costs (docs/service.md, "Performance"); it is built once per type. Weak keys: the
# types made per call (`create_model`) go when their users do.
_schemas: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()
_schemas_lock = threading.Lock()


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to backends for a pydantic output type: a copy of its own."""
    with _schemas_lock:
        found = _schemas.get(model)
    if found is None:
        found = model.model_json_schema()
        with _schemas_lock:
            _schemas[model] = found
    return copy.deepcopy(found)


@dataclass
class _Exchange:
    """One chat call across its repair rounds: what was asked, and what it has cost so far."""

    step: str
    messages: tuple[Message, ...]
    params: GenParams
    json_schema: dict[str, Any] | None
    convo: list[Message]
    usage: Usage = field(default_factory=Usage)
    rejected: list[RejectedAnswer] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class _Checked:
    """What was made of one answer: its text as recorded, and the object or the error."""

    text: str
    parsed: BaseModel | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    # An answer no repair round can help (over the size cap): the call ends with it.
    final: bool = False


class ModelClient:
    """A chat backend with caching, accounting, limits, retries and validation added.

    client = ModelClient(backend, cache=ResponseCache(path), retries=3)
    client.sleep = waits.append         # tests: record retry waits instead of sleeping
    client.jitter = lambda: 0.5         # tests: a fixed share of the backoff
    """

    def __init__(
        self,
        backend: ChatBackend,
        *,
        cache: ResponseCache | None = None,
        params: GenParams | None = None,
        max_concurrency: int | None = None,
        retries: int = 3,
        backoff: float = 1.0,
        repair_attempts: int = 1,
        role: str = "default",
        chars_per_token: int = CHARS_PER_TOKEN,
        price: Price | None = None,
    ) -> None:
        self.backend = backend
        # None: the price is unknown, and calls are counted as unpriced, never as free.
        self.price = price
        self.cache = cache
        self.params = params or GenParams()
        self.retries = retries
        self.backoff = backoff
        self.repair_attempts = repair_attempts
        self.role = role
        self.chars_per_token = chars_per_token
        # Unset, the limit follows the run (`follow`); set, it holds whatever the run asks.
        self.explicit_limit = max_concurrency is not None
        self._slots = Slots(max_concurrency or CALLS_PER_CHECK)
        self._meter = _Meter()
        # Injected in tests so retries do not wait and their waits are known in advance.
        self.sleep: Callable[[float], None] = time.sleep
        self.asleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        self.jitter: Callable[[], float] = random.random

    @property
    def max_concurrency(self) -> int:
        """The most calls in flight at once, over every thread and event loop."""
        return self._slots.size

    def follow(self, checks: int) -> str | None:
        """Allow calls for ``checks`` checks at once, unless a limit was set explicitly.

        Returns what a set limit caps, to be printed: a run's concurrency is never
        silently lower than asked.
        """
        if not self.explicit_limit:
            self._slots.resize(max(1, checks) * CALLS_PER_CHECK)
            return None
        if self.max_concurrency < checks:
            return (
                f"model {self.backend.backend}:{self.backend.model} allows at most "
                f"{self.max_concurrency} calls at once (max_concurrency), fewer than the "
                f"{checks} checks asked to run at once"
            )
        return None

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
            "chars_per_token": self.chars_per_token,
            "price": self.price.model_dump(mode="json") if self.price else None,
        }

    def with_role(self, role: str) -> ModelClient:
        """The same model, its calls labelled with another agent role.

        The twin shares the concurrency limit and the usage total: they are the endpoint's.
        """
        twin = copy.copy(self)
        twin.role = role
        return twin

    @property
    def one_at_a_time(self) -> bool:
        """True for a backend that answers one call at a time whatever the limit (local)."""
        return bool(getattr(self.backend, "one_at_a_time", False))

    def context_tokens(self) -> int | None:
        """The model's context window in tokens, when the backend knows it (local models)."""
        value = getattr(self.backend, "context_tokens", None)
        return value if isinstance(value, int) else None

    def count_tokens(self, text: str) -> tuple[int, bool]:
        """Tokens in ``text``, and whether that count is exact.

        Exact with the backend's own tokenizer (local models); otherwise an estimate of one
        token per ``ESTIMATE_CHARS_PER_TOKEN`` characters.
        """
        count = getattr(self.backend, "count_tokens", None)
        if callable(count):
            return int(count(text)), True
        return -(-len(text) // ESTIMATE_CHARS_PER_TOKEN), False

    def answer_cap(self, max_tokens: int) -> int:
        """The most characters accepted in an answer to a call with this ``max_tokens``."""
        return max_tokens * self.chars_per_token + ANSWER_SLACK_CHARS

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
        """Send messages; with ``schema``, return the validated object in ``parsed``.

        Raises `ModelOutputError` when no answer validates after the repair rounds, or
        when an answer is over `answer_cap`.
        """
        talk = self._exchange(messages, step, schema, params)
        if log is not None:
            log.call_started(step, self.role, self.backend.model)
        last: tuple[RawCompletion, _Checked] | None = None
        while True:
            try:
                raw, key = self._complete_cached(talk.convo, talk.params, talk.json_schema)
            except BudgetExceededError:
                self._refused(talk, last, log)
                raise
            checked = self._receive(talk, raw, key, schema)
            last = (raw, checked)
            if key is not None and checked.error is None:
                self._store(key, raw)
            if not self._ask_repair(talk, checked):
                return self._finish(talk, raw, checked, log)

    def _complete_cached(
        self, messages: Sequence[Message], params: GenParams, schema: dict[str, Any] | None
    ) -> tuple[RawCompletion, str | None]:
        """A stored answer (with key None), else a fresh one with the key to store it under."""
        key = cache_key(self.backend.identity(), messages, params, schema)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit, None
        attempts, attempt = self._attempts(), 0
        spend = budget.current()
        while True:
            if spend is not None:
                spend.admit()  # BudgetExceededError before the request is sent
            try:
                with schedule.model_busy(), self._slots.held(), _answered(spend):
                    raw = self.backend.complete(messages, params, schema)
            except TransientModelError as exc:
                attempt += 1
                if attempt >= attempts:
                    raise
                self.sleep(self._delay(attempt - 1, exc))
                continue
            if spend is not None:
                spend.settle(self._usage_of(raw, cached=False))
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
        talk = self._exchange(messages, step, schema, params)
        if log is not None:
            log.call_started(step, self.role, self.backend.model)
        last: tuple[RawCompletion, _Checked] | None = None
        while True:
            try:
                raw, key = await self._acomplete_cached(talk.convo, talk.params, talk.json_schema)
            except BudgetExceededError:
                self._refused(talk, last, log)
                raise
            checked = self._receive(talk, raw, key, schema)
            last = (raw, checked)
            if key is not None and checked.error is None:
                await asyncio.to_thread(self._store, key, raw)
            if not self._ask_repair(talk, checked):
                return self._finish(talk, raw, checked, log)

    async def _acomplete_cached(
        self, messages: Sequence[Message], params: GenParams, schema: dict[str, Any] | None
    ) -> tuple[RawCompletion, str | None]:
        key = cache_key(self.backend.identity(), messages, params, schema)
        if self.cache is not None:
            hit = await asyncio.to_thread(self.cache.get, key)
            if hit is not None:
                return hit, None
        attempts, attempt = self._attempts(), 0
        spend = budget.current()
        while True:
            if spend is not None and spend.may_wait:
                await _admitted(spend)  # a rate limit's wait: not on the event loop
            elif spend is not None:
                spend.admit()
            try:
                with schedule.model_busy(), _answered(spend):
                    async with self._slots.aheld():
                        raw = await self.backend.acomplete(messages, params, schema)
            except TransientModelError as exc:
                attempt += 1
                if attempt >= attempts:
                    raise
                await self.asleep(self._delay(attempt - 1, exc))
                continue
            if spend is not None:
                spend.settle(self._usage_of(raw, cached=False))
            return raw, key

    # -- shared -------------------------------------------------------------------------

    def _exchange(
        self,
        messages: Sequence[Message],
        step: str,
        schema: type[BaseModel] | None,
        params: GenParams | None,
    ) -> _Exchange:
        return _Exchange(
            step=step,
            messages=tuple(messages),
            params=params or self.params,
            json_schema=schema_of(schema) if schema else None,
            convo=list(messages),
        )

    def _receive(
        self,
        talk: _Exchange,
        raw: RawCompletion,
        key: str | None,
        schema: type[BaseModel] | None,
    ) -> _Checked:
        """Count one answer's cost, then check its size, completeness and shape."""
        talk.usage = talk.usage + self._usage_of(raw, cached=key is None)
        max_tokens = talk.params.max_tokens
        cap = self.answer_cap(max_tokens)
        if len(raw.text) > cap:
            return _Checked(
                # Only the head is kept: the trace and the error are written out.
                text=raw.text[:cap],
                error=f"the answer has {len(raw.text):,} characters, over the cap of {cap:,} "
                f"for max_tokens={max_tokens} ({self.chars_per_token} per token + "
                f"{ANSWER_SLACK_CHARS}); it was neither cached nor parsed",
                final=True,
            )
        if schema is None:
            return _Checked(text=raw.text)
        if raw.finish_reason == "length":
            # A prefix of an answer can parse (an inner object, a shortened list) and
            # would then pass for the whole; it is never read.
            return _Checked(
                text=raw.text,
                error=f"the answer was cut off at max_tokens={max_tokens}; "
                "a shorter answer is needed",
            )
        try:
            answer = parse_answer(raw.text, schema, talk.json_schema)
        except ValidationError as exc:
            return _Checked(text=raw.text, error=_describe(exc))
        return _Checked(text=raw.text, parsed=answer.value, notes=answer.notes)

    def _ask_repair(self, talk: _Exchange, checked: _Checked) -> bool:
        """Whether to ask again; if so, the bad answer and the reason join the conversation."""
        if checked.error is None or checked.final or len(talk.rejected) >= self.repair_attempts:
            return False
        talk.rejected.append(RejectedAnswer(output=checked.text, error=checked.error))
        talk.convo = _repair_messages(talk.convo, checked.text, checked.error, talk.json_schema)
        return True

    def _store(self, key: str, raw: RawCompletion) -> None:
        # Only answers that validated are stored, as the model gave them: a rerun retries a
        # failed step afresh instead of replaying the failure, and normalises again.
        if self.cache is not None:
            self.cache.put(key, raw)

    def _usage_of(self, raw: RawCompletion, *, cached: bool) -> Usage:
        """One answer's tokens and cost; an answer from verity's cache costs nothing."""
        cost, unpriced = 0.0, 0
        if not cached:
            if self.price is None:
                unpriced = 1
            else:
                cost = self.price.cost_of(
                    prompt_tokens=raw.prompt_tokens,
                    completion_tokens=raw.completion_tokens,
                    cached_tokens=raw.cached_tokens,
                )
        return Usage(
            llm_calls=1,
            prompt_tokens=raw.prompt_tokens,
            completion_tokens=raw.completion_tokens,
            cached_tokens=raw.cached_tokens,
            cached_calls=1 if cached else 0,
            cost=cost,
            unpriced_calls=unpriced,
        )

    def _attempts(self) -> int:
        # A backend whose own client already retried (the OpenAI SDK) would have its
        # retries and waits multiplied by ours.
        if getattr(self.backend, "retries_itself", False):
            return 1
        return self.retries + 1

    def _delay(self, attempt: int, exc: TransientModelError) -> float:
        asked = _usable_wait(getattr(exc, "retry_after", None))
        if asked is not None:
            return min(asked, MAX_RETRY_WAIT)
        # Full jitter (a random share of the exponential backoff), as for web sources:
        # clients that failed together do not all come back at the same moment.
        return retry_delay(
            attempt,
            None,
            backoff=self.backoff,
            max_delay=MAX_RETRY_WAIT,
            jitter=lambda ceiling: self.jitter() * ceiling,
        )

    def _refused(
        self, talk: _Exchange, last: tuple[RawCompletion, _Checked] | None, log: CallLog | None
    ) -> None:
        """Record what a call got before the budget refused its repair round."""
        if last is None:
            return  # nothing was sent: there is nothing to record
        raw, checked = last
        talk.rejected.pop()  # its answer is the call's output, not one that was repaired
        self._finish(talk, raw, checked, log, raise_invalid=False)

    def _finish(
        self,
        talk: _Exchange,
        raw: RawCompletion,
        checked: _Checked,
        log: CallLog | None,
        *,
        raise_invalid: bool = True,
    ) -> Completion[Any]:
        usage = talk.usage.model_copy(update={"seconds": time.perf_counter() - talk.started})
        call = ModelCall(
            step=talk.step,
            role=self.role,
            backend=self.backend.backend,
            model=self.backend.model,
            messages=talk.messages,
            params=talk.params.model_dump(),
            output=checked.text,
            parsed=checked.parsed.model_dump(mode="json") if checked.parsed is not None else None,
            usage=usage,
            cached=usage.cached_calls == usage.llm_calls,
            structured_mode=raw.structured_mode,
            attempts=len(talk.rejected) + 1,
            rejected=tuple(talk.rejected),
            finish_reason=raw.finish_reason,
            normalised=checked.notes,
        )
        self._meter.add(usage)
        if log is not None:
            log.add_call(call)
        if checked.error is not None and raise_invalid:
            raise ModelOutputError(
                f"{self.backend.backend}:{self.backend.model} gave no valid answer for step "
                f"{talk.step!r} after {call.attempts} attempt(s): {checked.error}",
                raw=checked.text,
            )
        return Completion(text=checked.text, parsed=checked.parsed, call=call)


async def _admitted(spend: budget.Spend) -> None:
    """Admit a request in a worker thread; a task cancelled meanwhile gives its place back.

    The thread goes on after a cancel (threads cannot be stopped): if it then admits the
    request, nobody will send it, so the place is released at once.
    """
    abandoned = threading.Event()
    waiting = asyncio.ensure_future(asyncio.to_thread(spend.admit, abandoned))
    try:
        await asyncio.shield(waiting)
    except asyncio.CancelledError:
        abandoned.set()  # a rate limit's wait gives up at its next look

        def give_back(done: asyncio.Future[None]) -> None:
            if not done.cancelled() and done.exception() is None:
                spend.release()

        waiting.add_done_callback(give_back)
        raise


@contextmanager
def _answered(spend: budget.Spend | None) -> Iterator[None]:
    """A request that fails still ends: the spend's hooks are told, with nothing spent."""
    try:
        yield
    except BaseException:
        if spend is not None:
            spend.settle(Usage())
        raise


class _Meter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = Usage()

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.total = self.total + usage


def _usable_wait(seconds: object) -> float | None:
    """A wait in seconds, or None for what ``sleep`` cannot take (negative, NaN, not a number)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return float(seconds)


def _describe(exc: ValidationError) -> str:
    """The first few validation problems, each as ``field.path: message``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}"
        for err in exc.errors()[:5]
    )


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
