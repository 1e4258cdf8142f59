"""The worker pool: a bounded queue of jobs and the threads that run them.

    pool = WorkerPool(store, executor, workers=2, queue_size=100)
    pool.start()                          # jobs left queued or running by a crash run again
    job = pool.submit(request, method="rag", key=None)     # QueueFull past the bound
    pool.cancel(job.id)
    pool.stop()                           # running jobs go back to the queue for next time

An executor is one callable, ``executor(request, listener) -> Verdict`` (a document:
`DocumentVerdict`)
(`verity.service.execute.LocalExecutor`, or the Ray engine's): it calls the listener with
each progress event. The pool's listener stores the event and wakes whoever watches the
job; it raises `JobStopped` when the job was cancelled, or the server is stopping, which
ends the check at its next step (`verity.events`).

With a `UsageLimiter` (model calls and tokens a minute per key), every model call a job
makes in this process waits for room in its key's window first (`verity.llm.budget`'s
hooks): the server then holds its calls a minute however many jobs run at once.

Every job is in the store before it is in the queue, and a job is taken from the queue
only by marking it running there, so after ``kill -9`` a restart finds every job that had
not ended and runs it again; the store's guarded updates make each job end once.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, runtime_checkable

from verity.domain import Event, Usage
from verity.events import Listener
from verity.llm.budget import Spend, spending
from verity.service.changes import Changes
from verity.service.errors import job_error, partial_of
from verity.service.jobs import Job, JobStore
from verity.service.requests import CheckRequest
from verity.service.usage_limits import UsageLimiter


class Outcome(Protocol):
    """What a check gives: a `Verdict`, or a document's `DocumentVerdict`."""

    def to_json_dict(self) -> dict[str, Any]:
        """The record the job stores."""
        ...


@runtime_checkable
class Reported(Protocol):
    """An outcome with a Markdown report of its own (a document's), kept with the job."""

    def report(self) -> str:
        """The report's Markdown text."""
        ...


Executor = Callable[[CheckRequest, Listener], Outcome]

log = logging.getLogger("verity.service")

# Retry-After before any job has finished, and the most it ever says.
FIRST_GUESS_SECONDS = 5.0
MOST_RETRY_SECONDS = 600


class QueueFull(Exception):
    """The queue holds as many jobs as it may; try again after ``retry_after`` seconds."""

    def __init__(self, size: int, retry_after: int) -> None:
        super().__init__(f"the queue is full ({size} checks waiting); try again later")
        self.size, self.retry_after = size, retry_after


class JobStopped(Exception):
    """Raised by the listener to end a job's check: cancelled, or the server is stopping."""


class WorkerPool:
    """Threads that take queued jobs in order and run each through the executor."""

    def __init__(
        self,
        store: JobStore,
        executor: Executor,
        *,
        workers: int = 2,
        queue_size: int = 100,
        changes: Changes | None = None,
        usage_limits: UsageLimiter | None = None,
    ) -> None:
        if workers < 1 or queue_size < 1:
            raise ValueError("a pool needs at least one worker and room for one job")
        self.store, self.executor = store, executor
        self.usage_limits = usage_limits
        self.workers, self.queue_size = workers, queue_size
        self.changes = changes or Changes()
        self._queue: deque[str] = deque()
        self._ready = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running = 0
        self._mean_seconds: float | None = None

    # -- the queue ------------------------------------------------------------------------

    def start(self) -> list[str]:
        """Queue again what a crash left behind, then start the workers; the ids requeued."""
        recovered = self.store.recover()
        with self._ready:
            self._queue.extend(recovered)
        if recovered:
            log.info("%d check(s) left unfinished run again", len(recovered))
        for number in range(self.workers):
            thread = threading.Thread(
                target=self._work, name=f"verity-worker-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return recovered

    def submit(
        self, request: CheckRequest, *, method: str | None = None, key: str | None = None
    ) -> Job:
        """Store a job for this request and queue it; `QueueFull` past the bound."""
        with self._ready:
            if len(self._queue) >= self.queue_size:
                raise QueueFull(len(self._queue), self.retry_after())
            job = self.store.create(request, method=method, key=key)
            self._queue.append(job.id)
            self._ready.notify()
        self.changes.changed(job.id)
        return job

    def cancel(self, job_id: str, *, key: str | None = None) -> Job | None:
        """Cancel a queued or running job; the job as it is now, None if there is none."""
        job = self.store.cancel(job_id, key=key)
        if job is not None:
            with self._ready:
                if job_id in self._queue:
                    self._queue.remove(job_id)
            self.changes.changed(job_id, ended=True)
        return job

    def queued(self) -> int:
        """Jobs waiting for a worker."""
        with self._ready:
            return len(self._queue)

    def running(self) -> int:
        """Jobs a worker is running now."""
        with self._ready:
            return self._running

    def retry_after(self) -> int:
        """Seconds until the queue has likely made room: the mean run time per worker."""
        per_job = self._mean_seconds or FIRST_GUESS_SECONDS
        return max(1, min(MOST_RETRY_SECONDS, math.ceil(per_job / self.workers)))

    @property
    def started(self) -> bool:
        """Whether `start` was called."""
        return bool(self._threads)

    @property
    def stopping(self) -> bool:
        """Whether `stop` was called."""
        return self._stopping.is_set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop taking jobs; stop running ones at their next event (they are queued again).

        Waits up to ``timeout`` seconds for the workers; one stuck in a long model call is
        left behind (its thread is a daemon) and its job, still marked running, is queued
        again by the next start.
        """
        self._stopping.set()
        with self._ready:
            self._ready.notify_all()
        self.changes.wake_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- the workers ----------------------------------------------------------------------

    def _next(self) -> str | None:
        with self._ready:
            while not self._queue and not self._stopping.is_set():
                self._ready.wait()
            if self._stopping.is_set():
                return None
            self._running += 1
            return self._queue.popleft()

    def _work(self) -> None:
        while (job_id := self._next()) is not None:
            try:
                self._run(job_id)
            except Exception:  # the store itself failed: say so, keep the worker alive
                log.exception("check %s: the job store failed", job_id)
            finally:
                with self._ready:
                    self._running -= 1

    def _run(self, job_id: str) -> None:
        job = self.store.start(job_id)
        if job is None:
            return  # cancelled while it waited
        self.changes.changed(job_id)
        run, began = job.runs, time.monotonic()
        log.info("check %s: started (run %d)", job_id, run)

        def listener(event: Event) -> None:
            if self._stopping.is_set():
                raise JobStopped("the server is stopping")
            if not self.store.add_event(job_id, run, event):
                raise JobStopped("the check was cancelled")
            self.changes.changed(job_id)

        try:
            request = CheckRequest.model_validate(job.request)
            with self._paced(job_id, job.key):
                verdict = self.executor(request, listener)
            record = verdict.to_json_dict()
            report = verdict.report() if isinstance(verdict, Reported) else None
        except Exception as exc:  # noqa: BLE001 - every failure of a check is its job's error
            if self._stopping.is_set():
                self.store.requeue(job_id, run)
                log.info("check %s: stopped with the server; it runs again next start", job_id)
            elif self.store.fail(job_id, run, job_error(exc), partial_of(exc)):
                self._failed(job_id, exc)
        else:
            if self.store.finish(job_id, run, record, report):
                self._timed(time.monotonic() - began)
                log.info("check %s: done, %s", job_id, _outcome_label(record))
        finally:
            self.changes.changed(job_id, ended=True)

    def _paced(self, job_id: str, key: str | None) -> AbstractContextManager[object]:
        """Each model call of the job waits for room in its key's window (none: no limit)."""
        limits = self.usage_limits
        if limits is None or not limits.active:
            return nullcontext()

        def stopped() -> bool:
            if self._stopping.is_set():
                return True
            job = self.store.get(job_id)
            return job is None or job.final

        def before_call(spend: Spend, abandoned: threading.Event) -> None:
            def gone() -> bool:  # the job ended, or the call's caller stopped waiting
                return abandoned.is_set() or stopped()

            if not limits.wait_for_room(key, stopped=gone, seconds_left=spend.remaining_seconds):
                raise JobStopped("the check stopped while it waited for its key's rate")

        def after_call(usage: Usage | None) -> None:
            if usage is None:  # never sent: it holds no place in the window
                limits.release(key)
            else:
                limits.charge(key, usage.tokens)

        return spending(None, before_call=before_call, after_call=after_call)

    def _failed(self, job_id: str, exc: Exception) -> None:
        error = job_error(exc)
        if error.code == "internal":
            log.error("check %s failed", job_id, exc_info=exc)
        else:
            log.info("check %s: failed, %s", job_id, error.code)

    def _timed(self, seconds: float) -> None:
        # A moving mean: recent checks say most about the next ones.
        with self._ready:
            mean = self._mean_seconds
            self._mean_seconds = seconds if mean is None else 0.8 * mean + 0.2 * seconds


def _outcome_label(record: dict[str, Any]) -> str:
    """A verdict's label, or a document's count of claims, for the log."""
    label = record.get("label")
    if isinstance(label, str):
        return label
    summary = record.get("summary")
    claims = summary.get("claims") if isinstance(summary, dict) else None
    return f"{claims} claim(s)" if isinstance(claims, int) else "done"
