"""An event loop per worker thread, kept from one check to the next.

    loops = WorkerLoops()
    verdict = loops.run(method.averify(subject))    # on this thread's own loop
    loops.close()                                    # once the workers have stopped

`asyncio.run` builds an event loop for each check and takes it down after: a selector
and its self-pipe, the thread that `asyncio.to_thread` and name lookups use (started
again for every check), and one more thread to stop that one. A worker's loop kept for
its next check keeps them all. A run still ends as one of `asyncio.run` does: the tasks
the check left behind are cancelled and waited for, so nothing of one check goes on
into the next. The check runs in the caller's context (its task copies it), so it sees
the job's listener and budget as it would under `asyncio.run`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class WorkerLoops:
    """One event loop for each thread that runs checks through it."""

    def __init__(self) -> None:
        self._local = threading.local()
        # Each loop is closed when its thread ends (the thread's local storage goes), or
        # by `close`, whichever comes first.
        self._closers: list[weakref.finalize[Any, Any]] = []
        self._lock = threading.Lock()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` to its end on this thread's loop (made on first use)."""
        loop = self._loop()
        try:
            return loop.run_until_complete(work)
        finally:
            cancel_left(loop)

    def close(self) -> None:
        """Close the loops no check runs on any more (a worker stuck in a call keeps its own)."""
        with self._lock:
            closers, self._closers = self._closers, []
        for closer in closers:
            found = closer.peek()
            if found is None:
                continue  # its thread ended: closed already
            loop: asyncio.AbstractEventLoop = found[2][0]
            if loop.is_running():
                continue
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                closer()

    def _loop(self) -> asyncio.AbstractEventLoop:
        owned: _Owned | None = getattr(self._local, "owned", None)
        if owned is None or owned.loop.is_closed():
            owned = _Owned(asyncio.new_event_loop())
            with self._lock:
                self._closers = [c for c in self._closers if c.alive]
                self._closers.append(weakref.finalize(owned, _close, owned.loop))
            self._local.owned = owned
        return owned.loop


class _Owned:
    """A thread's loop, held by the thread's local storage only."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop


def _close(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_running() and not loop.is_closed():
        loop.close()


def loop_running() -> bool:
    """Whether an event loop runs in this thread (the caller is a coroutine's sync call)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def cancel_left(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks left on ``loop`` and wait for them, as `asyncio.run` does at its end."""
    left = asyncio.all_tasks(loop)
    if not left:
        return
    for task in left:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    for task in left:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception of a task a check left behind",
                    "exception": task.exception(),
                    "task": task,
                }
            )
