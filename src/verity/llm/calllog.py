"""The record of one verdict in the making: its model calls and its retrievals.

log = CallLog()
answer = client.chat(messages, step="judge", log=log)
verdict = Verdict(..., usage=log.usage(), trace=log.trace(query=...))

with collecting() as logs:          # around a check: every log made inside it, so that a
    ...                             # check that fails still shows what it did and spent
logs.usage(), logs.trace()
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from verity import events, schedule
from verity.domain import EventData, ModelCall, Retrieval, Trace, Usage
from verity.llm import budget

T = TypeVar("T")
Place = tuple[int, ...]


class CallLog:
    """Collects what a method did for one input; safe to share between threads and tasks.

    Within a tracked check (`verity.schedule`) records are kept in the order a sequential
    run makes them, even when independent steps ran at once; elsewhere in the order they
    arrive.

    It also reports each call and retrieval as a live event (`verity.events`) to whoever
    listened where it was made, and the method's own milestones.
    """

    def __init__(self) -> None:
        self._sink = events.current()
        self._lock = threading.Lock()
        self._calls: list[tuple[Place, ModelCall]] = []
        self._retrievals: list[tuple[Place, Retrieval]] = []
        self._arrived = 0
        collected = _COLLECTED.get()
        if collected is not None:
            collected.add(self)

    def _place(self, calls: int) -> Place:
        place = schedule.record(calls)
        if place is None:
            with self._lock:
                self._arrived += 1
                place = (self._arrived,)
        return place

    def add_call(self, call: ModelCall) -> None:
        """Record one model call; its answers (repairs included) join the critical path."""
        place = self._place(call.usage.llm_calls)
        with self._lock:
            self._calls.append((place, call))
        if self._sink is not None:
            tokens = call.usage.prompt_tokens + call.usage.completion_tokens
            seconds = call.usage.seconds
            note = " (cached)" if call.cached else f", {tokens} tokens, {seconds:.1f} s"
            self._sink.emit(
                "call.end",
                f"{call.step} answered{note}",
                step=call.step,
                role=call.role,
                model=call.model,
                tokens=tokens,
                seconds=round(seconds, 3),
                cached=call.cached,
            )

    def call_started(self, step: str, role: str, model: str) -> None:
        """Report a model call as it is sent (it is recorded when it ends)."""
        if self._sink is not None:
            self._sink.emit(
                "call.start", f"{step}: asking the model", step=step, role=role, model=model
            )

    def milestone(self, name: str, message: str, **data: str | int | float | bool | None) -> None:
        """Report a step of the method's own (``local.iteration``, ``zofia.round``).

        A check whose time budget is spent stops here, between model calls.
        """
        budget.check_time()
        if self._sink is not None:
            details: EventData = dict(data)
            self._sink.emit("milestone", message, name=name, data=details)

    def add_retrieval(self, retrieval: Retrieval) -> None:
        """Record one source query; a check whose time budget is spent stops after it."""
        place = self._place(0)
        with self._lock:
            self._retrievals.append((place, retrieval))
        if self._sink is not None:
            found = len(retrieval.results)
            outcome = f"failed: {retrieval.error}" if retrieval.error else f"{found} result(s)"
            self._sink.emit(
                "retrieval",
                f"{retrieval.source}: {retrieval.query!r}, {outcome}",
                source=retrieval.source,
                query=retrieval.query,
                results=found,
                error=retrieval.error,
            )
        budget.check_time()

    @property
    def calls(self) -> tuple[ModelCall, ...]:
        """The calls so far, in a sequential run's order."""
        with self._lock:
            return _ordered(self._calls)

    @property
    def retrievals(self) -> tuple[Retrieval, ...]:
        """The retrievals so far, in a sequential run's order."""
        with self._lock:
            return _ordered(self._retrievals)

    def usage(self) -> Usage:
        """The summed usage of every call recorded."""
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        return total

    def trace(self, **extra: Any) -> Trace:
        """A trace of everything recorded, plus the method's own typed parts."""
        return Trace(calls=self.calls, retrievals=self.retrievals, **extra)


class Collected:
    """Every `CallLog` made within one check: what it did so far, should it fail."""

    def __init__(self, parent: Collected | None = None) -> None:
        self._lock = threading.Lock()
        self._logs: list[CallLog] = []
        # A check inside a check (a method that runs another): the outer one sees it all.
        self._parent = parent

    def add(self, log: CallLog) -> None:
        """Keep a log made within the check (and within every check around it)."""
        with self._lock:
            self._logs.append(log)
        if self._parent is not None:
            self._parent.add(log)

    def _records(self) -> tuple[list[tuple[Place, ModelCall]], list[tuple[Place, Retrieval]]]:
        with self._lock:
            logs = list(self._logs)
        calls: list[tuple[Place, ModelCall]] = []
        retrievals: list[tuple[Place, Retrieval]] = []
        for log in logs:
            with log._lock:
                calls += log._calls
                retrievals += log._retrievals
        return calls, retrievals

    def usage(self) -> Usage:
        """The summed usage of every call recorded by any of the logs."""
        total = Usage()
        for _, call in self._records()[0]:
            total = total + call.usage
        return total

    def trace(self) -> Trace:
        """The calls and retrievals of every log, in a sequential run's order."""
        calls, retrievals = self._records()
        return Trace(calls=_ordered(calls), retrievals=_ordered(retrievals))


_COLLECTED: ContextVar[Collected | None] = ContextVar("verity_collected", default=None)


@contextmanager
def collecting() -> Iterator[Collected]:
    """Gather every `CallLog` made in the body (a check) into one `Collected`."""
    collected = Collected(_COLLECTED.get())
    token = _COLLECTED.set(collected)
    try:
        yield collected
    finally:
        _COLLECTED.reset(token)


def _ordered(records: list[tuple[Place, T]]) -> tuple[T, ...]:
    return tuple(item for _, item in sorted(records, key=lambda pair: pair[0]))
