"""Waiting for a verdict: woken when a run ends, not by each of its progress events.

A request that waits (``POST /v1/checks?wait=``) reads its job when the job's run ends,
not once per event; the pool says when a run ended, whichever way it ended. The
settings model a request is checked against is resolved once per method class.
"""

from __future__ import annotations

import asyncio
import threading
import time
import typing
from collections.abc import Callable
from typing import Any

import pytest

from verity.service import budgets
from verity.service.changes import Changes
from verity.service.jobs import JobStore
from verity.service.pool import WorkerPool
from verity.service.requests import CheckRequest

OUTER_LIMIT = 60.0  # only ends a test that hangs for good
QUIET = 0.3  # long enough for a wake that should not come to have come


def test_a_watcher_of_the_end_sleeps_through_changes_and_wakes_when_a_run_ends() -> None:
    changes = Changes()
    with changes.watch("j", ends_only=True) as end, changes.watch("j") as every:
        changes.changed("j")
        assert every.wait(0) and not end.wait(0)
        changes.changed("j", ended=True)
        assert every.wait(0) and end.wait(0)
        changes.changed("other", ended=True)
        assert not end.wait(0)
        changes.wake_all()  # the server stops: everyone wakes
        assert end.wait(0)


def test_on_an_event_loop_too() -> None:
    async def main() -> None:
        changes = Changes()
        async with changes.awatch("j", ends_only=True) as end:
            threading.Thread(target=changes.changed, args=("j",)).start()
            assert not await end.wait(QUIET)
            ending = threading.Thread(target=changes.changed, args=("j",), kwargs={"ended": True})
            ending.start()
            assert await end.wait(OUTER_LIMIT)
            ending.join()

    asyncio.run(main())


# -- the pool says when a run ended ---------------------------------------------------------


@pytest.fixture
def pool_of(tmp_path: Any) -> Any:
    """A started pool over a fresh store running the given executor; stopped after."""
    made: list[tuple[WorkerPool, JobStore]] = []

    def make(executor: Any, *, start: bool = True) -> WorkerPool:
        store = JobStore(tmp_path / f"jobs-{len(made)}.sqlite")
        pool = WorkerPool(store, executor, workers=1)
        if start:
            pool.start()
        made.append((pool, store))
        return pool

    yield make
    for pool, store in made:
        pool.stop()
        store.close()


def running(pool: WorkerPool, job_id: str) -> None:
    deadline = time.monotonic() + OUTER_LIMIT
    with pool.changes.watch(job_id) as watcher:
        while pool.store.get(job_id).status != "running":  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the job never started"
            watcher.wait(1.0)


def test_a_done_run_wakes_the_end_watchers_and_its_events_do_not(pool_of, scripted) -> None:
    fake = scripted(steps=3, gated=True)
    pool = pool_of(fake)
    job = pool.submit(CheckRequest(claim="Paris is in France."))
    running(pool, job.id)
    with pool.changes.watch(job.id, ends_only=True) as end, pool.changes.watch(job.id) as every:
        fake.allow(1)  # one event
        assert every.wait(OUTER_LIMIT)
        assert not end.wait(QUIET)
        fake.open()
        assert end.wait(OUTER_LIMIT)
    assert pool.store.get(job.id).status == "done"  # type: ignore[union-attr]


def test_a_failed_run_wakes_them(pool_of, scripted) -> None:
    fake = scripted()
    fake.fail_with = RuntimeError("broken")
    pool = pool_of(fake, start=False)
    with pool.changes.watch(ends_only=True) as end:  # every job's end
        job = pool.submit(CheckRequest(claim="Paris is in France."))
        assert not end.wait(0)  # queued is no end
        pool.start()
        assert end.wait(OUTER_LIMIT)
    assert pool.store.get(job.id).status == "failed"  # type: ignore[union-attr]


def test_cancelling_wakes_them_at_once_queued_or_running(pool_of, scripted) -> None:
    fake = scripted(gated=True)
    pool = pool_of(fake)
    first = pool.submit(CheckRequest(claim="One."))
    running(pool, first.id)
    second = pool.submit(CheckRequest(claim="Two."))  # waits behind the first
    for job in (second, first):
        with pool.changes.watch(job.id, ends_only=True) as end:
            pool.cancel(job.id)
            # At once: the running one's worker has not even noticed yet (its gate is shut).
            assert end.wait(0)
    fake.open()


# -- the waiting request ----------------------------------------------------------------------


def test_a_waiting_request_reads_its_job_when_it_starts_and_when_it_ends(
    make_service: Callable[..., Any], scripted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from verity.service.app import create_app

    steps = 6
    fake = scripted(steps=steps, gated=True)
    service = make_service(fake)
    reads: list[str] = []
    real_job = service.job

    def counted(job_id: str, **kw: Any) -> Any:
        reads.append(job_id)
        return real_job(job_id, **kw)

    monkeypatch.setattr(service, "job", counted)
    answers: list[Any] = []
    with TestClient(create_app(service)) as api:
        waiting = threading.Thread(
            target=lambda: answers.append(
                api.post("/v1/checks?wait=30", json={"claim": "Paris is in France."})
            )
        )
        waiting.start()
        assert fake.entered.acquire(timeout=OUTER_LIMIT)
        deadline = time.monotonic() + OUTER_LIMIT
        while not reads:  # the request has looked once: its watcher is in place
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for _ in range(steps):  # each step an event, each apart from the next
            fake.allow(1)
            time.sleep(0.05)
        waiting.join(OUTER_LIMIT)
    assert answers and answers[0].status_code == 200
    assert answers[0].json()["status"] == "done"
    assert len(reads) == 2  # before waiting, and once the run ended: not once per event


def test_a_methods_settings_model_is_resolved_once_per_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verity.methods.direct import DirectConfig
    from verity.methods.rag import RagConfig

    resolved: list[Any] = []
    real = typing.get_type_hints

    def counted(obj: Any, *args: Any, **kw: Any) -> Any:
        resolved.append(obj)
        return real(obj, *args, **kw)

    monkeypatch.setattr(typing, "get_type_hints", counted)
    monkeypatch.setattr(budgets, "_CONFIGS", {})  # none resolved yet
    assert [budgets.config_class("direct") for _ in range(3)] == [DirectConfig] * 3
    assert budgets.config_class("rag") is RagConfig
    assert [o.__name__ for o in resolved] == ["DirectMethod", "RagMethod"]
