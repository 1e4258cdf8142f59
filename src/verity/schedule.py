"""Independent steps of one check run at once; the trace still reads as a sequential run.

    with tracked(parallel=True) as lane:              # around one check
        a, b = await gather(ask_a(), ask_b())         # both in flight together
        c = await ask_c(a, b)                         # waits for both
    lane.depth          # 2: model calls that stood one after another (a or b, then c)
    lane.idle_seconds   # time with none of the check's model calls in flight

A check runs on a `Lane`. A lane counts the model calls on its critical path so far
(`depth`) and numbers everything recorded on it (`position`): `gather` gives each branch
a lane of its own, numbered after the parent's records, and when the branches are done
the parent's depth is the deepest branch's. `CallLog` sorts what it records by position,
so the order of a trace is the order a sequential run gives, whichever call finished
first, and a sequential run (``parallel=False``, for a model that answers one call at a
time anyway) gives the same trace, with every branch's calls added to one path.

The lane travels in a context variable: tasks and ``asyncio.to_thread`` carry it, so a
step deep inside a method needs no argument for it. Outside a tracked check nothing is
counted and `gather` simply runs its branches together.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from verity.errors import BudgetExceededError, ContextOverflowError

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")

_LANE: ContextVar[Lane | None] = ContextVar("verity_lane", default=None)


_checks = itertools.count(1)


@dataclass
class _Clock:
    """What all lanes of one check share: calls in flight, and the time with none."""

    check: int = field(default_factory=lambda: next(_checks))
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    idle_since: float | None = field(default_factory=time.perf_counter)
    idle: float = 0.0

    def start(self) -> None:
        with self.lock:
            if self.in_flight == 0 and self.idle_since is not None:
                self.idle += time.perf_counter() - self.idle_since
                self.idle_since = None
            self.in_flight += 1

    def stop(self) -> None:
        with self.lock:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle_since = time.perf_counter()

    def idle_seconds(self) -> float:
        with self.lock:
            since = self.idle_since
            return self.idle + (time.perf_counter() - since if since is not None else 0.0)


@dataclass
class Lane:
    """One line of work within a check: its critical path so far and its numbering."""

    parallel: bool
    depth: int = 0
    prefix: tuple[int, ...] = ()
    clock: _Clock = field(default_factory=_Clock)
    _next: int = 0

    def position(self) -> tuple[int, ...]:
        """The place of the next record in a sequential run's order."""
        with self.clock.lock:  # a step may record from worker threads
            place = (*self.prefix, self._next)
            self._next += 1
        return place

    @property
    def idle_seconds(self) -> float:
        """Seconds of the check so far with none of its model calls in flight."""
        return self.clock.idle_seconds()

    def _branches(self, n: int) -> list[Lane]:
        slot = self._next
        self._next += 1
        return [
            Lane(self.parallel, self.depth, (*self.prefix, slot, i), self.clock) for i in range(n)
        ]


def current() -> Lane | None:
    """The lane of the running check, if any."""
    return _LANE.get()


def check_id() -> int | None:
    """A number for the running check, the same in all its branches; None outside one.

    Shared records (a graph's query log) tag what they record with it, so that checks
    running at once do not count each other's work.
    """
    lane = _LANE.get()
    return lane.clock.check if lane is not None else None


@contextmanager
def tracked(*, parallel: bool) -> Iterator[Lane]:
    """Run the body as one check on a fresh lane."""
    lane = Lane(parallel)
    token = _LANE.set(lane)
    try:
        yield lane
    finally:
        _LANE.reset(token)


def record(calls: int = 0) -> tuple[int, ...] | None:
    """A position for one record of the current lane; ``calls`` model calls join its path.

    None outside a tracked check.
    """
    lane = _LANE.get()
    if lane is None:
        return None
    lane.depth += calls
    return lane.position()


@contextmanager
def model_busy() -> Iterator[None]:
    """Mark a model call in flight, for the check's non-model time."""
    lane = _LANE.get()
    if lane is None:
        yield
        return
    lane.clock.start()
    try:
        yield
    finally:
        lane.clock.stop()


@overload
async def gather(a: Awaitable[A], b: Awaitable[B], /) -> tuple[A, B]: ...
@overload
async def gather(a: Awaitable[A], b: Awaitable[B], c: Awaitable[C], /) -> tuple[A, B, C]: ...
@overload
async def gather(*steps: Awaitable[T]) -> tuple[T, ...]: ...
async def gather(*steps: Awaitable[Any]) -> tuple[Any, ...]:
    """Run independent steps, at once unless the check is sequential; results in order.

    The first failure (in the steps' order, among those that failed) is raised once the
    others are cancelled: a check never leaves work running behind its error. A spent
    budget goes first, whichever step met it: a method may recover from another step's
    error, but a check whose budget is spent must stop.
    """
    lane = _LANE.get()
    if not steps:
        return ()
    if lane is None:
        return tuple(await asyncio.gather(*steps))
    branches = lane._branches(len(steps))
    if not lane.parallel:
        results = []
        for n, (branch, step) in enumerate(zip(branches, steps, strict=True)):
            branch.depth = lane.depth
            try:
                results.append(await _on(branch, step))
            except BaseException:
                _close(steps[n + 1 :])  # never started: nothing to cancel, only to discard
                raise
            lane.depth = branch.depth
        return tuple(results)
    tasks = [asyncio.ensure_future(_on(b, s)) for b, s in zip(branches, steps, strict=True)]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    failures: list[BaseException] = [
        error for t in tasks if not t.cancelled() and (error := t.exception()) is not None
    ]
    if failures:
        raise _first(failures)
    lane.depth = max((b.depth for b in branches), default=lane.depth)
    return tuple(task.result() for task in tasks)


def _close(steps: Sequence[Awaitable[Any]]) -> None:
    for step in steps:
        close = getattr(step, "close", None)  # a coroutine never awaited warns unless closed
        if callable(close):
            close()


async def _on(lane: Lane, step: Awaitable[Any]) -> Any:
    token = _LANE.set(lane)
    try:
        return await step
    finally:
        _LANE.reset(token)


def _first(failures: Sequence[BaseException]) -> BaseException:
    """The failure to raise: a spent budget (not a prompt over the context), else the first."""
    for failure in failures:
        if isinstance(failure, BudgetExceededError) and not isinstance(
            failure, ContextOverflowError
        ):
            return failure
    return failures[0]
