"""The thread engine: items checked by a pool of threads in this process (the default).

    with ThreadEngine() as engine:
        engine.run(work, items, on_result, concurrency=4)

The work is built once and shared by the threads, as a method and its models are.
``on_result`` is called by the thread that finished the item, one call at a time, in the
order items finish. An interrupt (Ctrl-C) drops the items not yet started; those running
finish and reach ``on_result``, so nothing that was paid for is lost.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from types import TracebackType

from verity.engines import ItemT, ResultT, Work


class ThreadEngine:
    """Runs a `Work` in a pool of ``concurrency`` threads; nothing to start or stop."""

    local = True

    def __enter__(self) -> ThreadEngine:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def run(
        self,
        work: Work[ItemT, ResultT],
        items: Iterable[ItemT],
        on_result: Callable[[ItemT, ResultT], None],
        *,
        concurrency: int = 1,
    ) -> None:
        """Check every item; ``on_result`` gets each result as soon as it is ready."""
        check = work.build()
        lock = threading.Lock()  # one writer at a time, whatever the callback does

        def one(item: ItemT) -> None:
            try:
                result = check(item)
            except Exception as exc:  # noqa: BLE001 - recorded as this item's result
                result = work.failed(item, exc)
            with lock:
                on_result(item, result)

        pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
        try:
            # Each item runs in a copy of the caller's context, so what the caller set up
            # (an event listener, a search context) reaches the checks.
            futures = [pool.submit(contextvars.copy_context().run, one, item) for item in items]
            for future in as_completed(futures):
                future.result()
        finally:
            # Ctrl-C: drop queued items; those running finish and reach on_result.
            pool.shutdown(wait=True, cancel_futures=True)
