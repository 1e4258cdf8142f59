"""The service's checks on a Ray cluster: a request in, its events relayed live, a verdict out.

    executor = RayExecutor(partial(LocalExecutor, settings), address=None, concurrency=4)
    executor.start()                                # connect now (else on the first call)
    verdict = executor(request, listener)           # the same call as the local executor's
    executor.close()

``make_executor`` makes, in each Ray worker, the executor that would run in the service's
own process (a picklable callable: a class, or a `functools.partial` of one); it is made
once per worker, so methods and models load once per worker. A call runs it as a
streaming Ray task: each event is sent back the moment the check makes it and handed to
``listener`` here, in order, then the verdict is returned, or the check's error raised.
Streaming was chosen over returning the events with the verdict so that a watcher sees
the check progress while it runs, as with the local executor.

Cancelling works as it does locally: when ``listener`` raises, the worker is told, the
check stops at its next event, and the listener's exception is raised here. A worker
that dies mid-check is started again by Ray and the check run again, up to ``retries``
times; the events already relayed are not sent twice (the stream resumes after them),
then the call raises `WorkerLostError`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from verity.domain import Event
from verity.engines import WorkerLostError
from verity.engines.actors import Executor, JobWorker
from verity.engines.cluster import DEFAULT_RETRIES, ActorPool, Cluster, cause_of, lost


class RayExecutor:
    """An executor (``(request, listener) -> result``) whose checks run on Ray workers.

    ``concurrency`` is how many checks may run at once (the service's workers); the
    cluster gets as many actors as it has CPUs, at most that many.
    """

    def __init__(
        self,
        make_executor: Callable[[], Executor],
        *,
        address: str | None = None,
        concurrency: int = 1,
        num_cpus: int | None = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self.cluster = Cluster(address, num_cpus=num_cpus)  # ConfigError without Ray
        self.make_executor = make_executor
        self.concurrency = max(1, concurrency)
        self.retries = retries
        self._pool: ActorPool | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Connect and build the executor in every worker; its errors are raised here."""
        with self._lock:
            if self._pool is not None:
                return
            self.cluster.connect()
            pool = ActorPool(
                JobWorker, (self.make_executor,), cluster=self.cluster,
                concurrency=self.concurrency, retries=self.retries,
            )  # fmt: skip
            try:
                pool.ready()
            except BaseException:
                pool.close()
                raise
            self._pool = pool

    def __call__(self, request: Any, listener: Callable[[Event], None]) -> Any:
        """Check ``request`` on a worker; ``listener`` gets each event as it happens."""
        self.start()
        pool = self._pool
        if pool is None:  # closed by another thread meanwhile
            raise WorkerLostError("the Ray executor is closed")
        ray = self.cluster.ray
        index = pool.take()
        call_id = uuid.uuid4().hex
        actor = pool.actors[index]
        try:
            stream = actor.run.options(num_returns="streaming").remote(call_id, request)
            for ref in stream:
                try:
                    kind, payload = ray.get(ref)
                except lost(ray) as exc:
                    raise WorkerLostError(
                        f"the worker running this check died ({type(exc).__name__})"
                    ) from None
                except ray.exceptions.RayTaskError as exc:
                    raise cause_of(exc) from None
                if kind == "verdict":
                    return payload
                if kind == "error":
                    raise payload
                try:
                    listener(payload)
                except BaseException:
                    actor.cancel.remote(call_id)  # stops at its next event, as locally
                    raise
            raise WorkerLostError("the worker ended the check without a verdict")
        finally:
            pool.give_back(index)

    def close(self) -> None:
        """Stop the workers; disconnect (stopping a local cluster this executor started)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        self.cluster.close()
