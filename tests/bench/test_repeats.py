"""ToE's protocol of repeats: seeds, the spread computed by hand, the command end to end.

The command runs against a loopback OpenAI-compatible endpoint that answers every
request with a small valid instance of the schema asked for (no model behind it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from faults.latency import LatencyEndpoint
from verity.bench.metrics import compute_metrics
from verity.bench.repeats import Spread, markdown, repeat_configs, repeat_warning, summarize
from verity.bench.results import MethodResult
from verity.bench.runner import BenchConfig
from verity.domain import Label
from verity.errors import BadInputError
from verity.llm.spec import ModelSettings

DATA = Path("../shared/datasets")
S, R = Label.SUPPORTED, Label.REFUTED


def test_each_repeat_shifts_every_seed_and_keeps_the_sample(tmp_path: Path) -> None:
    config = BenchConfig(
        dataset="liar",
        methods=("direct",),
        out=tmp_path,
        seed=7,
        model=ModelSettings(seed=3),
        roles={"judge": ModelSettings(seed=None, temperature=0.7)},
    )
    configs = repeat_configs(config, 3)
    assert [c.model.seed for c in configs] == [3, 4, 5]
    assert [c.roles["judge"].seed for c in configs] == [0, 1, 2]
    assert {c.seed for c in configs} == {7}  # the sampling seed: the same sample
    assert [c.out for c in configs] == [tmp_path / f"repeat-{n}" for n in range(3)]
    with pytest.raises(BadInputError):
        repeat_configs(config, 0)
    # One role samples at 0.7, so repeats can differ: no warning.
    assert repeat_warning(config, 3) is None
    greedy = BenchConfig(dataset="liar", methods=("direct",), out=tmp_path)
    assert "temperature 0" in (repeat_warning(greedy, 3) or "")
    assert repeat_warning(greedy, 1) is None


def test_spread_matches_a_hand_computation() -> None:
    s = Spread.of([0.5, 0.9, 0.6, 0.7])
    assert s.median == pytest.approx(0.65)  # (0.6 + 0.7) / 2
    assert s.mean == pytest.approx(0.675)
    # Sample standard deviation: squares of the deviations 0.030625, 0.050625,
    # 0.005625, 0.000625 sum to 0.0875; / 3, square root.
    assert s.stdev == pytest.approx(math.sqrt(0.0875 / 3))
    assert (s.low, s.high) == (0.5, 0.9)
    assert Spread.of([0.4]).stdev == 0.0
    with pytest.raises(BadInputError):
        Spread.of([])


def result(name: str, gold: list[Label], pred: list[Label]) -> MethodResult:
    metrics = compute_metrics(gold, pred, (S, R, Label.CONFLICTING))
    return MethodResult(name=name, metrics=metrics, usage_per_claim={})


def test_summary_gives_median_overall_and_per_gold_label() -> None:
    gold = [S, S, R, R]
    runs = [
        {"direct": result("direct", gold, [S, S, R, S])},  # 3/4; true 2/2, false 1/2
        {"direct": result("direct", gold, [S, R, R, R])},  # 3/4; true 1/2, false 2/2
        {"direct": result("direct", gold, [R, R, R, S])},  # 1/4; true 0/2, false 1/2
    ]
    summary = summarize(runs)["direct"]
    assert summary.accuracy.median == 0.75 and summary.accuracy.mean == pytest.approx(7 / 12)
    # CONFLICTING has no gold example: not reported.
    assert list(summary.per_gold_label) == ["SUPPORTED", "REFUTED"]
    assert summary.per_gold_label["SUPPORTED"].median == 0.5
    assert summary.per_gold_label["REFUTED"].median == 0.5
    text = markdown({"direct": summary}, dataset="liar", seeds=[0, 1, 2])
    assert "| direct | 75.0 | 58.3 |" in text and "SUPPORTED 50.0, REFUTED 50.0" in text


@pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
def test_bench_command_runs_the_repeats_and_writes_the_summary(cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with LatencyEndpoint(delay=0) as endpoint:
        argv = [
            "bench", "--dataset", "feverous-s", "--methods", "direct", "--setting", "gold",
            "--sample", "3", "--repeats", "2", "--model", "openai:m",
            "--base-url", endpoint.base_url, "--out", str(out),
        ]  # fmt: skip
        code, _, stderr = cli(argv)
        served = endpoint.count
    assert code == 0, stderr
    assert "temperature 0" in stderr  # the default model runs greedily
    assert served == 6  # 3 examples, 2 repeats, one call each
    summary = json.loads((out / "repeats.json").read_text())
    assert summary["model_seeds"] == [0, 1]
    assert summary["methods"]["direct"]["accuracy"]["values"] == [
        json.loads((out / f"repeat-{n}" / "report.json").read_text())["methods"]["direct"][
            "metrics"
        ]["accuracy"]
        for n in range(2)
    ]
    manifests = [json.loads((out / f"repeat-{n}" / "manifest.json").read_text()) for n in (0, 1)]
    assert manifests[0]["sample"]["ids"] == manifests[1]["sample"]["ids"]
    assert (out / "repeats.md").read_text().startswith("# Repeats: feverous-s")
