"""Budgets hold: a check stops within one model call of each limit, a server holds its rate.

    .venv/bin/python bench/budgets.py [--delay 0.05] [--minutes 2] [--rate 30]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds with a schema-valid made-up answer and 12 + 5 tokens of usage,
and counts the requests it is sent: what is measured is verity's own accounting.

1. One check per limit. LoCal (closed book, up to 10 iterations, its calls run at once
   where the method allows) on a claim, under a budget of calls, tokens, dollars (at a
   configured price of $1 / $10 per million tokens) or wall seconds, each at three sizes:
   the limit, what was spent when it stopped, the requests the endpoint received, and
   the overshoot in calls (0 for calls, at most one per call in flight for the others).
2. A server's calls a minute. `verity serve`'s app (uvicorn on loopback, keyless, 8
   workers) with ``calls_per_minute = --rate``, under a burst of 24 submissions each
   asking for the largest budget: every request the endpoint received is timed, and the
   most in any 60-second window is compared with the limit; the table also gives the 429s
   the burst met and the calls a minute reached.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint
sys.path.insert(0, str(ROOT / "bench"))

from faults.latency import LatencyEndpoint  # noqa: E402
from service import run_live  # noqa: E402
from speed import usual_path  # noqa: E402
from verity.config import ServiceLimits, Settings  # noqa: E402
from verity.domain import Claim  # noqa: E402
from verity.errors import BudgetExceededError  # noqa: E402
from verity.llm.budget import Budget, spending  # noqa: E402
from verity.llm.prices import Price  # noqa: E402
from verity.llm.spec import ModelSettings  # noqa: E402
from verity.service.core import Service, ServiceSettings  # noqa: E402
from verity.service.jobs import JobStore  # noqa: E402

PRICE = Price(input=1.0, output=10.0)
CALL_TOKENS = 12 + 5  # what the endpoint reports for every call
CALL_COST = PRICE.cost_of(prompt_tokens=12, completion_tokens=5)


def doubting(messages: Any, schema: Any) -> Any:
    """LoCal's usual path, except that its evaluators never accept: it runs every iteration."""
    props = (schema or {}).get("properties", {})
    if "claim_is_true" in props:
        return {"reason": "It does not follow.", "claim_is_true": False}
    if "contradiction" in props:
        return {"reason": "It would.", "contradiction": False}
    return usual_path(messages, schema)


class Timed:
    """The endpoint's answer hook: notes when each request arrived, answers as LoCal needs."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, messages: Any, schema: Any) -> Any:
        self.times.append(time.monotonic())
        return doubting(messages, schema)


def one_check(endpoint: LatencyEndpoint, budget: Budget) -> tuple[str, int, float, float, float]:
    """Run LoCal on one claim under ``budget``: what stopped it, requests, tokens, $, s."""
    import verity

    model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False, price=PRICE)
    method = verity.load_method(
        "local", model=model, sources=(), setting="closed", max_iterations=10
    )
    endpoint.reset()
    started = time.perf_counter()
    stopped = "not stopped"
    with spending(budget) as spend:
        try:
            method.verify(Claim(text="The bridge opened in 1932 and was painted red."))
        except BudgetExceededError as exc:
            stopped = exc.limit
    return stopped, endpoint.count, spend.tokens, spend.cost, time.perf_counter() - started


def part_one(delay: float) -> None:
    print("## 1. One check, each limit (LoCal, closed book, up to 10 iterations)\n")
    print("| limit | set to | stopped by | requests sent | spent | over the limit |")
    print("|---|---:|---|---:|---:|---|")
    with LatencyEndpoint(delay=delay, answer=doubting) as endpoint:
        one_check(endpoint, Budget())  # warm up: imports, the method's first build
        free = one_check(endpoint, Budget())
        print(f"| none | - | {free[0]} | {free[1]} | {free[2]:.0f} tokens | - |")
        for calls in (3, 7, 12):
            stop, sent, *_ = one_check(endpoint, Budget(calls=calls))
            print(f"| calls | {calls} | {stop} | {sent} | {sent} calls | {sent - calls} calls |")
        for tokens in (40, 100, 170):
            stop, sent, spent, _, _ = one_check(endpoint, Budget(tokens=tokens))
            over = (spent - tokens) / CALL_TOKENS
            print(
                f"| tokens | {tokens} | {stop} | {sent} | {spent:.0f} tokens | "
                f"{max(over, 0):.2f} calls |"
            )
        for cost in (3 * CALL_COST, 6.5 * CALL_COST, 11 * CALL_COST):
            stop, sent, _, dollars, _ = one_check(endpoint, Budget(cost=cost))
            over = (dollars - cost) / CALL_COST
            print(
                f"| cost | ${cost:.6f} | {stop} | {sent} | ${dollars:.6f} | "
                f"{max(over, 0):.2f} calls |"
            )
        for seconds in (3 * delay, 6.5 * delay, 11 * delay):
            stop, sent, _, _, wall = one_check(endpoint, Budget(seconds=seconds))
            over = (wall - seconds) / delay
            print(
                f"| seconds | {seconds:.2f} | {stop} | {sent} | {wall:.2f} s | "
                f"{max(over, 0):.2f} calls' latency |"
            )


def most_in_window(times: list[float], window: float = 60.0) -> int:
    """The most timestamps in any ``window`` seconds."""
    most, inside = 0, deque[float]()
    for t in sorted(times):
        inside.append(t)
        while inside[0] <= t - window:
            inside.popleft()
        most = max(most, len(inside))
    return most


def part_two(delay: float, rate: int, minutes: float) -> None:
    print(f"\n## 2. A server at {rate} calls a minute, a burst of maximal requests\n")
    timed = Timed()
    with (
        LatencyEndpoint(delay=delay, answer=timed) as endpoint,
        tempfile.TemporaryDirectory() as tmp,
    ):
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        ceiling = Budget(calls=200, seconds=minutes * 60 + 120)
        defaults = Settings(
            method="local",
            model=model,
            sources=(),
            methods={"local": {"setting": "closed", "max_iterations": 10}},
            service=ServiceLimits(budget=ceiling, calls_per_minute=rate),
        )
        service = Service(
            ServiceSettings(defaults=defaults, workers=8, queue_size=100),
            store=JobStore(Path(tmp) / "jobs.sqlite"),
        )
        with run_live(service) as url, httpx.Client(base_url=url, timeout=30) as http:
            started = time.monotonic()
            answers = [
                http.post(
                    "/v1/checks", json={"claim": f"Bridge claim {i}.", "budget": {"calls": 200}}
                )
                for i in range(24)
            ]
            refused = sum(a.status_code == 429 for a in answers)
            time.sleep(minutes * 60)
            service.begin_shutdown()
        service.stop(timeout=5)
    times = [t - started for t in timed.times]
    span = max(times) - min(times) if times else 0.0
    most = most_in_window(times)
    print(
        "| calls a minute set | requests in the run | run span (s) | most in any 60 s "
        "| 429s of 24 | held |"
    )
    print("|---:|---:|---:|---:|---:|---|")
    print(
        f"| {rate} | {len(times)} | {span:.0f} | {most} | {refused} | "
        f"{'yes' if most <= rate else 'NO'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--rate", type=int, default=30)
    parser.add_argument("--minutes", type=float, default=2.0)
    args = parser.parse_args()
    part_one(args.delay)
    part_two(args.delay, args.rate, args.minutes)


if __name__ == "__main__":
    main()
