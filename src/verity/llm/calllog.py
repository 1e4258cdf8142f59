"""The record of one verdict in the making: its model calls and its retrievals.

log = CallLog()
answer = client.chat(messages, step="judge", log=log)
verdict = Verdict(..., usage=log.usage(), trace=log.trace(query=...))
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from verity import events, schedule
from verity.domain import EventData, ModelCall, Retrieval, Trace, Usage

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
        """Report a step of the method's own (``local.iteration``, ``zofia.round``)."""
        if self._sink is not None:
            details: EventData = dict(data)
            self._sink.emit("milestone", message, name=name, data=details)

    def add_retrieval(self, retrieval: Retrieval) -> None:
        """Record one source query."""
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


def _ordered(records: list[tuple[Place, T]]) -> tuple[T, ...]:
    return tuple(item for _, item in sorted(records, key=lambda pair: pair[0]))
