"""What runs inside a Ray worker: plain classes that `ActorPool` makes into Ray actors.

    worker = ItemWorker(work)           # in the worker process
    worker.ready()                      # builds the work once (models load here)
    worker.check(item)                  # the item's result

    jobs = JobWorker(make_executor)
    for kind, payload in jobs.run("call-id", request):   # ("event", Event) ... then
        ...                                               # ("verdict", Verdict)
    jobs.cancel("call-id")              # the check stops at its next event

They import no Ray: the worker process imports this module to rebuild them, and they can
be tested as they are. Each takes several calls at once in threads; the work (or the
executor) is built once, by the first call that needs it, under a lock.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from verity.domain import Event
from verity.engines import Work, portable_error

# How often a waiting stream looks again whether its check ended without a last word
# (it always says one; this only bounds a wait that could otherwise never end).
_POLL_SECONDS = 1.0


class ItemWorker:
    """Checks items with a `Work` built once in this worker."""

    def __init__(self, work: Work[Any, Any]) -> None:
        self.work = work
        self._check: Callable[[Any], Any] | None = None
        self._lock = threading.Lock()

    def _checker(self) -> Callable[[Any], Any]:
        with self._lock:
            if self._check is None:
                self._check = self.work.build()
            return self._check

    def ready(self) -> bool:
        """Build the work now; its error (a missing key, say) is raised to the driver."""
        try:
            self._checker()
        except Exception as exc:  # noqa: BLE001 - re-raised, in a form that can travel
            raise portable_error(exc) from None
        return True

    def check(self, item: Any) -> Any:
        """The item's result; a failure of the function itself is recorded as its result."""
        try:
            return self._checker()(item)
        except Exception as exc:  # noqa: BLE001 - recorded as this item's result
            return self.work.failed(item, portable_error(exc))


class CheckCancelled(Exception):
    """The driver cancelled this check; raised at its next event to stop it."""


# What a worker runs: a request and a listener in, the result out (a Verdict, or a
# document's outcome, which carries its own record).
Executor = Callable[[Any, Callable[[Event], None]], Any]


class JobWorker:
    """Runs a service's checks with an executor built once in this worker, streaming events."""

    def __init__(self, make_executor: Callable[[], Executor]) -> None:
        self.make_executor = make_executor
        self._executor: Executor | None = None
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._cancelled: set[str] = set()

    def _get(self) -> Executor:
        with self._lock:
            if self._executor is None:
                self._executor = self.make_executor()
            return self._executor

    def ready(self) -> bool:
        """Build the executor now; its error is raised to the driver."""
        try:
            self._get()
        except Exception as exc:  # noqa: BLE001 - re-raised, in a form that can travel
            raise portable_error(exc) from None
        return True

    def cancel(self, call_id: str) -> None:
        """Stop the check of ``call_id`` at its next event (one already over: nothing)."""
        with self._lock:
            if call_id in self._running:
                self._cancelled.add(call_id)

    def run(self, call_id: str, request: Any) -> Iterator[tuple[str, Any]]:
        """Yield ``("event", Event)`` as the check goes, then ``("verdict", Verdict)``.

        A failed check ends with ``("error", exception)`` instead: the driver raises it,
        as the executor would have in its own process.
        """
        out: queue.Queue[tuple[str, Any]] = queue.Queue()
        with self._lock:
            self._running.add(call_id)

        def listener(event: Event) -> None:
            with self._lock:
                stop = call_id in self._cancelled
            if stop:
                raise CheckCancelled(f"check {call_id} was cancelled")
            out.put(("event", event))

        def work() -> None:
            try:
                out.put(("verdict", self._get()(request, listener)))
            except Exception as exc:  # noqa: BLE001 - sent to the driver, which raises it
                out.put(("error", portable_error(exc)))

        # The check runs in a thread of its own, so that this generator can hand each
        # event to the driver while the check goes on.
        thread = threading.Thread(target=work, name=f"verity-job-{call_id[:8]}", daemon=True)
        thread.start()
        try:
            while True:
                try:
                    kind, payload = out.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    if thread.is_alive():
                        continue
                    try:  # its last word may have come just before it ended
                        kind, payload = out.get_nowait()
                    except queue.Empty:
                        return  # ended without one: the driver says the worker was lost
                yield kind, payload
                if kind != "event":
                    return
        finally:
            thread.join()
            with self._lock:
                self._running.discard(call_id)
                self._cancelled.discard(call_id)
