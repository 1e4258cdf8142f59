"""LoCal's independent calls at once: overlap, the order references impose, the critical path.

A scripted fake whose answers take time stands in for a remote model; it records when
each call ran, so overlap is read from the calls themselves, not guessed from a clock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time

import pytest

from verity.domain import Claim, Evidence, Label
from verity.errors import ContextOverflowError, ModelOutputError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.methods.local.program import Decomposition, parse_program, waves
from verity.sources.base import apply_filters
from verity.testing import FakeChatModel

CLAIM = Claim(text="The director of Alien was born in England, and Alien came out in 1979.")
GOLD = [Evidence(text="Alien was directed by Ridley Scott.", title="Alien", source="gold")]

# HOVER-like: two questions chained, a fact on the second answer, a fact on its own.
# Rounds: {q1, f2}, then {q2}, then {f1}.
CHAINED = {
    "questions": [{"text": "Who directed Alien?"}, {"text": "Where was {q1} born?"}],
    "facts": [{"text": "{q2} is in England."}, {"text": "Alien came out in 1979."}],
    "deduction": "f1 and f2",
}
# One question and three facts, one of them on its answer. Rounds: {q1, f2, f3}, {f1}.
WIDE = {
    "questions": [{"text": "Who directed Alien?"}],
    "facts": [
        {"text": "{q1} was born in England."},
        {"text": "Alien came out in 1979."},
        {"text": "Alien won an Academy Award."},
    ],
    "deduction": "f1 and f2 and f3",
}
ANSWERS = {"Who directed Alien?": "Ridley Scott", "Where was Ridley Scott born?": "South Shields"}


def _subject(messages) -> str:
    """What a call is about: its schema's title, and the question or statement asked."""
    found = re.search(r"<(?:question|statement)>(.*?)</", messages[-1].content)
    return found.group(1) if found else ""


class Timed(FakeChatModel):
    """A scripted fake whose every answer takes ``delay`` seconds; records each call's span."""

    def __init__(self, program: dict, *, delay: float = 0.05, logical: bool = True) -> None:
        super().__init__(self._answer)
        self.program, self.delay, self.logical = program, delay, logical
        self.spans: list[tuple[str, str, float, float]] = []
        self.prompts: dict[str, str] = {}

    def _answer(self, messages, schema) -> str:
        title = schema["title"]
        if title == "Decomposition":
            return json.dumps(self.program)
        if title == "QuestionAnswer":
            return json.dumps({"answer": ANSWERS.get(_subject(messages), "unknown")})
        if title == "FactAnswer":
            return json.dumps({"reason": "r", "answer": True})
        if title == "LogicalJudgement":
            return json.dumps({"reason": "l", "claim_is_true": self.logical})
        return json.dumps({"reason": "c", "contradiction": True})

    def pause(self, subject: str) -> float:
        return self.delay

    async def acomplete(self, messages, params, schema=None):
        start = time.perf_counter()
        await asyncio.sleep(self.pause(_subject(messages)))
        done = self.complete(messages, params, schema)
        subject = _subject(messages)
        self.spans.append((schema["title"], subject, start, time.perf_counter()))
        self.prompts[subject] = messages[-1].content
        return done

    def span(self, title: str, subject: str = "") -> tuple[float, float]:
        (found,) = [(s, e) for t, sub, s, e in self.spans if t == title and sub == subject]
        return found


def run(fake: FakeChatModel, *, parallel: bool, evidence=GOLD, **config):
    models = ModelSet(ModelClient(fake))
    return load_method("local", models=models, parallel=parallel, **config).verify(
        CLAIM, evidence=evidence
    )


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_rounds_follow_the_references() -> None:
    chained = parse_program(Decomposition.model_validate(CHAINED))
    assert [[t.var for t in w] for w in waves(chained.subtasks)] == [["q1", "f2"], ["q2"], ["f1"]]
    wide = parse_program(Decomposition.model_validate(WIDE))
    assert [[t.var for t in w] for w in waves(wide.subtasks)] == [["q1", "f2", "f3"], ["f1"]]


def test_independent_subtasks_overlap_and_a_reference_waits_for_its_answer() -> None:
    fake = Timed(WIDE, delay=0.05)
    verdict = run(fake, parallel=True)
    assert verdict.label is Label.SUPPORTED
    q1 = fake.span("QuestionAnswer", "Who directed Alien?")
    f1 = fake.span("FactAnswer", "Ridley Scott was born in England.")
    f2 = fake.span("FactAnswer", "Alien came out in 1979.")
    f3 = fake.span("FactAnswer", "Alien won an Academy Award.")
    # q1, f2 and f3 reference nothing: all three in flight together.
    assert _overlap(q1, f2) and _overlap(q1, f3) and _overlap(f2, f3)
    # f1 references {q1}: it starts once q1 has answered, and is shown that answer.
    assert f1[0] >= q1[1]
    assert (
        "<statement>Ridley Scott was born in England.</statement>"
        in fake.prompts["Ridley Scott was born in England."]
    )
    # Both evaluators at once.
    assert _overlap(fake.span("LogicalJudgement"), fake.span("CounterfactualJudgement"))
    # 7 calls of 0.05 s one after another would take 0.35 s; the path is 4 calls long.
    assert verdict.usage.llm_calls == 7
    assert verdict.usage.wall_seconds is not None and verdict.usage.wall_seconds < 0.3


def test_a_sequential_run_asks_one_call_at_a_time() -> None:
    fake = Timed(WIDE, delay=0.01)
    run(fake, parallel=False)
    spans = sorted((s, e) for _, _, s, e in fake.spans)
    assert all(after[0] >= before[1] for before, after in itertools.pairwise(spans))


@pytest.mark.parametrize(
    ("program", "config", "critical", "total"),
    [
        # decomposition 1 + rounds {q1, f2}, {q2}, {f1}: 3 + evaluators at once: 1.
        (CHAINED, {}, 1 + 3 + 1, 1 + 4 + 2),
        # decomposition 1 + rounds {q1, f2, f3}, {f1}: 2 + evaluators: 1.
        (WIDE, {}, 1 + 2 + 1, 1 + 4 + 2),
        # One evaluator: still one call on the path after v.
        (CHAINED, {"counterfactual_eval": False}, 1 + 3 + 1, 1 + 4 + 1),
        # No evaluators: three iterations, one after another, each 1 + 3 deep.
        (CHAINED, {"logical_eval": False, "counterfactual_eval": False}, 3 * 4, 3 * 5),
    ],
)
def test_the_critical_path_is_counted_by_hand(program, config, critical, total) -> None:
    verdict = run(Timed(program, delay=0.0), parallel=True, **config)
    assert (verdict.usage.critical_calls, verdict.usage.llm_calls) == (critical, total)
    sequential = run(Timed(program, delay=0.0), parallel=False, **config)
    assert sequential.usage.critical_calls == sequential.usage.llm_calls == total


class Skewed(Timed):
    """Calls that start first finish last: the round's order of finishing is reversed."""

    def pause(self, subject: str) -> float:
        return {"Who directed Alien?": 0.06, "Where was Ridley Scott born?": 0.03}.get(
            subject, 0.005
        )


class ListSource:
    name = "list"

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        return apply_filters(GOLD, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"name": "list"}


@pytest.mark.parametrize("program", [CHAINED, WIDE])
def test_parallel_and_sequential_runs_give_the_same_verdict_and_trace(program) -> None:
    # L(d) = False against v = True: one acceptance per iteration, so all three run.
    def both(parallel: bool):
        fake = Skewed(program, logical=False)
        models = ModelSet(ModelClient(fake))
        method = load_method("local", models=models, sources=[ListSource()], parallel=parallel)
        return method.verify(CLAIM)

    fast, slow = both(True), both(False)
    assert fast.usage.critical_calls < slow.usage.critical_calls
    assert (fast.label, fast.confidence, fast.explanation) == (
        slow.label,
        slow.confidence,
        slow.explanation,
    )
    assert [c.step for c in fast.trace.calls] == [c.step for c in slow.trace.calls]
    assert [c.messages for c in fast.trace.calls] == [c.messages for c in slow.trace.calls]
    assert [r.query for r in fast.trace.retrievals] == [r.query for r in slow.trace.retrievals]
    assert fast.trace.model_dump()["iterations"] == slow.trace.model_dump()["iterations"]
    # Sub-tasks are reported in the program's order, not the order they finished.
    (first, *_) = fast.trace.model_dump()["iterations"]
    assert [s["var"] for s in first["subtasks"]] == [
        f"q{n}" for n in range(1, len(program["questions"]) + 1)
    ] + [f"f{n}" for n in range(1, len(program["facts"]) + 1)]


class ThreadNoting(Timed):
    """Notes the thread of every model call and token count (a context makes it count)."""

    context_tokens = 100_000

    def __init__(self, program: dict) -> None:
        super().__init__(program, delay=0.0)
        self.calls: set[int] = set()
        self.counts: set[int] = set()

    def count_tokens(self, text: str) -> int:
        self.counts.add(threading.get_ident())
        return len(text.split())

    async def acomplete(self, messages, params, schema=None):
        self.calls.add(threading.get_ident())
        return await super().acomplete(messages, params, schema)


class NotingSource(ListSource):
    def __init__(self) -> None:
        self.threads: set[int] = set()

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.threads.add(threading.get_ident())
        return super().search(query, k, before=before, exclude_domains=exclude_domains)


def test_token_counts_and_source_searches_stay_off_the_event_loop() -> None:
    fake, source = ThreadNoting(WIDE), NotingSource()
    load_method("local", models=ModelSet(ModelClient(fake)), sources=[source]).verify(CLAIM)
    (loop,) = fake.calls
    assert fake.counts and loop not in fake.counts
    assert source.threads and loop not in source.threads


class Failing(Timed):
    """f2 and f3 cannot be asked (over the context); f3 fails first, f2 is first in order."""

    def pause(self, subject: str) -> float:
        return 0.05 if subject == "Alien came out in 1979." else 0.0

    def _answer(self, messages, schema) -> str:
        subject = _subject(messages)
        if subject in ("Alien came out in 1979.", "Alien won an Academy Award."):
            raise ContextOverflowError(f"prompt for {subject!r} over the context")
        return super()._answer(messages, schema)


@pytest.mark.parametrize("parallel", [True, False])
def test_a_failed_round_asks_every_subtask_and_reports_the_first_in_program_order(
    parallel: bool,
) -> None:
    fake = Failing(WIDE)
    with pytest.raises(ModelOutputError, match="no evaluated solution in 1 iteration") as err:
        run(fake, parallel=parallel, max_iterations=1)
    # f3 failed first in time; f2 comes first in the program, so its error is the one.
    assert "'Alien came out in 1979.' over the context" in str(err.value)
    assert "Academy Award" not in str(err.value)
    # Every sub-task of the round was asked, in either mode: the same calls either way.
    assert sorted(_subject(m) for m, _, _ in fake.requests if _subject(m)) == [
        "Alien came out in 1979.",
        "Alien won an Academy Award.",
        "Who directed Alien?",
    ]
