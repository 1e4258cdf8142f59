"""The record of one verdict in the making: its model calls and its retrievals.

log = CallLog()
answer = client.chat(messages, step="judge", log=log)
verdict = Verdict(..., usage=log.usage(), trace=log.trace(query=...))
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from verity import schedule
from verity.domain import ModelCall, Retrieval, Trace, Usage

T = TypeVar("T")
Place = tuple[int, ...]


class CallLog:
    """Collects what a method did for one input; safe to share between threads and tasks.

    Within a tracked check (`verity.schedule`) records are kept in the order a sequential
    run makes them, even when independent steps ran at once; elsewhere in the order they
    arrive.
    """

    def __init__(self) -> None:
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

    def add_retrieval(self, retrieval: Retrieval) -> None:
        """Record one source query."""
        place = self._place(0)
        with self._lock:
            self._retrievals.append((place, retrieval))

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
