"""The harness's control flow (a scripted fake model stands in: the model is not the point)
and, with the embedded model, resumption after the process is killed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, excluded_ids, prepare, select_sample
from verity.errors import BadInputError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.testing import FakeChatModel

DATA = Path("../shared/datasets")
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")


def answers(label_for):
    def script(messages, schema):
        claim = messages[-1].content
        label = label_for(claim)
        if label is None:
            return "not json at all"
        return json.dumps({"explanation": "e", "label": label, "confidence": 0.5, "cited": [1]})

    return script


def make(tmp_path: Path, script, **overrides):
    fake = FakeChatModel(script)
    settings = {"methods": ("direct", "rag"), "sample": 6, "seed": 3, **overrides}
    config = BenchConfig(dataset="feverous-s", out=tmp_path / "out", setting="gold", **settings)

    def build(name, sources):
        return load_method(name, models=ModelSet(ModelClient(fake)), sources=sources)

    return prepare(config, load=load_dataset, build=build, sources=lambda split: []), fake


def stored(out: Path) -> list[tuple]:
    with sqlite3.connect(out / "results.sqlite") as db:
        return db.execute("SELECT method, example_id, pred, error FROM results").fetchall()


def test_same_sample_for_every_method_and_demonstrations_left_out() -> None:
    split = load_dataset("feverous-s")
    exclude = excluded_ids(["local"])
    assert ("feverous-s", "32472") in exclude
    everything = select_sample(split, None, 0, exclude)
    assert "32472" not in {ex.id for ex in everything}
    assert len(everything) == len(split.examples) - sum(d == "feverous-s" for d, _ in exclude)
    first = [ex.id for ex in select_sample(split, 50, 7, exclude)]
    assert first == [ex.id for ex in select_sample(split, 50, 7, exclude)]
    assert first != [ex.id for ex in select_sample(split, 50, 8, exclude)]


def test_every_run_on_a_dataset_scores_the_same_pool_whichever_methods_it_has(
    tmp_path: Path,
) -> None:
    script = answers(lambda claim: "SUPPORTED")
    baselines, _ = make(tmp_path / "b", script, methods=("direct",), sample=None)
    with_local, _ = make(tmp_path / "l", script, methods=("local",), sample=None)
    pool = [ex.id for ex in baselines.sample]
    assert pool == [ex.id for ex in with_local.sample]
    # LoCal's demonstration 32472 and 14862, its Marvel / DC sibling, are out of both.
    assert "32472" not in pool and "14862" not in pool
    manifest = baselines.manifest
    assert "feverous-s:32472" in manifest["excluded_demonstrations"]
    assert all(d.startswith("feverous-s:") for d in manifest["excluded_demonstrations"])
    near = {row["id"]: row for row in manifest["excluded_near_copies"]}
    assert "Marvel Comics" in near["14862"]["demonstration"] and near["14862"]["overlap"] >= 0.5
    left_out = len(manifest["excluded_demonstrations"]) + len(near)
    assert len(pool) == len(load_dataset("feverous-s").examples) - left_out


def test_a_method_is_told_the_dataset_before_the_manifest(tmp_path: Path) -> None:
    # LoCal picks its demonstrations by dataset; the manifest records the set it used.
    run, _ = make(tmp_path, answers(lambda claim: "SUPPORTED"), methods=("local",))
    assert run.methods["local"].demo_set == "feverous"
    assert run.manifest["methods"]["local"]["demo_set_used"] == "feverous"


def test_named_ids_are_the_sample_in_their_order(tmp_path: Path) -> None:
    run, _ = make(tmp_path, answers(lambda claim: "SUPPORTED"), ids=("1661", "764"))
    assert [ex.id for ex in run.sample] == ["1661", "764"]
    assert run.manifest["sample"]["ids"] == ["1661", "764"]
    with pytest.raises(BadInputError, match="no example 'nope'"):
        make(tmp_path, answers(lambda claim: "SUPPORTED"), ids=("nope",))
    # Left out of every run, with LoCal in it or not.
    with pytest.raises(BadInputError, match="'32472' is a demonstration"):
        make(tmp_path, answers(lambda c: "SUPPORTED"), ids=("32472",))
    with pytest.raises(BadInputError, match="'14862' is a near copy of a demonstration"):
        make(tmp_path, answers(lambda c: "SUPPORTED"), ids=("1661", "14862"))


def test_results_are_stored_reported_and_a_rerun_does_nothing_twice(tmp_path: Path) -> None:
    run, fake = make(tmp_path, answers(lambda c: "SUPPORTED"))
    results = run.run()
    run.close()
    rows = stored(tmp_path / "out")
    assert len(rows) == 12 and len({(m, i) for m, i, _, _ in rows}) == 12
    assert {m for m, *_ in rows} == {"direct", "rag"}
    # The same examples for both methods.
    by_method = {m: sorted(i for mm, i, _, _ in rows if mm == m) for m in ("direct", "rag")}
    assert by_method["direct"] == by_method["rag"] == sorted(run.manifest["sample"]["ids"])
    gold = [ex.label.value for ex in run.sample]
    expected_accuracy = sum(g == "SUPPORTED" for g in gold) / 6
    assert results["direct"].metrics.accuracy == pytest.approx(expected_accuracy)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(report["methods"]) == {"direct", "rag"}
    assert report["methods"]["rag"]["metrics"]["n"] == 6
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["dataset"]["checksum"] == load_dataset("feverous-s").checksum
    assert manifest["methods"]["rag"]["method"] == "rag" and manifest["code_version"]
    calls = len(fake.requests)
    again, fake2 = make(tmp_path, answers(lambda c: "REFUTED"))
    assert again.run_id == run.run_id
    again.run()
    again.close()
    assert len(fake2.requests) == 0 and len(stored(tmp_path / "out")) == 12
    assert calls == 12


def test_failures_are_counted_errors_and_can_be_retried(tmp_path: Path) -> None:
    flaky, _ = make(tmp_path, answers(lambda c: None))
    results = flaky.run()
    flaky.close()
    assert results["direct"].metrics.errors == 6 and results["direct"].metrics.accuracy == 0
    assert all(err and "no valid answer" in err for _, _, _, err in stored(tmp_path / "out"))
    fixed, fake = make(tmp_path, answers(lambda c: "REFUTED"), retry_errors=True)
    results = fixed.run()
    fixed.close()
    assert results["direct"].metrics.errors == 0 and len(fake.requests) == 12
    assert len(stored(tmp_path / "out")) == 12


def test_binary_protocol_counts_not_enough_info_as_refuted(tmp_path: Path) -> None:
    run, _ = make(tmp_path, answers(lambda c: "NOT_ENOUGH_INFO"))
    run.run()
    run.close()
    assert {pred for _, _, pred, _ in stored(tmp_path / "out")} == {"REFUTED"}


def test_gold_setting_needs_gold_evidence(tmp_path: Path) -> None:
    config = BenchConfig(dataset="hover", methods=("direct",), out=tmp_path, setting="gold")
    with pytest.raises(BadInputError, match="no gold evidence"):
        prepare(config, load=load_dataset, build=lambda n, s: None, sources=lambda split: [])


def test_claim_only_methods_refuse_article_datasets(tmp_path: Path) -> None:
    def build(name, sources):
        return load_method(name, models=ModelSet(ModelClient(FakeChatModel([]))))

    with pytest.raises(BadInputError, match="does not check articles"):
        prepare(
            BenchConfig(dataset="politifact", methods=("local",), out=tmp_path, setting="closed"),
            load=load_dataset,
            build=build,
            sources=lambda split: [],
        )


# Generous: these tests wait for events; the limit only ends a run that hangs for good.
OUTER_LIMIT = 3600


def count_stored(path: Path) -> int:
    """Results in a store that another process is writing: it may not have its tables yet."""
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        try:
            return int(db.execute("SELECT count(*) FROM results").fetchone()[0])
        except sqlite3.OperationalError:  # the file is there, its schema not yet
            return 0


@pytest.mark.integration
def test_a_killed_run_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    """The real command with the embedded model, killed with SIGKILL mid-run, then rerun."""
    out = tmp_path / "run"
    argv = [
        str(Path(sys.executable).with_name("verity")),
        "bench",
        "--dataset",
        "feverous-s",
        "--methods",
        "direct",
        "--setting",
        "gold",
        "--sample",
        "5",
        "--seed",
        "1",
        "--out",
        str(out),
    ]
    env = {**os.environ, "VERITY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Waits for an event (two results stored), not for a time: a loaded machine is slow,
    # not wrong. The outer limit only stops a run that hangs.
    deadline = time.monotonic() + OUTER_LIMIT
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if count_stored(out / "results.sqlite") >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with sqlite3.connect(out / "results.sqlite") as db:
        before = dict(db.execute("SELECT example_id, coalesce(pred, error) FROM results"))
    assert 2 <= len(before) < 5
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=OUTER_LIMIT, check=False
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(out / "results.sqlite") as db:
        after = db.execute("SELECT example_id, coalesce(pred, error) FROM results").fetchall()
    assert len(after) == 5 and len({i for i, _ in after}) == 5
    assert {i: r for i, r in after if i in before} == before  # nothing redone or lost
    report = json.loads((out / "report.json").read_text())
    assert report["methods"]["direct"]["metrics"]["n"] == 5


def test_the_report_gives_the_critical_path_wall_time_and_peak_memory(tmp_path: Path) -> None:
    run, _ = make(tmp_path, answers(lambda c: "SUPPORTED"), methods=("direct",))
    results = run.run()
    run.close()
    usage, extra = results["direct"].usage_per_claim, results["direct"].extra
    assert usage["critical_calls"] == 1.0 == usage["llm_calls"]
    assert usage["wall_seconds"] > 0
    # The overhead share reads each verdict's own time outside model calls.
    assert 0 < extra["overhead_share"] <= 1
    assert extra["peak_rss_mb"] > 10
    assert "on critical path" in (tmp_path / "out" / "report.md").read_text()


def test_follow_concurrency_lets_the_model_take_every_example_at_once(tmp_path: Path) -> None:
    run, _ = make(tmp_path, answers(lambda c: "SUPPORTED"), methods=("direct",), concurrency=5)
    assert run.follow_concurrency() == []
    client = run.methods["direct"].models.default  # type: ignore[attr-defined]
    assert client.max_concurrency == 5 * 8
    run.close()


def test_the_overhead_share_reads_each_checks_own_time_else_wall_minus_calls() -> None:
    from verity.bench.runner import _overhead
    from verity.bench.store import ResultRow

    def row(usage: dict, wall: float) -> ResultRow:
        return ResultRow(
            example_id="x", gold="SUPPORTED", pred="SUPPORTED", confidence=None, error=None,
            error_type=None, usage=usage, extra={"wall_seconds": wall}, verdict=None,
        )  # fmt: skip

    # Calls at once: 3 s in calls within 2 s of wall, 0.5 s with none in flight.
    at_once = row({"seconds": 3.0, "wall_seconds": 2.0, "non_model_seconds": 0.5}, 2.0)
    # An older stored row, calls one at a time: 4 s of wall, 3 s of it in calls.
    older = row({"seconds": 3.0}, 4.0)
    share, per_example = _overhead([at_once, older])
    assert share == pytest.approx((0.5 + 1.0) / 6.0)
    assert per_example == pytest.approx(3.0)
    assert _overhead([]) is None
