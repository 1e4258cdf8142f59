"""Independent steps at once, the critical path counted, the trace in sequential order."""

from __future__ import annotations

import asyncio
import time

import pytest

from verity import schedule
from verity.domain import Message
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.testing import FakeChatModel


def echo_model(delay: float = 0.0) -> ModelClient:
    """A scripted fake that answers with the last message after ``delay`` seconds."""

    class Slow(FakeChatModel):
        async def acomplete(self, messages, params, schema=None):
            await asyncio.sleep(delay)
            return super().complete(messages, params, schema)

    return ModelClient(Slow(lambda messages, schema: messages[-1].content))


async def ask(model: ModelClient, log: CallLog, text: str) -> str:
    done = await model.achat([Message(role="user", content=text)], step=text, log=log)
    return done.text


async def scene(model: ModelClient, log: CallLog) -> list[str]:
    # a, then (b1 then b2) beside c, then d: the critical path is a, b1, b2, d.
    first = await ask(model, log, "a")

    async def b() -> str:
        return await ask(model, log, "b1") + await ask(model, log, "b2")

    both = await schedule.gather(b(), ask(model, log, "c"))
    last = await ask(model, log, "d")
    return [first, *both, last]


@pytest.mark.parametrize("parallel", [True, False])
def test_the_trace_reads_as_a_sequential_run_and_the_path_is_counted(parallel: bool) -> None:
    log = CallLog()

    async def main() -> tuple[list[str], int]:
        with schedule.tracked(parallel=parallel) as lane:
            out = await scene(echo_model(), log)
            return out, lane.depth

    out, depth = asyncio.run(main())
    assert out == ["a", "b1b2", "c", "d"]
    assert [c.step for c in log.calls] == ["a", "b1", "b2", "c", "d"]
    assert depth == (4 if parallel else 5)


def test_branches_run_at_once_and_finish_out_of_order() -> None:
    # c finishes before b2, yet the trace keeps b1, b2 before c.
    log = CallLog()

    async def main() -> float:
        with schedule.tracked(parallel=True):
            started = time.perf_counter()
            await schedule.gather(
                ask(echo_model(0.1), log, "slow"), ask(echo_model(0.1), log, "slow too")
            )
            return time.perf_counter() - started

    took = asyncio.run(main())
    assert took < 0.18  # both in flight together, not 0.2 s one after the other
    assert [c.step for c in log.calls] == ["slow", "slow too"]


def test_a_failure_cancels_the_other_branches() -> None:
    cancelled = []

    async def long() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def broken() -> None:
        raise ValueError("no")

    async def main() -> None:
        with schedule.tracked(parallel=True):
            await schedule.gather(long(), broken())

    with pytest.raises(ValueError, match="no"):
        asyncio.run(main())
    assert cancelled == [True]


def test_repairs_count_on_the_path() -> None:
    # Two answers, the first invalid: one call with one repair round is two on the path.
    from pydantic import BaseModel

    class Out(BaseModel):
        n: int

    model = ModelClient(FakeChatModel(["not json", '{"n": 1}']))
    log = CallLog()

    async def main() -> int:
        with schedule.tracked(parallel=True) as lane:
            await model.achat([Message(role="user", content="x")], schema=Out, log=log)
            return lane.depth

    assert asyncio.run(main()) == 2


def test_non_model_time_is_the_time_with_no_call_in_flight() -> None:
    async def main() -> float:
        with schedule.tracked(parallel=True) as lane:
            await asyncio.sleep(0.05)  # verity's own work
            await schedule.gather(
                ask(echo_model(0.1), CallLog(), "x"), ask(echo_model(0.1), CallLog(), "y")
            )
            return lane.idle_seconds

    idle = asyncio.run(main())
    assert 0.04 < idle < 0.09


def test_outside_a_check_nothing_is_counted() -> None:
    log = CallLog()

    async def main() -> list[str]:
        return await schedule.gather(ask(echo_model(), log, "x"), ask(echo_model(), log, "y"))

    assert asyncio.run(main()) == ("x", "y")
    assert schedule.current() is None


def test_nothing_to_gather_is_nothing() -> None:
    async def main() -> list[object]:
        with schedule.tracked(parallel=True):
            return await schedule.gather()

    assert asyncio.run(main()) == ()


def test_a_sequential_failure_leaves_no_step_unawaited() -> None:
    # The steps after the failure never start; they are closed, not left to warn (an
    # error under this suite's warning filter).
    async def broken() -> None:
        raise ValueError("no")

    async def later() -> None:
        raise AssertionError("never runs")

    async def main() -> None:
        with schedule.tracked(parallel=False):
            await schedule.gather(broken(), later())

    with pytest.raises(ValueError, match="no"):
        asyncio.run(main())


# -- the method base: usage stamped, verify derived ---------------------------------------

VERDICT = '{"explanation": "Known.", "label": "SUPPORTED", "confidence": 0.9}'


def direct(**config: object):
    from verity.llm.spec import ModelSet
    from verity.methods.base import load_method

    return load_method("direct", models=ModelSet(ModelClient(FakeChatModel([VERDICT]))), **config)


def test_a_verdict_carries_its_critical_path_and_wall_time() -> None:
    from verity.domain import Claim

    verdict = direct().verify(Claim(text="Water is wet."))
    usage = verdict.usage
    assert (usage.llm_calls, usage.critical_calls) == (1, 1)
    assert 0 < usage.non_model_seconds <= usage.wall_seconds


def test_verify_works_inside_a_running_event_loop() -> None:
    # A notebook calls the sync API from inside its own loop.
    from verity.domain import Claim

    async def main() -> str:
        return direct().verify(Claim(text="Water is wet.")).label.value

    assert asyncio.run(main()) == "SUPPORTED"


def test_the_parallel_setting_wins_over_what_the_models_say() -> None:
    class OneAtATime(FakeChatModel):
        one_at_a_time = True

    from verity.llm.spec import ModelSet
    from verity.methods.base import load_method

    def method(**config: object):
        models = ModelSet(ModelClient(OneAtATime([VERDICT])))
        return load_method("direct", models=models, **config)

    assert direct().runs_parallel()
    assert not method().runs_parallel()  # an embedded-like model: sequential by default
    assert method(parallel=True).runs_parallel()
    assert not direct(parallel=False).runs_parallel()
