"""ZoFia's schedule (Appendix D): what runs at once, the critical path, the same trace.

A scripted fake model (control flow only) answers by schema after a short sleep, over
real spaCy, encoder and the list sources of test_pipeline.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

import pytest
from test_pipeline import ARTICLE, WEB, WIKI, Script, WebSource, WikiSource

from verity.llm.base import RawCompletion
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.methods.zofia.agents import DIMENSIONS
from verity.testing import FakeChatModel

pytestmark = pytest.mark.integration

DELAY = 0.1


class SlowFake(FakeChatModel):
    """The scripted fake, answering after ``DELAY``; notes when each step was in flight."""

    def __init__(self, script: Script) -> None:
        super().__init__(script)
        self.lock = threading.Lock()
        self.spans: list[tuple[str, float, float]] = []

    async def acomplete(self, messages, params, schema=None) -> RawCompletion:
        started = time.perf_counter()
        await asyncio.sleep(DELAY)
        answer = self.complete(messages, params, schema)
        with self.lock:
            title = schema["title"] if schema else "text"
            self.spans.append((title, started, time.perf_counter()))
        return answer


def run(parallel: bool, rulings=("I", "F")):
    fake = SlowFake(Script(rulings=list(rulings)))
    method = load_method(
        "zofia",
        models=ModelSet(ModelClient(fake)),
        sources=[WikiSource(WIKI), WebSource(WEB)],
        parallel=parallel,
    )
    return method.verify(ARTICLE), fake


def test_the_critical_path_is_the_papers_schedule() -> None:
    verdict, fake = run(parallel=True)
    # 5 linguist, triage + analysis, extraction, 3 claims (core and two sub-claims, B.3),
    # and 2 rounds of pro, con and judge.
    assert verdict.usage.llm_calls == 5 + 2 + 1 + 3 + 6
    # Linguist beside triage beside extraction (1); analysis beside the claims (1); the
    # debate, every turn after the one before it (6).
    assert verdict.usage.critical_calls == 1 + 1 + 6
    # Every linguist dimension was in flight at the same moment.
    linguist = [(s, e) for title, s, e in fake.spans if title == "DimensionJudgement"]
    assert max(s for s, _ in linguist) < min(e for _, e in linguist)
    # The claims were checked at once, and after the web search was done.
    claims = [(s, e) for title, s, e in fake.spans if title == "ClaimCheck"]
    assert max(s for s, _ in claims) < min(e for _, e in claims)


def test_a_sequential_run_has_every_call_on_its_path_and_the_same_trace() -> None:
    fast, _ = run(parallel=True)
    slow, fake = run(parallel=False)
    assert slow.usage.critical_calls == slow.usage.llm_calls == fast.usage.llm_calls
    spans = sorted(fake.spans, key=lambda span: span[1])
    assert all(a[2] <= b[1] for a, b in itertools.pairwise(spans))
    assert slow.label == fast.label
    assert [c.step for c in slow.trace.calls] == [c.step for c in fast.trace.calls]
    assert [c.messages for c in slow.trace.calls] == [c.messages for c in fast.trace.calls]
    assert slow.trace.model_dump(exclude={"calls"}) == fast.trace.model_dump(exclude={"calls"})
    assert slow.usage.wall_seconds > fast.usage.wall_seconds


def test_failures_are_listed_in_the_same_order_whichever_finished_first() -> None:
    class Broken(Script):
        def __call__(self, messages, schema):
            title = schema["title"] if schema else "text"
            if title in ("DimensionJudgement", "DomainChoice", "ClaimCheck"):
                return "not json"
            return super().__call__(messages, schema)

    def agents(parallel: bool) -> list[str]:
        fake = SlowFake(Broken(rulings=["F"]))
        method = load_method(
            "zofia",
            models=ModelSet(ModelClient(fake, repair_attempts=0)),
            sources=[WikiSource(WIKI), WebSource(WEB)],
            parallel=parallel,
        )
        return [f["agent"] for f in method.verify(ARTICLE).trace.failures]

    expected = [
        *(f"linguist {n}" for n in DIMENSIONS),
        "domain expert",
        "claim verifier (core)",
        "claim verifier (sub)",
        "claim verifier (sub)",
    ]
    assert agents(True) == agents(False)
    assert sorted(agents(True)) == sorted(expected)
