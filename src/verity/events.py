"""Live progress of a running check: every model call, retrieval and method milestone.

    def show(event: Event) -> None:
        print(event.seq, event.message)

    with events.listening(show):
        verdict = method.verify(claim)     # or verity.check(..., on_event=show)

A method emits nothing itself for the generic events: the `CallLog` it already carries
reports each model call as it starts and ends and each retrieval, and `MethodBase` the
check's start and end. A method adds its own steps with one line each::

    log.milestone("local.iteration", "iteration 2 of 3", iteration=2)

A listener runs in the thread that made the event, while the check waits: it should be
quick. An exception it raises stops the check (a service cancels a job that way).
Text from outside (a query, a model's step name, a milestone detail) is cut to
`TEXT_CAP` characters: an event is a progress line, not a copy of the trace.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from verity.domain import Event, EventKind, Label

Listener = Callable[[Event], None]
TEXT_CAP = 300
_sink: ContextVar[EventSink | None] = ContextVar("verity_event_sink", default=None)


class EventSink:
    """Numbers and times one check's events, then hands them to a listener."""

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self._lock = threading.Lock()
        self._seq = 0
        self._started = time.monotonic()

    def emit(self, kind: EventKind, message: str, **fields: Any) -> None:
        """Build the next event and call the listener with it."""
        with self._lock:
            self._seq += 1
            seq = self._seq
        clean = {k: _capped(v) for k, v in fields.items() if v is not None}
        if "data" in clean:
            clean["data"] = {k: _capped(v) for k, v in clean["data"].items()}
        event = Event(
            seq=seq,
            kind=kind,
            at=round(time.monotonic() - self._started, 4),
            message=_capped(message),
            **clean,
        )
        self.listener(event)


def _capped(value: Any) -> Any:
    if isinstance(value, str) and len(value) > TEXT_CAP:
        return value[: TEXT_CAP - 1] + "…"
    return value


@contextmanager
def listening(listener: Listener | None) -> Iterator[EventSink | None]:
    """Send the events of the checks run inside this block to ``listener`` (None: nowhere)."""
    sink = EventSink(listener) if listener is not None else None
    token = _sink.set(sink)
    try:
        yield sink
    finally:
        _sink.reset(token)


def current() -> EventSink | None:
    """The sink of the block being run, if anyone listens."""
    return _sink.get()


def check_started(method: str, subject: str) -> None:
    """The first event of a check."""
    if (sink := current()) is not None:
        sink.emit("check.start", f"{method}: checking {subject}", method=method)


def check_ended(method: str, label: Label | str, seconds: float) -> None:
    """The last event of a check that reached a verdict."""
    if (sink := current()) is not None:
        sink.emit(
            "check.end",
            f"{method}: {label} after {seconds:.1f} s",
            method=method,
            label=str(label),
            seconds=round(seconds, 3),
        )
