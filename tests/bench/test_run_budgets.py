"""Budgets in benchmark runs and batches: per example, for the whole run, and lossless.

A scripted fake model stands in (control flow only): it counts the requests that reach it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from verity.batch import BatchItem, ResultFile, run_batch
from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, prepare
from verity.domain import Claim
from verity.errors import BudgetExceededError
from verity.llm.budget import Budget
from verity.llm.client import ModelClient
from verity.llm.prices import Price
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.testing import FakeChatModel

DATA = Path("../shared/datasets")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
GOOD = json.dumps({"explanation": "e", "label": "SUPPORTED", "confidence": 0.5, "cited": [1]})


def make(tmp_path: Path, answer: str = GOOD, **overrides):
    fake = FakeChatModel(lambda messages, schema: answer)
    client = ModelClient(fake, price=Price(input=1.0, output=10.0))
    settings = {"methods": ("direct", "rag"), "sample": 6, "seed": 3, **overrides}
    config = BenchConfig(dataset="feverous-s", out=tmp_path / "out", setting="gold", **settings)

    def build(name, sources):
        return load_method(name, models=ModelSet(client), sources=sources)

    return prepare(config, load=load_dataset, build=build, sources=lambda split: []), fake


def rows(out: Path) -> list[tuple]:
    with sqlite3.connect(out / "results.sqlite") as db:
        return db.execute("SELECT method, example_id, error_type, usage FROM results").fetchall()


@needs_data
def test_an_example_over_its_budget_is_a_failed_example_that_keeps_its_cost(
    tmp_path: Path,
) -> None:
    # An answer that is not JSON asks for a repair round: a second call, which a budget of
    # one call refuses. Every example then fails on its budget, none on the model.
    run, fake = make(tmp_path, answer="not json at all", budget=Budget(calls=1))
    results = run.run()
    run.close()
    stored = rows(tmp_path / "out")
    assert len(stored) == 12
    assert {error for _, _, error, _ in stored} == {"BudgetExceededError"}
    assert len(fake.requests) == 12  # one request per example, the repair never sent
    spent = [json.loads(usage) for *_, usage in stored]
    assert all(u["llm_calls"] == 1 and u["cost"] > 0 for u in spent)
    assert results["direct"].metrics.errors == 6
    assert results["direct"].usage_per_claim["llm_calls"] == 1.0


@needs_data
def test_a_spent_run_budget_stops_the_run_and_a_rerun_finishes_it_exactly(tmp_path: Path) -> None:
    run, fake = make(tmp_path, run_budget=Budget(calls=4))
    with pytest.raises(BudgetExceededError) as info:
        run.run()
    run.close()
    assert info.value.scope == "run"
    assert len(fake.requests) == 4  # the fifth request was never sent
    assert len(rows(tmp_path / "out")) == 4
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["methods"]["direct"]["metrics"]["n"] == 4  # what was done is reported
    again, fake2 = make(tmp_path, run_budget=Budget(calls=100))
    assert again.run_id == run.run_id
    again.run()
    again.close()
    assert len(fake2.requests) == 8  # the rest, nothing twice
    assert len({(m, i) for m, i, *_ in rows(tmp_path / "out")}) == 12


def items(n: int) -> list[BatchItem]:
    return [BatchItem(key=f"c{i}", line=i + 1, subject=Claim(text=f"claim {i}")) for i in range(n)]


def test_a_batch_stops_at_its_run_budget_and_resumes_where_it_stopped(tmp_path: Path) -> None:
    fake = FakeChatModel(lambda messages, schema: GOOD)
    method = load_method("direct", models=ModelSet(ModelClient(fake)))
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as output:
        result = run_batch(items(6), method.verify, output, run_budget=Budget(calls=2))
    assert result.stopped is not None and result.stopped.scope == "run"
    assert len(out.read_text().splitlines()) == 2
    assert len(fake.requests) == 2
    with ResultFile(out) as output:
        result = run_batch(items(6), method.verify, output, run_budget=Budget(calls=10))
    assert result.stopped is None and result == []
    assert len(out.read_text().splitlines()) == 6
    assert len(fake.requests) == 6


def test_a_batch_item_over_its_budget_is_listed_with_what_it_spent(tmp_path: Path) -> None:
    fake = FakeChatModel(lambda messages, schema: "not json at all")
    method = load_method("direct", models=ModelSet(ModelClient(fake)))
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as output:
        result = run_batch(items(2), method.verify, output, budget=Budget(calls=1))
    assert [type(f.error) for f in result] == [BudgetExceededError] * 2
    lines = (tmp_path / "results.jsonl.errors.jsonl").read_text().splitlines()
    errors = [json.loads(line) for line in lines]
    assert [e["type"] for e in errors] == ["BudgetExceededError"] * 2
    assert all(e["usage"]["llm_calls"] == 1 for e in errors)
    assert len(fake.requests) == 2


class ElsewhereEngine:
    """Threads that say they are elsewhere: the run budget then has only the results to go by.

    A stand-in for Ray's engine (control flow only): no call of the run is admitted by a
    spend in this process, as on a cluster.
    """

    local = False

    def __enter__(self) -> ElsewhereEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(self, work, items, on_result, *, concurrency: int = 1) -> None:
        from verity.engines.thread import ThreadEngine

        ThreadEngine().run(work, items, on_result, concurrency=concurrency)


@needs_data
def test_a_run_elsewhere_stops_on_the_results_it_gets(tmp_path: Path) -> None:
    run, fake = make(tmp_path, run_budget=Budget(calls=4))
    with pytest.raises(BudgetExceededError) as info:
        run.run(engine=ElsewhereEngine())
    run.close()
    assert info.value.scope == "run"
    # Spent at the fourth result; the one example a worker had already taken (one in
    # flight, as concurrency 1 allows) finishes and is stored; nothing more starts.
    assert len(fake.requests) in (4, 5)
    assert len(rows(tmp_path / "out")) == len(fake.requests)


def test_a_batch_elsewhere_stops_on_the_results_it_gets(tmp_path: Path) -> None:
    fake = FakeChatModel(lambda messages, schema: GOOD)
    method = load_method("direct", models=ModelSet(ModelClient(fake)))
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as output:
        result = run_batch(
            items(6), method.verify, output, run_budget=Budget(calls=2), engine=ElsewhereEngine()
        )
    assert result.stopped is not None
    assert len(fake.requests) in (2, 3)  # the one already taken finishes; no more start
    assert len(out.read_text().splitlines()) == len(fake.requests)


def test_a_batch_item_refused_by_the_run_stops_the_batch_at_once(tmp_path: Path) -> None:
    import threading
    import time

    first = threading.Event()

    def slow_first(messages, schema):
        if not first.is_set():
            first.set()
            time.sleep(0.3)  # the other item is refused meanwhile, and recorded first
        return GOOD

    fake = FakeChatModel(slow_first)
    method = load_method("direct", models=ModelSet(ModelClient(fake)))
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as output:
        result = run_batch(
            items(4), method.verify, output, concurrency=2, run_budget=Budget(calls=1)
        )
    assert result.stopped is not None and result.stopped.scope == "run"
    assert len(fake.requests) == 1
    assert len(out.read_text().splitlines()) == 1  # the call in flight was paid: written


@needs_data
def test_what_a_stopped_example_spent_counts_in_the_runs_cost(tmp_path: Path) -> None:
    # Every answer fails validation: an example is a call and its repair. The third call,
    # the second example's first, is the run's last; its repair is refused by the run.
    run, fake = make(tmp_path, answer="not json at all", run_budget=Budget(calls=3))
    with pytest.raises(BudgetExceededError):
        run.run()
    assert len(fake.requests) == 3
    assert len(rows(tmp_path / "out")) == 1  # the first example (failed), not the stopped one
    assert run.spent().llm_calls == 3
    run.close()
