"""What a check, or a whole run, may spend: model calls, tokens, wall seconds and money.

    with spending(Budget(calls=30, cost=0.05)) as spend:
        verdict = method.verify(claim)          # BudgetExceededError past a limit
    spend.calls, spend.tokens, spend.cost       # what it spent

A budget is counted where calls are made: `verity.llm.client.ModelClient` asks the
current spend (a context variable, so every step of a check, in any task or worker
thread it starts, shares it) before each request it sends and reports its tokens and
cost after. Spends nest: a benchmark's run budget around each example's own budget;
a call must fit in every one of them. The checks, and what "within one call" means:

* ``calls``: the (N+1)th request is refused before it is sent, so at most N are made;
  calls that run at once take their place in the count before they are sent.
* ``tokens`` and ``cost``: a request is refused once the spend so far has reached the
  limit; the call that crosses it finishes (its tokens are only known after), so a
  check stops at most one call past the limit (one per call in flight at once).
* ``seconds``: a request is refused once the check has run that long; the call in
  flight then finishes (bounded by the model's own timeout).

Answers from verity's own cache are free: they are not requests and count for nothing.
Retrieval and other steps between model calls may call `check_time` to stop on time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verity.domain import Usage
from verity.errors import BudgetExceededError

__all__ = ["Budget", "Spend", "check_time", "current", "spending"]

Scope = Literal["check", "run"]
LIMITS = ("calls", "tokens", "seconds", "cost")

# The most any budget may say: large enough for a whole benchmark run, small enough that
# a number out of a request or a settings file cannot overflow anything downstream.
MAX_CALLS = 10_000_000
MAX_TOKENS = 10**11
MAX_SECONDS = 30 * 86400.0
MAX_COST = 1_000_000.0


class Budget(BaseModel):
    """Limits on one check (or one run); None is no limit.

    Budget(calls=40, tokens=200_000, seconds=300, cost=0.10)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int | None = Field(default=None, ge=1, le=MAX_CALLS, description="model requests")
    tokens: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="prompt and completion tokens"
    )
    seconds: float | None = Field(default=None, gt=0, le=MAX_SECONDS, description="wall time")
    cost: float | None = Field(default=None, ge=0, le=MAX_COST, description="US dollars")

    @property
    def unlimited(self) -> bool:
        """Whether no limit is set."""
        return all(getattr(self, name) is None for name in LIMITS)

    def within(self, ceiling: Budget) -> Budget:
        """The budget lowered to ``ceiling`` wherever the ceiling is lower (or unset here)."""
        lowered: dict[str, float | int | None] = {}
        for name in LIMITS:
            mine, top = getattr(self, name), getattr(ceiling, name)
            lowered[name] = top if mine is None else mine if top is None else min(mine, top)
        return Budget.model_validate(lowered)

    def over(self, base: Budget) -> Budget:
        """The limits set here, and ``base``'s for the ones left unset (a layered table)."""
        return Budget.model_validate(
            {name: getattr(self, name) if getattr(self, name) is not None else getattr(base, name)
             for name in LIMITS}
        )  # fmt: skip

    def above(self, ceiling: Budget) -> list[str]:
        """The limits this budget asks more of than ``ceiling`` allows (unset is more)."""
        found = []
        for name in LIMITS:
            mine, top = getattr(self, name), getattr(ceiling, name)
            if top is not None and (mine is None or mine > top):
                found.append(name)
        return found

    def describe(self) -> str:
        """The limits in words: ``40 calls, 300 s, $0.10``; ``no limit`` when none."""
        parts = []
        if self.calls is not None:
            parts.append(f"{self.calls:,} calls")
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        if self.cost is not None:
            parts.append(f"${self.cost:g}")
        return ", ".join(parts) or "no limit"


class Spend:
    """What one check (or run) has spent against its budget; shared by its threads.

    ``parent`` is the spend around it (a run's, around an example's): a call must fit
    both, and what it spends counts in both.
    """

    def __init__(
        self,
        budget: Budget,
        *,
        scope: Scope = "check",
        parent: Spend | None = None,
        clock: Callable[[], float] = time.monotonic,
        before_call: Callable[[Spend, threading.Event], None] | None = None,
        after_call: Callable[[Usage | None], None] | None = None,
    ) -> None:
        self.budget, self.scope, self.parent = budget, scope, parent
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()
        # Called before each request is admitted with the innermost spend (a rate limit
        # that may wait, and may ask how long the check has left) and an event set when
        # the caller gave up waiting (its task was cancelled); and after the request with
        # its usage (the same limit counting tokens), or None when it was never sent.
        self._before_call = before_call
        self._after_call = after_call
        self.calls = 0
        self.usage = Usage()

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens spent."""
        return self.usage.tokens

    @property
    def cost(self) -> float:
        """US dollars spent on calls of known price."""
        return self.usage.cost

    @property
    def may_wait(self) -> bool:
        """Whether admitting a call may wait (a rate limit somewhere in the chain)."""
        return any(spend._before_call is not None for spend in self._chain())

    def elapsed(self) -> float:
        """Seconds since the spend began."""
        return self._clock() - self._started

    def remaining_seconds(self) -> float | None:
        """Seconds left before the wall-time limit (of this spend or an outer one)."""
        left = None if self.budget.seconds is None else self.budget.seconds - self.elapsed()
        outer = self.parent.remaining_seconds() if self.parent is not None else None
        if left is None:
            return outer
        return left if outer is None else min(left, outer)

    def admit(self, abandoned: threading.Event | None = None) -> None:
        """Take a place for one request, or raise `BudgetExceededError` naming the limit.

        ``abandoned`` is set by a caller that stopped waiting (a hook may then give up).
        """
        abandoned = abandoned or threading.Event()
        chain = list(self._chain())
        for spend in chain:
            spend._refuse_if_spent_alone()
        hooked = []
        try:
            for spend in chain:
                if spend._before_call is not None:
                    spend._before_call(self, abandoned)
                    hooked.append(spend)
            with _ADMIT:
                for spend in chain:
                    spend._refuse_if_spent()
                for spend in chain:
                    spend.calls += 1
        except BaseException:
            # Refused after a hook gave the call a place (a rate limit's): give it back.
            for spend in hooked:
                if spend._after_call is not None:
                    spend._after_call(None)
            raise

    def release(self) -> None:
        """Give back the place of an admitted request that was never sent (cancelled)."""
        for spend in self._chain():
            with _ADMIT:
                spend.calls = max(spend.calls - 1, 0)
            if spend._after_call is not None:
                spend._after_call(None)

    def settle(self, usage: Usage) -> None:
        """Add what a finished request cost."""
        for spend in self._chain():
            with spend._lock:
                spend.usage = spend.usage + usage
            if spend._after_call is not None:
                spend._after_call(usage)

    def finished(self, usage: Usage) -> None:
        """Count a whole finished check at once (a run counting its items' results)."""
        with self._lock:
            self.calls += usage.llm_calls - usage.cached_calls
            self.usage = self.usage + usage

    def refuse_if_spent(self) -> None:
        """`BudgetExceededError` when a limit of this spend (alone) is reached."""
        with _ADMIT:
            self._refuse_if_spent()

    def check_time(self) -> None:
        """`BudgetExceededError` once the wall-time limit is reached."""
        for spend in self._chain():
            limit = spend.budget.seconds
            if limit is not None and spend.elapsed() >= limit:
                raise spend._exceeded("seconds", f"{limit:g} s")

    def spent(self) -> str:
        """What was spent, in words, for messages."""
        price = f"${self.cost:.4f}" if self.usage.price_known else "price unknown"
        return f"{self.calls} calls, {self.tokens:,} tokens, {self.elapsed():.1f} s, {price}"

    def _chain(self) -> Iterator[Spend]:
        spend: Spend | None = self
        while spend is not None:
            yield spend
            spend = spend.parent

    def _refuse_if_spent_alone(self) -> None:
        with _ADMIT:
            self._refuse_if_spent()

    def _refuse_if_spent(self) -> None:
        budget = self.budget
        if budget.calls is not None and self.calls >= budget.calls:
            raise self._exceeded("calls", f"{budget.calls:,} calls")
        if budget.tokens is not None and self.tokens >= budget.tokens:
            raise self._exceeded("tokens", f"{budget.tokens:,} tokens")
        if budget.cost is not None and self.cost >= budget.cost:
            raise self._exceeded("cost", f"${budget.cost:g}")
        if budget.seconds is not None and self.elapsed() >= budget.seconds:
            raise self._exceeded("seconds", f"{budget.seconds:g} s")

    def _exceeded(self, limit: str, said: str) -> BudgetExceededError:
        whose = "the run's" if self.scope == "run" else "the check's"
        return BudgetExceededError(
            f"{whose} budget of {said} is spent ({self.spent()}); the check stopped before "
            "its next model call",
            limit=limit,
            scope=self.scope,
        )


# One lock for admitting calls: a request admitted by one spend of a chain must be
# admitted by all of them at once, or two threads could both take the last place.
_ADMIT = threading.Lock()
_CURRENT: ContextVar[Spend | None] = ContextVar("verity_spend", default=None)


def current() -> Spend | None:
    """The spend of the running check, if it has a budget."""
    return _CURRENT.get()


@contextmanager
def spending(
    budget: Budget | None,
    *,
    scope: Scope = "check",
    before_call: Callable[[Spend, threading.Event], None] | None = None,
    after_call: Callable[[Usage | None], None] | None = None,
    within: Spend | None = None,
) -> Iterator[Spend]:
    """Count the calls made in the body against ``budget`` (None: count without a limit).

    The new spend sits inside ``within`` when given, else inside the current one.
    ``before_call`` and ``after_call`` are the hooks of `Spend`.
    """
    parent = within if within is not None else _CURRENT.get()
    spend = Spend(
        budget or Budget(),
        scope=scope,
        parent=parent,
        before_call=before_call,
        after_call=after_call,
    )
    token = _CURRENT.set(spend)
    try:
        yield spend
    finally:
        _CURRENT.reset(token)


def check_time() -> None:
    """Stop the running check if its wall time is spent (a no-op without a budget)."""
    spend = _CURRENT.get()
    if spend is not None:
        spend.check_time()
