"""Each worker thread checks on an event loop of its own, kept from one check to the next.

What `asyncio.run` would give a check still holds: the caller's context, its own
result or error, and nothing left running after it; what it would cost (a loop and its
threads made for every check) is paid once per thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
from typing import Any

import pytest

from verity.service.loops import WorkerLoops
from verity.service.requests import CheckRequest

OUTER_LIMIT = 60.0  # only ends a test that hangs for good
where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="nowhere")


async def running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def in_thread(loops: WorkerLoops) -> asyncio.AbstractEventLoop:
    found: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: found.append(loops.run(running_loop())))
    thread.start()
    thread.join(OUTER_LIMIT)
    return found[0]


def test_a_thread_keeps_its_loop_and_another_thread_has_its_own() -> None:
    loops = WorkerLoops()
    first = loops.run(running_loop())
    assert loops.run(running_loop()) is first
    assert in_thread(loops) is not first
    loops.close()
    assert first.is_closed()


def test_a_thread_that_ends_takes_its_loop_down() -> None:
    loops = WorkerLoops()
    gone = in_thread(loops)
    gc.collect()
    assert gone.is_closed()
    loops.close()


def test_closing_leaves_the_loop_of_a_check_still_running_to_its_thread() -> None:
    loops = WorkerLoops()
    release = threading.Event()
    started = threading.Event()
    found: list[asyncio.AbstractEventLoop] = []

    async def long_call() -> None:
        found.append(asyncio.get_running_loop())
        started.set()
        await asyncio.to_thread(release.wait, OUTER_LIMIT)

    stuck = threading.Thread(target=loops.run, args=(long_call(),))
    stuck.start()
    assert started.wait(OUTER_LIMIT)
    loops.close()  # the server stops while a worker is stuck in a call
    assert not found[0].is_closed()
    release.set()
    stuck.join(OUTER_LIMIT)
    gc.collect()
    assert found[0].is_closed()  # its thread ended


def test_tasks_a_check_leaves_behind_are_cancelled_when_it_ends() -> None:
    loops = WorkerLoops()
    left: list[asyncio.Task[None]] = []

    async def check() -> str:
        left.append(asyncio.get_running_loop().create_task(asyncio.sleep(OUTER_LIMIT)))
        await asyncio.sleep(0)
        return "verdict"

    assert loops.run(check()) == "verdict"
    assert left[0].cancelled()
    assert not asyncio.all_tasks(loops.run(running_loop()))  # only the probe itself ran
    loops.close()


def test_a_check_sees_its_callers_context_and_leaves_it_as_it_was() -> None:
    loops = WorkerLoops()

    async def check() -> str:
        seen = where.get()
        where.set("inside")
        return seen

    token = where.set("the job's")
    try:
        assert loops.run(check()) == "the job's"
        assert where.get() == "the job's"
    finally:
        where.reset(token)
    loops.close()


def test_a_checks_error_is_raised_to_its_caller_and_the_loop_goes_on() -> None:
    loops = WorkerLoops()
    loop = loops.run(running_loop())

    async def failing() -> None:
        raise ValueError("no valid answer")

    with pytest.raises(ValueError, match="no valid answer"):
        loops.run(failing())
    assert loops.run(running_loop()) is loop and not loop.is_closed()
    loops.close()


# -- the executor --------------------------------------------------------------------------------


def test_the_local_executor_checks_on_the_workers_loop_with_the_verdict_verify_gives() -> None:
    from faults.latency import LatencyEndpoint
    from verity.config import Settings
    from verity.domain import Claim
    from verity.llm.spec import ModelSettings
    from verity.service.execute import LocalExecutor, plan

    with LatencyEndpoint(delay=0.0) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        executor = LocalExecutor(Settings(method="direct", model=model))
        loops: list[asyncio.AbstractEventLoop] = []

        def listener(event: Any) -> None:
            loops.append(asyncio.get_running_loop())

        request = CheckRequest(claim="The Eiffel Tower is in Paris.")
        verdicts = [executor(request, listener) for _ in range(2)]
        assert len(set(map(id, loops))) == 1  # both checks, every event: one loop
        method = executor.method(plan(request, executor.defaults))
        direct = method.verify(Claim(text="The Eiffel Tower is in Paris."))
        executor.close()
    assert loops[0].is_closed()
    for verdict in verdicts:
        assert verdict.label == direct.label and verdict.explanation == direct.explanation
        assert verdict.usage.llm_calls == direct.usage.llm_calls == 1
        assert verdict.grounding is not None and direct.grounding is not None
        assert verdict.grounding.model_dump(exclude={"usage"}) == direct.grounding.model_dump(
            exclude={"usage"}
        )
        assert [c.step for c in verdict.trace.calls] == [c.step for c in direct.trace.calls]


def test_a_check_asked_from_a_running_loop_runs_as_verify_runs_it() -> None:
    from faults.latency import LatencyEndpoint
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.execute import LocalExecutor

    with LatencyEndpoint(delay=0.0) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        executor = LocalExecutor(Settings(method="direct", model=model))

        async def caller() -> Any:  # a sync call from a coroutine, as a notebook makes
            return executor(CheckRequest(claim="Paris is in France."), lambda event: None)

        assert asyncio.run(caller()).method == "direct"
        executor.close()


def test_a_method_with_a_verify_of_its_own_is_called_through_it() -> None:
    from verity.config import Settings
    from verity.domain import Claim, Label, Verdict
    from verity.llm.spec import ModelSet, ModelSettings
    from verity.methods.direct import DirectMethod
    from verity.service.execute import LocalExecutor

    class OwnVerify(DirectMethod):
        def verify(self, subject: Any, *, evidence: Any = None) -> Verdict:
            return Verdict(label=Label.REFUTED, method="own", subject=subject)

    model = ModelSettings(spec="openai:m", base_url="http://127.0.0.1:9/v1", cache=False)
    executor = LocalExecutor(Settings(method="direct", model=model))
    own = OwnVerify(models=ModelSet.from_settings(model))
    executor.method = lambda chosen: own  # type: ignore[method-assign]
    verdict = executor(CheckRequest(claim="x"), lambda event: None)
    assert verdict.method == "own" and verdict.subject == Claim(text="x")
    executor.close()
