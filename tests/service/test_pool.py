"""The worker pool: order, the bound, cancelling, stopping and starting again, failures.

The executor here is a scripted fake (it emits events and returns a fixed verdict when a
test lets it): what is tested is the pool's control flow, not a method.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from verity import events
from verity.domain import Claim, Label, Verdict
from verity.errors import BadInputError
from verity.service.jobs import Job, JobStore
from verity.service.pool import QueueFull, WorkerPool
from verity.service.requests import CheckRequest

OUTER_LIMIT = 60.0  # only ends a test that hangs for good


class FakeExecutor:
    """Emits ``steps`` milestones, each once the test opens the gate (if it is closed)."""

    def __init__(self, steps: int = 2, *, gated: bool = False) -> None:
        self.steps = steps
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.started: list[str] = []
        self.stopped: list[BaseException] = []
        self.fail_with: Exception | None = None
        self._lock = threading.Lock()

    def __call__(self, request: CheckRequest, listener) -> Verdict:
        with self._lock:
            self.started.append(request.claim or "")
        if self.fail_with is not None:
            raise self.fail_with
        try:
            with events.listening(listener) as sink:
                for n in range(self.steps):
                    if not self.gate.wait(OUTER_LIMIT):
                        raise TimeoutError("the test never opened the gate")
                    sink.emit("milestone", f"step {n}", name="fake.step")
        except Exception as exc:
            self.stopped.append(exc)
            raise
        return Verdict(label=Label.SUPPORTED, method="fake", subject=Claim(text=request.claim))


def wait_until(pool: WorkerPool, job_id: str, done: Callable[[Job], bool]) -> Job:
    """Wait for the job to satisfy ``done``, woken by the pool's changes."""
    deadline = time.monotonic() + OUTER_LIMIT
    with pool.changes.watch(job_id) as watcher:
        while not done(job := pool.store.get(job_id)):
            if time.monotonic() > deadline:
                raise AssertionError(f"job never got there: {job}")
            watcher.wait(1.0)
    return job


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    with JobStore(tmp_path / "jobs.sqlite") as opened:
        yield opened


def running_pool(store: JobStore, executor, **kw) -> WorkerPool:
    pool = WorkerPool(store, executor, **kw)
    pool.start()
    return pool


def claim(n: int) -> CheckRequest:
    return CheckRequest(claim=f"Claim {n}.")


def test_jobs_run_to_a_verdict_with_their_events(store: JobStore) -> None:
    pool = running_pool(store, FakeExecutor(steps=3), workers=2)
    try:
        jobs = [pool.submit(claim(n), method="fake") for n in range(4)]
        for job in jobs:
            done = wait_until(pool, job.id, lambda j: j.final)
            assert done.status == "done" and done.verdict["label"] == "SUPPORTED"
            assert done.verdict["claim"] == job.request["claim"]
            assert [e.seq for e in store.events(job.id)] == [1, 2, 3]
    finally:
        pool.stop()


def test_past_the_bound_a_submission_is_refused_with_a_retry_time(store: JobStore) -> None:
    fake = FakeExecutor(gated=True)
    pool = running_pool(store, fake, workers=1, queue_size=2)
    try:
        first = pool.submit(claim(0))
        wait_until(pool, first.id, lambda j: j.status == "running")
        pool.submit(claim(1))
        pool.submit(claim(2))
        with pytest.raises(QueueFull) as refused:
            pool.submit(claim(3))
        assert refused.value.retry_after >= 1
        assert store.count() == 3  # the refused one was never stored
        fake.gate.set()
    finally:
        pool.stop()


def test_a_cancelled_queued_job_never_runs(store: JobStore) -> None:
    fake = FakeExecutor(gated=True)
    pool = running_pool(store, fake, workers=1)
    try:
        first = pool.submit(claim(0))
        wait_until(pool, first.id, lambda j: j.status == "running")
        second = pool.submit(claim(1))
        assert pool.cancel(second.id).status == "cancelled"
        fake.gate.set()
        wait_until(pool, first.id, lambda j: j.final)
        third = pool.submit(claim(2))
        wait_until(pool, third.id, lambda j: j.final)
        assert fake.started == ["Claim 0.", "Claim 2."]
        assert store.get(second.id).status == "cancelled"
    finally:
        pool.stop()


def test_a_cancelled_running_job_stops_at_its_next_event(store: JobStore) -> None:
    fake = FakeExecutor(steps=3, gated=True)
    pool = running_pool(store, fake, workers=1)
    try:
        job = pool.submit(claim(0))
        wait_until(pool, job.id, lambda j: j.status == "running")
        pool.cancel(job.id)
        fake.gate.set()
        after = pool.submit(claim(1))  # the worker is free again once the first stops
        wait_until(pool, after.id, lambda j: j.final)
        assert [type(e).__name__ for e in fake.stopped] == ["JobStopped"]
        cancelled = store.get(job.id)
        assert cancelled.status == "cancelled" and cancelled.verdict is None
        assert store.events(job.id) == []  # its one event came after the cancel
    finally:
        pool.stop()


def test_a_stopped_server_requeues_its_running_job_and_the_next_start_finishes_it(
    store: JobStore,
) -> None:
    fake = FakeExecutor(steps=2, gated=True)
    pool = running_pool(store, fake, workers=1)
    job = pool.submit(claim(0))
    waiting = pool.submit(claim(1))
    wait_until(pool, job.id, lambda j: j.status == "running")
    stopper = threading.Thread(target=pool.stop)
    stopper.start()
    while not pool.stopping:
        time.sleep(0.01)
    fake.gate.set()  # its next event meets the stopping pool
    stopper.join(OUTER_LIMIT)
    assert store.get(job.id).status == "queued" and store.get(job.id).runs == 1
    assert store.get(waiting.id).status == "queued"

    again = FakeExecutor(steps=2)
    restarted = running_pool(store, again, workers=1)
    try:
        for queued in (job, waiting):
            assert wait_until(restarted, queued.id, lambda j: j.final).status == "done"
        assert store.get(job.id).runs == 2 and store.get(waiting.id).runs == 1
        assert again.started == ["Claim 0.", "Claim 1."]
    finally:
        restarted.stop()


def test_a_failing_check_records_its_error(store: JobStore) -> None:
    fake = FakeExecutor()
    fake.fail_with = BadInputError("the page has no text")
    pool = running_pool(store, fake, workers=1)
    try:
        job = wait_until(pool, pool.submit(claim(0)).id, lambda j: j.final)
        assert job.status == "failed" and job.error.code == "bad_input"
        assert job.error.message == "the page has no text"
        fake.fail_with = ZeroDivisionError("secret detail")
        job = wait_until(pool, pool.submit(claim(1)).id, lambda j: j.final)
        assert job.error.code == "internal" and "secret detail" not in job.error.message
    finally:
        pool.stop()


def test_an_executor_that_returns_no_verdict_fails_its_job_and_not_the_worker(
    store: JobStore,
) -> None:
    pool = running_pool(store, lambda request, listener: None, workers=1)
    try:
        for n in range(2):  # the one worker takes the second job too
            job = wait_until(pool, pool.submit(claim(n)).id, lambda j: j.final)
            assert job.status == "failed" and job.error.code == "internal"
    finally:
        pool.stop()


def test_a_watcher_registered_before_a_change_never_misses_it(store: JobStore) -> None:
    pool = WorkerPool(store, FakeExecutor(), workers=1)  # not started: nothing runs
    with pool.changes.watch() as everything:
        pool.submit(claim(0))
        assert everything.wait(OUTER_LIMIT)
        assert not everything.wait(0)  # once woken, it waits for the next change
    pool.stop()


def test_a_pool_needs_workers_and_room() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerPool(None, FakeExecutor(), workers=0)  # type: ignore[arg-type]


# -- the local executor ------------------------------------------------------------------------


def test_a_plan_takes_the_server_defaults_and_what_the_request_names() -> None:
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.execute import plan

    defaults = Settings(
        model=ModelSettings(spec="openai:m", base_url="http://127.0.0.1:9/v1"),
        sources=("offline-wiki",),
        methods={"rag": {"k": 3}},
    )
    chosen = plan(CheckRequest(claim="x"), defaults)
    assert (chosen.method, chosen.model.spec, chosen.sources) == (
        "rag",
        "openai:m",
        ("offline-wiki",),
    )
    assert chosen.settings == {"k": 3}
    named = plan(
        CheckRequest(claim="x", method="direct", model="local", sources=["wikipedia"],
                     settings={"max_article_words": 10}),
        defaults,
    )  # fmt: skip
    assert named.method == "direct" and named.model.spec == "local"
    assert named.model.base_url is None  # an embedded model takes no endpoint
    assert named.sources == ("wikipedia",) and named.settings == {"max_article_words": 10}
    assert plan(CheckRequest(url="https://example.org/a"), defaults).method == "zofia"
    assert chosen.key() == plan(CheckRequest(claim="other"), defaults).key()
    assert chosen.key() != named.key()


def test_the_local_executor_checks_for_real_and_keeps_one_method_per_plan() -> None:
    from faults.latency import LatencyEndpoint
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.execute import LocalExecutor, plan

    with LatencyEndpoint(delay=0.0) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        executor = LocalExecutor(Settings(method="direct", model=model))
        seen = []
        verdict = executor(CheckRequest(claim="The Eiffel Tower is in Paris."), seen.append)
        # The check's call, then the grounding's (on by default for the service).
        assert verdict.method == "direct" and endpoint.count == 2
        assert verdict.grounding is not None and verdict.grounding.error is None
        assert [e.kind for e in seen] == [
            "check.start", "call.start", "call.end", "check.end",
            "call.start", "call.end", "milestone",
        ]  # fmt: skip
        request = CheckRequest(claim="x")
        chosen = plan(request, executor.defaults)
        assert executor.method(chosen) is executor.method(plan(request, executor.defaults))
        other = plan(CheckRequest(claim="x", settings={"max_article_words": 5}), executor.defaults)
        assert executor.method(other) is not executor.method(chosen)


def test_the_methods_a_server_builds_take_every_workers_calls_at_once() -> None:
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.execute import LocalExecutor, plan

    model = ModelSettings(spec="openai:m", base_url="http://127.0.0.1:9/v1", cache=False)
    defaults = Settings(method="direct", model=model)
    one, many = LocalExecutor(defaults), LocalExecutor(defaults, checks=32)
    request = CheckRequest(claim="x")
    slots = [e.method(plan(request, defaults)).models.default.max_concurrency for e in (one, many)]
    # Each check may have 8 calls in flight (the model client's default), per worker.
    assert slots == [8, 32 * 8]


def test_a_url_is_fetched_in_the_job_and_the_request_date_wins() -> None:
    import datetime as dt

    from faults.latency import LatencyEndpoint
    from verity.config import Settings
    from verity.domain import Article
    from verity.llm.spec import ModelSettings
    from verity.service.execute import LocalExecutor

    fetched = []

    def fetch(url: str) -> Article:
        fetched.append(url)
        return Article(title="Bridge vote", text="The council voted.", url=url,
                       date=dt.date(2024, 3, 5))  # fmt: skip

    with LatencyEndpoint(delay=0.0) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        executor = LocalExecutor(Settings(method="direct", model=model), fetch=fetch)
        seen = []
        request = CheckRequest(url="https://news.example.org/a?token=s3cret", date="2024-03-06")
        verdict = executor(request, seen.append)
    assert fetched == ["https://news.example.org/a?token=s3cret"]
    assert verdict.subject.date == dt.date(2024, 3, 6) and verdict.subject.title == "Bridge vote"
    first = seen[0]
    assert first.kind == "milestone" and first.name == "service.fetch"
    assert "s3cret" not in first.message  # a URL's credentials never reach an event
