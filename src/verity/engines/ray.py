"""The Ray engine: items checked by Ray actors, results written by the driver as they arrive.

    with RayEngine(address=None) as engine:          # a local cluster; or "auto", "head:6379"
        engine.run(work, items, on_result, concurrency=16)

    executor = RayExecutor(make_executor, address="auto", concurrency=4)   # the service's
    verdict = executor(request, listener)            # events reach listener as they happen

The work goes to each actor as it is created (it must be picklable, and is best small: a
method's settings, not a built method); each actor builds it once, so models load once
per actor, and runs its share of the items in threads. At most ``concurrency`` items are
in flight. Each result comes back to the driver, which hands it to ``on_result`` in the
order results arrive: the store or the output file has one writer, the driver, and a
result is written once.

A worker that dies (killed, out of memory, its node gone) is started again by Ray, and
each item it was running is run again, up to ``retries`` times; past that the item's
result records a `WorkerLostError`. Nothing is lost and nothing is written twice: an
item reaches ``on_result`` exactly once (and the benchmark's store refuses a second row).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any

from verity.engines import ItemT, ResultT, Work, WorkerLostError
from verity.engines.actors import ItemWorker
from verity.engines.cluster import DEFAULT_RETRIES, ActorPool, Cluster, cause_of, lost
from verity.engines.executor import RayExecutor
from verity.errors import BudgetExceededError, ConfigError


class RayEngine:
    """Runs a `Work` on a Ray cluster; entering it connects (or starts a local cluster).

    ``num_cpus`` sizes a local cluster; ``retries`` is how many times an item whose
    worker died is run again before it is recorded as lost.
    """

    local = False

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self.cluster = Cluster(address, num_cpus=num_cpus)  # ConfigError without Ray
        self.retries = retries

    def __enter__(self) -> RayEngine:
        self.cluster.connect()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cluster.close()

    def run(
        self,
        work: Work[ItemT, ResultT],
        items: Iterable[ItemT],
        on_result: Callable[[ItemT, ResultT], None],
        *,
        concurrency: int = 1,
    ) -> None:
        """Check every item on the cluster; ``on_result`` runs here, once per item."""
        ray = self.cluster.ray
        self.cluster.connect()
        try:
            # Checked here to say it plainly; Ray would fail with a long trace.
            ray.cloudpickle.dumps(work)
        except Exception as exc:  # whatever pickling raised
            raise ConfigError(
                f"this work cannot be sent to Ray workers (it must be picklable): {exc}"
            ) from exc
        # The work goes with each actor's creation, so that an actor Ray starts again
        # has it: keep it small (a method's settings, not its data).
        pool = ActorPool(
            ItemWorker, (work,), cluster=self.cluster, concurrency=concurrency,
            retries=self.retries,
        )  # fmt: skip
        try:
            pool.ready()
            self._dispatch(pool, work, iter(items), on_result, max(1, concurrency))
        finally:
            pool.close()

    def _dispatch(
        self,
        pool: ActorPool,
        work: Work[ItemT, ResultT],
        pending: Iterator[ItemT],
        on_result: Callable[[ItemT, ResultT], None],
        concurrency: int,
    ) -> None:
        ray = self.cluster.ray
        in_flight: dict[Any, tuple[ItemT, int]] = {}

        def fill() -> None:
            while len(in_flight) < concurrency:
                item = next(pending, _END)
                if item is _END:
                    return
                index = pool.take()  # never waits: the pool has room for `concurrency`
                in_flight[pool.actors[index].check.remote(item)] = (item, index)

        try:
            fill()
            while in_flight:
                done, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in done:
                    item, index = in_flight.pop(ref)
                    pool.give_back(index)
                    on_result(item, self._result(work, item, ref))
                fill()
        except KeyboardInterrupt:
            # As with threads: nothing new starts, the items in flight finish and are
            # written. A second interrupt stops the wait.
            for ref, (item, _index) in list(in_flight.items()):
                on_result(item, self._result(work, item, ref))
            raise
        except BudgetExceededError as exc:
            if exc.scope != "run":
                raise
            # The run's budget is spent (``on_result`` said so): nothing new starts, and
            # the items in flight, already paid for, finish and are written. Each of them
            # says again that the budget is spent; that is known.
            for ref, (item, _index) in list(in_flight.items()):
                with contextlib.suppress(BudgetExceededError):
                    on_result(item, self._result(work, item, ref))
            raise

    def _result(self, work: Work[ItemT, ResultT], item: ItemT, ref: Any) -> ResultT:
        ray = self.cluster.ray
        try:
            result: ResultT = ray.get(ref)
        except lost(ray) as exc:
            return work.failed(item, WorkerLostError(_lost_message(exc, self.retries)))
        except ray.exceptions.RayTaskError as exc:
            return work.failed(item, cause_of(exc))
        except ray.exceptions.RayError as exc:
            return work.failed(
                item, WorkerLostError(f"the result could not come back: {_first_line(exc)}")
            )
        return result


_END: Any = object()


def _lost_message(exc: BaseException, retries: int) -> str:
    return (
        f"the worker running this item died, and it was not run to the end in "
        f"{retries + 1} attempts ({type(exc).__name__}: {_first_line(exc)})"
    )


def _first_line(exc: BaseException) -> str:
    # Ray's messages run over many lines (addresses, process ids, advice): one is enough.
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


__all__ = ["RayEngine", "RayExecutor"]
