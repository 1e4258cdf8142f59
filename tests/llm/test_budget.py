"""Budgets: each limit stops a check before the request that would go past it.

The backend is a scripted fake (control flow only): it counts the requests that reach it,
so every test can say how many were sent, not only how many were refused.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from verity.domain import Claim, Label, Message, Verdict
from verity.errors import BudgetExceededError, ContextOverflowError
from verity.llm.budget import Budget, Spend, check_time, spending
from verity.llm.cache import ResponseCache
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.prices import Price
from verity.llm.spec import ModelSet
from verity.methods.base import MethodBase, MethodConfig
from verity.testing import FakeChatModel

HI = [Message(role="user", content="one two three")]  # 3 prompt tokens for the fake


def client(answers: int = 20, *, price: Price | None = None, **kw: Any) -> ModelClient:
    # Each answer is 2 words: 2 completion tokens; each prompt of HI is 3 tokens.
    return ModelClient(FakeChatModel(["an answer"] * answers), price=price, **kw)


def test_a_calls_budget_sends_exactly_that_many_requests() -> None:
    model = client()
    with spending(Budget(calls=2)) as spend, pytest.raises(BudgetExceededError) as info:
        for _ in range(5):
            model.chat(HI)
    assert len(model.backend.requests) == 2  # the third was never sent
    assert spend.calls == 2
    assert info.value.limit == "calls"
    assert info.value.scope == "check"
    assert "2 calls" in str(info.value)


def test_a_token_budget_stops_at_the_first_call_after_it_is_reached() -> None:
    model = client()
    # 5 tokens a call (3 prompt + 2 completion). A limit of 12: after 2 calls 10 < 12, the
    # third is sent (15 >= 12), the fourth is refused: one call past the limit at most.
    with spending(Budget(tokens=12)) as spend, pytest.raises(BudgetExceededError) as info:
        for _ in range(10):
            model.chat(HI)
    assert len(model.backend.requests) == 3
    assert spend.tokens == 15
    assert info.value.limit == "tokens"


def test_a_cost_budget_counts_dollars_at_the_models_price() -> None:
    # $1 per million prompt tokens, $10 per million completion tokens: a call of 3 + 2
    # tokens costs (3 * 1 + 2 * 10) / 1e6 = 2.3e-5 dollars, worked out by hand.
    price = Price(input=1.0, output=10.0)
    model = client(price=price)
    with spending(Budget(cost=5e-5)) as spend, pytest.raises(BudgetExceededError) as info:
        for _ in range(10):
            model.chat(HI)
    # 2 calls: 4.6e-5 < 5e-5; the third is sent (6.9e-5); the fourth is refused.
    assert len(model.backend.requests) == 3
    assert spend.cost == pytest.approx(3 * 2.3e-5)
    assert info.value.limit == "cost"


def test_a_wall_time_budget_refuses_calls_once_the_time_is_spent() -> None:
    now = [0.0]
    model = client()
    spend = Spend(Budget(seconds=10), clock=lambda: now[0])
    with spending(None, within=spend):
        model.chat(HI)
        now[0] = 9.9
        model.chat(HI)
        now[0] = 10.0
        with pytest.raises(BudgetExceededError) as info:
            model.chat(HI)
        with pytest.raises(BudgetExceededError):
            check_time()  # retrieval between calls stops on time too
    assert len(model.backend.requests) == 2
    assert info.value.limit == "seconds"


def test_answers_from_the_cache_are_free(tmp_path: Any) -> None:
    model = client(cache=ResponseCache(tmp_path / "answers.sqlite"))
    model.chat(HI)  # sent and stored
    with spending(Budget(calls=1)) as spend:
        for _ in range(3):
            model.chat(HI)  # the same call: from the cache, no request
    assert len(model.backend.requests) == 1
    assert spend.calls == 0


def test_a_run_budget_around_check_budgets_bounds_them_all() -> None:
    model = client()
    with spending(Budget(calls=3), scope="run") as run:
        with spending(Budget(calls=2)):
            model.chat(HI)
            model.chat(HI)
        with spending(Budget(calls=2)), pytest.raises(BudgetExceededError) as info:
            model.chat(HI)
            model.chat(HI)  # the run's third call was the last it allows
    assert run.calls == 3
    assert info.value.scope == "run"
    assert "run's budget" in str(info.value)


def test_calls_at_once_take_their_places_before_they_are_sent() -> None:
    model = client(answers=50)

    async def many() -> list[Any]:
        return await asyncio.gather(*(model.achat(HI) for _ in range(20)), return_exceptions=True)

    with spending(Budget(calls=7)):
        results = asyncio.run(many())
    refused = [r for r in results if isinstance(r, BudgetExceededError)]
    assert len(model.backend.requests) == 7
    assert len(refused) == 13


def test_a_budget_within_a_ceiling_takes_the_lower_of_each_limit() -> None:
    asked = Budget(calls=50, cost=2.0)
    ceiling = Budget(calls=20, tokens=1000)
    assert asked.within(ceiling) == Budget(calls=20, tokens=1000, cost=2.0)
    assert asked.above(ceiling) == ["calls", "tokens"]  # tokens: unset is unlimited
    assert Budget(calls=5, tokens=10).above(ceiling) == []
    assert Budget().unlimited and not ceiling.unlimited
    assert ceiling.describe() == "20 calls, 1,000 tokens"


def test_the_budget_error_crosses_processes_with_its_parts() -> None:
    error = BudgetExceededError("spent", limit="cost", scope="run")
    error.usage = {"calls": 3}
    back = pickle.loads(pickle.dumps(error))
    assert (type(back), str(back), back.limit, back.scope, back.usage) == (
        BudgetExceededError,
        "spent",
        "cost",
        "run",
        {"calls": 3},
    )
    assert isinstance(ContextOverflowError("long"), BudgetExceededError)
    assert ContextOverflowError("long").limit == "context"


class _Config(MethodConfig):
    pass


class ThreeCalls(MethodBase):
    """Three model calls one after another, then a verdict: for the partial trace."""

    name: ClassVar[str] = "three-calls"
    accepts: ClassVar[tuple[type[Claim], ...]] = (Claim,)

    def __init__(self, model: ModelClient) -> None:
        self.models = ModelSet(model)
        self.config = _Config()

    async def check(self, subject: Claim | Any, evidence: Sequence[Any] | None) -> Verdict:
        log = CallLog()
        for n in range(3):
            await self.models.default.achat(HI, step=f"step{n}", log=log)
        return Verdict(
            subject=subject,
            label=Label.SUPPORTED,
            explanation="",
            method=self.name,
            usage=log.usage(),
            trace=log.trace(),
        )


def test_a_stopped_check_keeps_what_it_did_and_spent() -> None:
    method = ThreeCalls(client(price=Price(input=1.0, output=10.0)))
    with spending(Budget(calls=2)), pytest.raises(BudgetExceededError) as info:
        method.verify(Claim(text="x"))
    error = info.value
    assert [c.step for c in error.trace.calls] == ["step0", "step1"]
    assert error.usage.llm_calls == 2
    assert error.usage.cost == pytest.approx(2 * 2.3e-5)
    # Without a budget the same method runs its three calls.
    verdict = ThreeCalls(client()).verify(Claim(text="x"))
    assert verdict.usage.llm_calls == 3


def test_a_place_given_back_is_not_counted_and_the_hooks_hear_it_was_never_sent() -> None:
    heard: list[object] = []
    spend = Spend(Budget(calls=1), before_call=lambda s, a: None, after_call=heard.append)
    spend.admit()
    spend.release()  # admitted, then its caller was cancelled before sending it
    assert spend.calls == 0 and heard == [None]
    spend.admit()  # the place is free again
    with pytest.raises(BudgetExceededError):
        spend.admit()
    assert heard == [None]  # refused before any hook ran: it took no place to give back


def test_a_table_that_sets_one_limit_keeps_the_others() -> None:
    from verity.config import DEFAULT_BUDGET, Settings

    layered = Settings(budget=Budget(cost=0.1)).budget
    assert layered == Budget(calls=DEFAULT_BUDGET.calls, seconds=DEFAULT_BUDGET.seconds, cost=0.1)
    assert Budget(calls=5).over(Budget(calls=9, seconds=3)) == Budget(calls=5, seconds=3)


def test_when_steps_fail_together_a_spent_budget_is_the_error_raised() -> None:
    from verity import schedule
    from verity.errors import ModelOutputError

    async def fails(error: Exception) -> None:
        raise error

    async def both() -> None:
        with schedule.tracked(parallel=True):
            await schedule.gather(fails(ModelOutputError("bad")), fails(BudgetExceededError("x")))

    with pytest.raises(BudgetExceededError):
        asyncio.run(both())


def test_a_limit_reached_exactly_is_spent() -> None:
    # 5 tokens a call: after two calls 10 tokens, exactly the limit, so no third call.
    model = client()
    with spending(Budget(tokens=10)), pytest.raises(BudgetExceededError):
        for _ in range(5):
            model.chat(HI)
    assert len(model.backend.requests) == 2
    # 2 completion tokens at $5,000 per million: $0.01 a call; $0.02 is spent after two.
    priced = client(price=Price(input=0.0, output=5_000.0))
    assert 0.01 + 0.01 == 0.02  # the sum is exact in floating point: the boundary is hit
    with spending(Budget(cost=0.02)), pytest.raises(BudgetExceededError):
        for _ in range(5):
            priced.chat(HI)
    assert len(priced.backend.requests) == 2


def test_a_repair_the_budget_refuses_leaves_the_answer_it_got_in_the_log() -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        label: str

    for asynchronous in (False, True):
        model = ModelClient(FakeChatModel(["not json"] * 3))
        log = CallLog()
        with spending(Budget(calls=1)), pytest.raises(BudgetExceededError):
            if asynchronous:
                asyncio.run(model.achat(HI, schema=Answer, step="judge", log=log))
            else:
                model.chat(HI, schema=Answer, step="judge", log=log)
        assert [(c.step, c.output, c.attempts) for c in log.calls] == [("judge", "not json", 1)]
        assert log.usage().llm_calls == 1


def test_a_spent_time_budget_stops_a_check_at_its_next_step_not_only_its_next_call() -> None:
    from verity.domain import Retrieval

    now = [0.0]
    spend = Spend(Budget(seconds=5), clock=lambda: now[0])
    with spending(None, within=spend):
        log = CallLog()
        log.milestone("m.step", "a step")  # in time: nothing happens
        now[0] = 5.0
        with pytest.raises(BudgetExceededError):
            log.milestone("m.step", "a step")
        with pytest.raises(BudgetExceededError):
            log.add_retrieval(Retrieval(source="s", query="q", k=5, results=()))
        assert len(log.retrievals) == 1  # recorded before the check stops
