"""A limit on model calls in flight, shared by every thread and event loop of a process.

    slots = Slots(8)
    with slots.held():              # a sync call
        ...
    async with slots.aheld():       # an async call, in any event loop
        ...
    slots.resize(32)                # a run with more examples at once

An `asyncio.Semaphore` belongs to one event loop, and a benchmark's workers each run their
checks in a loop of their own; a `threading.Semaphore` would block an event loop. This
counts slots under one lock and hands a freed slot to the longest waiter, waking a thread
through its event and a task through its loop, so a limit means the same whoever calls.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

_Waiter = tuple[asyncio.AbstractEventLoop | None, "asyncio.Future[None] | threading.Event"]


class Slots:
    """At most ``size`` holders at once; waiters served first come, first served."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a limit needs at least one slot")
        self._lock = threading.Lock()
        self._size = size
        self._held = 0
        self._waiters: deque[_Waiter] = deque()

    @property
    def size(self) -> int:
        """The most holders at once."""
        return self._size

    def resize(self, size: int) -> None:
        """Change the limit; holders over a smaller limit finish, new ones wait."""
        if size < 1:
            raise ValueError("a limit needs at least one slot")
        with self._lock:
            self._size = size
        self._hand_over()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold a slot in this thread, waiting for one if need be."""
        event: threading.Event | None = None
        with self._lock:
            if self._held < self._size and not self._waiters:
                self._held += 1
            else:
                event = threading.Event()
                self._waiters.append((None, event))
        if event is not None:
            event.wait()
        try:
            yield
        finally:
            self._release()

    @asynccontextmanager
    async def aheld(self) -> AsyncIterator[None]:
        """Hold a slot in this task, waiting without blocking the loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] | None = None
        with self._lock:
            if self._held < self._size and not self._waiters:
                self._held += 1
            else:
                future = loop.create_future()
                self._waiters.append((loop, future))
        if future is not None:
            try:
                await future
            except asyncio.CancelledError:
                with self._lock:
                    waiting = (loop, future) in self._waiters
                    if waiting:
                        self._waiters.remove((loop, future))
                if not waiting and future.done() and not future.cancelled():
                    self._release()  # the slot came just as the wait was cancelled
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        with self._lock:
            self._held -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        """Give free slots to waiters, in order."""
        while True:
            with self._lock:
                if self._held >= self._size or not self._waiters:
                    return
                loop, waiter = self._waiters.popleft()
                self._held += 1
            if isinstance(waiter, threading.Event):
                waiter.set()
                continue
            try:
                loop.call_soon_threadsafe(self._wake, waiter)  # type: ignore[union-attr]
            except RuntimeError:  # its loop has closed: the slot goes to the next waiter
                self._release()
                return

    def _wake(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            self._release()  # cancelled while its slot was on the way
        else:
            future.set_result(None)
