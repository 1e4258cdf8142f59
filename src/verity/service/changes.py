"""Wake whoever waits on a job when it changes: a thread, or a coroutine on an event loop.

    changes = Changes()
    with changes.watch(job_id) as watcher:          # register first, then look
        while not store.get(job_id).final:
            watcher.wait(timeout=15.0)              # True when woken, False on timeout

    async with changes.awatch(job_id) as watcher:   # the same on an event loop
        await watcher.wait(timeout=15.0)

    changes.changed(job_id)                         # from a worker: a new event, a new status
    changes.changed(job_id, ended=True)             # ... its run ended

    async with changes.awatch(job_id, ends_only=True) as watcher:
        ...                                         # woken when a run ends, not per event

A watcher registers before its owner reads the state it waits on, so a change between the
read and the wait is never missed: it leaves the watcher set, and the wait returns at
once. Waiting costs no thread: an event loop's watcher is woken through
``call_soon_threadsafe``, so many open event streams hold no worker threads. A watcher
that waits for the end only (``ends_only``: a request waiting for its verdict) sleeps
through a check's progress events, each of which would wake its event loop and have it
read the job again for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator

ALL = "*"  # watch every job


class ThreadWatcher:
    """Waits in a thread for a change of the job it watches."""

    def __init__(self, *, ends_only: bool = False) -> None:
        self.ends_only = ends_only
        self._event = threading.Event()

    def wake(self) -> None:
        """Mark a change (any thread)."""
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a change since the last wait, or the timeout; whether one came."""
        woken = self._event.wait(timeout)
        self._event.clear()
        return woken


class LoopWatcher:
    """Waits on an event loop for a change of the job it watches."""

    def __init__(self, *, ends_only: bool = False) -> None:
        self.ends_only = ends_only
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def wake(self) -> None:
        """Mark a change (any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until a change since the last wait, or the timeout; whether one came."""
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            return False
        finally:
            self._event.clear()
        return True


Watcher = ThreadWatcher | LoopWatcher


class Changes:
    """Who watches which job; `changed` wakes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchers: dict[str, set[Watcher]] = {}

    def changed(self, job_id: str, *, ended: bool = False) -> None:
        """Wake the watchers of this job, and those of every job.

        ``ended``: a run of the job ended (done, failed, cancelled, or put back in the
        queue); only then are the watchers that wait for the end woken too.
        """
        with self._lock:
            woken = [*self._watchers.get(job_id, ()), *self._watchers.get(ALL, ())]
        for watcher in woken:
            if ended or not watcher.ends_only:
                watcher.wake()

    def wake_all(self) -> None:
        """Wake every watcher (the server is stopping)."""
        with self._lock:
            woken = [w for group in self._watchers.values() for w in group]
        for watcher in woken:
            watcher.wake()

    @contextlib.contextmanager
    def watch(self, job_id: str = ALL, *, ends_only: bool = False) -> Iterator[ThreadWatcher]:
        """A watcher for a thread, registered for the block.

        ``ends_only``: woken when a run ends and when the server stops, not by each event.
        """
        watcher = ThreadWatcher(ends_only=ends_only)
        self._add(job_id, watcher)
        try:
            yield watcher
        finally:
            self._remove(job_id, watcher)

    @contextlib.asynccontextmanager
    async def awatch(
        self, job_id: str = ALL, *, ends_only: bool = False
    ) -> AsyncIterator[LoopWatcher]:
        """A watcher for a coroutine on the running loop, registered for the block.

        ``ends_only`` as for `watch`.
        """
        watcher = LoopWatcher(ends_only=ends_only)
        self._add(job_id, watcher)
        try:
            yield watcher
        finally:
            self._remove(job_id, watcher)

    def _add(self, job_id: str, watcher: Watcher) -> None:
        with self._lock:
            self._watchers.setdefault(job_id, set()).add(watcher)

    def _remove(self, job_id: str, watcher: Watcher) -> None:
        with self._lock:
            group = self._watchers.get(job_id)
            if group is not None:
                group.discard(watcher)
                if not group:
                    del self._watchers[job_id]
