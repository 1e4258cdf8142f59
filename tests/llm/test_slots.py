"""The limit on calls in flight: shared by threads and event loops, resizable, fair."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from verity.domain import Message
from verity.llm.base import RawCompletion
from verity.llm.client import CALLS_PER_CHECK, ModelClient
from verity.llm.slots import Slots
from verity.testing import FakeChatModel


class Gauge:
    """Counts holders at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def leave(self) -> None:
        with self.lock:
            self.active -= 1


def test_the_limit_holds_across_event_loops_in_threads() -> None:
    # A benchmark's workers each run checks in an event loop of their own: one limit.
    slots, gauge = Slots(3), Gauge()

    async def hold() -> None:
        async with slots.aheld():
            gauge.enter()
            await asyncio.sleep(0.02)
            gauge.leave()

    async def many() -> None:
        await asyncio.gather(*(hold() for _ in range(4)))

    threads = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gauge.peak == 3


def test_threads_and_tasks_share_one_limit() -> None:
    slots, gauge = Slots(2), Gauge()

    def sync_hold() -> None:
        with slots.held():
            gauge.enter()
            time.sleep(0.02)
            gauge.leave()

    async def async_hold() -> None:
        async with slots.aheld():
            gauge.enter()
            await asyncio.sleep(0.02)
            gauge.leave()

    async def tasks() -> None:
        await asyncio.gather(*(async_hold() for _ in range(5)))

    threads = [threading.Thread(target=sync_hold) for _ in range(5)]
    threads.append(threading.Thread(target=asyncio.run, args=(tasks(),)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gauge.peak == 2


def test_a_cancelled_waiter_gives_its_place_back() -> None:
    slots = Slots(1)

    async def scene() -> None:
        async with slots.aheld():
            waiter = asyncio.ensure_future(slots.aheld().__aenter__())
            await asyncio.sleep(0)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        # Had the cancelled waiter kept a slot, this would wait for ever.
        async with asyncio.timeout(1):
            async with slots.aheld():
                pass

    asyncio.run(scene())


def test_a_larger_limit_wakes_waiters_at_once() -> None:
    slots, gauge = Slots(1), Gauge()
    started = threading.Event()

    def hold() -> None:
        with slots.held():
            gauge.enter()
            started.set()
            time.sleep(0.1)
            gauge.leave()

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for t in threads:
        t.start()
    started.wait()
    slots.resize(3)
    for t in threads:
        t.join()
    assert gauge.peak == 3


def test_a_limit_needs_a_slot() -> None:
    with pytest.raises(ValueError):
        Slots(0)


class Slow(FakeChatModel):
    def __init__(self, gauge: Gauge) -> None:
        super().__init__(lambda messages, schema: "ok")
        self.gauge = gauge

    async def acomplete(self, messages, params, schema=None) -> RawCompletion:
        self.gauge.enter()
        await asyncio.sleep(0.02)
        self.gauge.leave()
        return RawCompletion(text="ok")


def run_checks(client: ModelClient, checks: int) -> None:
    """``checks`` threads, each with its own event loop and 8 calls at once."""

    async def one(i: int) -> None:
        await asyncio.gather(
            *(client.achat([Message(role="user", content=f"{i}-{n}")]) for n in range(8))
        )

    threads = [threading.Thread(target=asyncio.run, args=(one(i),)) for i in range(checks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_an_unset_limit_follows_the_runs_concurrency() -> None:
    gauge = Gauge()
    client = ModelClient(Slow(gauge))
    assert client.max_concurrency == CALLS_PER_CHECK == 8
    assert client.follow(4) is None
    assert client.max_concurrency == 32
    run_checks(client, 4)
    assert gauge.peak == 32


def test_a_set_limit_holds_and_says_what_it_caps() -> None:
    gauge = Gauge()
    client = ModelClient(Slow(gauge), max_concurrency=4)
    said = client.follow(32)
    assert said is not None and "at most 4 calls" in said and "32 checks" in said
    assert client.max_concurrency == 4
    run_checks(client, 4)
    assert gauge.peak == 4
    assert client.follow(3) is None  # a limit above the run's checks caps nothing
