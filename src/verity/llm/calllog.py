"""The record of one verdict in the making: its model calls and its retrievals.

log = CallLog()
answer = client.chat(messages, step="judge", log=log)
verdict = Verdict(..., usage=log.usage(), trace=log.trace(query=...))
"""

from __future__ import annotations

import threading
from typing import Any

from verity.domain import ModelCall, Retrieval, Trace, Usage


class CallLog:
    """Collects what a method did for one input; safe to share between threads and tasks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[ModelCall] = []
        self._retrievals: list[Retrieval] = []

    def add_call(self, call: ModelCall) -> None:
        """Record one model call."""
        with self._lock:
            self._calls.append(call)

    def add_retrieval(self, retrieval: Retrieval) -> None:
        """Record one source query."""
        with self._lock:
            self._retrievals.append(retrieval)

    @property
    def calls(self) -> tuple[ModelCall, ...]:
        """The calls so far, in the order they finished."""
        with self._lock:
            return tuple(self._calls)

    @property
    def retrievals(self) -> tuple[Retrieval, ...]:
        """The retrievals so far, in the order they finished."""
        with self._lock:
            return tuple(self._retrievals)

    def usage(self) -> Usage:
        """The summed usage of every call recorded."""
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        return total

    def trace(self, **extra: Any) -> Trace:
        """A trace of everything recorded, plus the method's own typed parts."""
        return Trace(calls=self.calls, retrievals=self.retrievals, **extra)
