"""Estimates: measured usage per example, looked up from the closest match, times the price."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verity.bench.estimate import Tally, UsageBook, UsageRecord, estimate_cost, record_run
from verity.cli import app
from verity.domain import Usage
from verity.llm.prices import Price

DATA = Path("../shared/datasets")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")


def record(method: str, dataset: str, setting: str, model: str, calls: list[int]) -> UsageRecord:
    usages = [Usage(llm_calls=c, prompt_tokens=100 * c, completion_tokens=10 * c) for c in calls]
    return UsageRecord.of(method, dataset, setting, model, usages)


def test_a_tally_gives_mean_spread_and_a_run_range_worked_out_by_hand() -> None:
    tally = Tally.of([2, 4, 6, 8])
    assert (tally.n, tally.mean, tally.low, tally.high) == (4, 5.0, 2, 8)
    # Sample variance: ((3^2 + 1^2 + 1^2 + 3^2) / 3) = 20/3.
    assert tally.sd == pytest.approx(math.sqrt(20 / 3))
    # 9 examples: 45 expected, 45 -+ 2 * sd * 3 = 45 -+ 15.49, within [18, 72].
    mean, low, high = tally.for_run(9)
    assert mean == 45
    assert (low, high) == pytest.approx((45 - 6 * math.sqrt(20 / 3), 45 + 6 * math.sqrt(20 / 3)))
    # One example: the spread is cut to what was seen, 2 to 8.
    assert Tally.of([2, 4, 6, 8]).for_run(1) == pytest.approx((5.0, 2.0, 8.0))
    assert (Tally.of([1, 2]) + Tally.of([3])).mean == 2.0


def test_the_cost_of_a_run_is_its_tokens_at_the_price() -> None:
    book = UsageBook(shipped=[record("rag", "liar", "open", "local", [1, 1, 1])])
    found = book.figures("rag", dataset="liar", setting="open", model="openai:gpt-4o-mini")
    assert found is not None and found.source == "shipped"
    estimate = estimate_cost(found, examples=10, price=Price(input=1.0, output=10.0))
    # 10 examples x 1 call x (100 prompt, 10 completion): (1,000 * 1 + 100 * 10) / 1e6.
    assert estimate.calls == (10, 10, 10)
    assert estimate.cost == pytest.approx((0.002, 0.002, 0.002))
    assert estimate_cost(found, examples=10, price=None).cost is None
    assert estimate_cost(None, examples=10, price=None).source == "no measurement yet"


def test_figures_come_from_the_closest_match_down() -> None:
    shipped = [
        record("zofia", "politifact", "open", "local", [12]),
        record("zofia", "gossipcop", "open", "local", [10]),
    ]
    own = {
        "a": record("zofia", "politifact", "open", "openai:m", [20]),
        "b": record("zofia", "politifact", "open", "openai:other", [30]),
    }
    book = UsageBook(shipped=shipped, own=own)
    pick = book.figures
    this_model = pick("zofia", dataset="politifact", setting="open", model="openai:m")
    assert this_model is not None and this_model.source == "your runs, this model"
    assert this_model.tallies["calls"].mean == 20
    any_model = pick("zofia", dataset="politifact", setting="open", model="openai:new")
    assert any_model is not None and any_model.tallies["calls"].mean == 25
    elsewhere = pick("zofia", dataset="gossipcop", setting="open", model="openai:m")
    assert elsewhere is not None and elsewhere.source == "shipped"
    variant = pick("zofia/no-debate", dataset="gossipcop", setting="open", model="x")
    assert variant is not None and variant.source == "shipped, as zofia"
    assert pick("rag", dataset="liar", setting="open", model="x") is None


def test_a_resumed_run_replaces_its_own_figures(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    record_run("run1", [record("rag", "liar", "open", "m", [1, 1])], path)
    record_run("run1", [record("rag", "liar", "open", "m", [1, 1, 3])], path)
    record_run("run2", [record("rag", "liar", "open", "m", [5])], path)
    book = UsageBook.load(path)
    assert len(book.own) == 2
    found = book.figures("rag", dataset="liar", setting="open", model="m")
    assert found is not None and found.tallies["calls"].n == 4
    assert json.loads(path.read_text())["records"]  # a file a person can read


@needs_data
def test_bench_estimate_prints_the_bill_without_calling_a_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No key for OpenAI: building its client would fail, so nothing builds one.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started = time.perf_counter()
    result = CliRunner().invoke(
        app,
        ["bench", "--dataset", "liar", "--methods", "direct,rag", "--sample", "40",
         "--model", "openai:gpt-4o-mini", "--data-dir", str(DATA), "--estimate"],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    took = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    assert "40 examples" in result.output
    assert "$0.15 per million prompt tokens" in result.output
    # liar is made of fact-checks: rag retrieves, so it is counted twice (both settings).
    rag = next(line for line in result.output.splitlines() if line.startswith("│ rag"))
    assert "80" in rag
    assert took < 10


@needs_data
def test_a_grounded_bench_estimate_counts_one_more_call_per_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    argv = ["bench", "--dataset", "liar", "--methods", "direct,rag", "--sample", "40",
            "--model", "openai:gpt-4o-mini", "--data-dir", str(DATA), "--estimate"]  # fmt: skip
    grounded = CliRunner().invoke(app, [*argv, "--grounding", "on"], env={"COLUMNS": "200"})
    assert grounded.exit_code == 0, grounded.output
    # 40 direct verdicts, and rag's 40 in each of its two leakage settings: 120.
    assert "grounding on: one more call per verdict, 120 calls" in grounded.output
    plain = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert "one more call per verdict" not in plain.output
