"""The Ray engine on a local cluster (one per session, conftest.py): the same results as
threads for a batch and a benchmark, nothing lost or written twice when a worker dies,
and the service's executor relaying events while a check runs.

Models are a loopback OpenAI-compatible endpoint (`faults.latency`) or, where a worker
must die at a chosen moment, a scripted fake; never the embedded model.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import (
    CrashOnceBuild,
    Doubles,
    HandshakeExecutor,
    crashes,
    crashing_verifier,
    label_by_length,
    no_sources,
)

from faults.latency import LatencyEndpoint
from verity.batch import Checks, ResultFile, read_items, run_batch
from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, prepare
from verity.domain import Event
from verity.engines import WorkerLostError
from verity.engines.ray import RayEngine, RayExecutor
from verity.errors import BadInputError, ConfigError, MissingKeyError

DATA = Path("../shared/datasets")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
pytestmark = pytest.mark.usefixtures("ray_cluster")

# Timings differ from run to run; everything else in a result must be the same.
TIMES = {"seconds", "wall_seconds", "non_model_seconds"}


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def lines(path: Path) -> dict[str, Any]:
    """A JSONL file's records by id, timings left out; every id once."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    ids = Counter(r["id"] for r in records)
    assert all(n == 1 for n in ids.values()), f"written twice: {ids}"
    return {r["id"]: timeless(r) for r in records}


def no_cache(tmp_path: Path) -> Path:
    """Settings without the answer cache: each run must really ask the endpoint."""
    path = tmp_path / "verity.toml"
    path.write_text("[model]\ncache = false\n")
    return path


def test_a_batch_on_ray_gives_what_threads_give(cli, tmp_path: Path) -> None:
    claims = tmp_path / "in.jsonl"
    texts = [f"Claim number {n} {'x' * n}" for n in range(7)] + ["A BROKEN answer"]
    claims.write_text("".join(f'{{"id": "c{n}", "claim": "{t}"}}\n' for n, t in enumerate(texts)))
    outs = {}
    with LatencyEndpoint(delay=0.0, answer=label_by_length) as endpoint:
        for engine in ("thread", "ray"):
            out = tmp_path / f"{engine}.jsonl"
            argv = [
                "check", "--input", str(claims), "--output", str(out), "--method", "direct",
                "--model", "openai:m", "--base-url", endpoint.base_url, "--source", "offline-wiki",
                "--config", str(no_cache(tmp_path)), "--concurrency", "3", "--engine", engine,
            ]  # fmt: skip
            before = endpoint.count
            code, _, err = cli(argv)
            assert code == 5, err  # the broken answer: a model error, the same exit code
            assert endpoint.count > before  # asked the endpoint, not a cache
            outs[engine] = out
    assert lines(outs["ray"]) == lines(outs["thread"])
    assert len(lines(outs["ray"])) == 7
    assert {r["label"] for r in lines(outs["ray"]).values()} == {"SUPPORTED", "REFUTED"}
    errors = {e: lines(Path(f"{outs[e]}.errors.jsonl")) for e in outs}
    assert errors["ray"] == errors["thread"]
    assert errors["ray"]["c7"]["type"] == "ModelOutputError"


def stored(out: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(out / "results.sqlite") as db:
        found = db.execute(
            "SELECT method, example_id, gold, pred, error, verdict FROM results ORDER BY example_id"
        ).fetchall()
    return [(*row[:5], timeless(json.loads(row[5])) if row[5] else None) for row in found]


@needs_data
def test_a_benchmark_on_ray_gives_what_threads_give(cli, tmp_path: Path) -> None:
    with LatencyEndpoint(delay=0.0, answer=label_by_length) as endpoint:
        for engine in ("thread", "ray"):
            argv = [
                "bench", "--dataset", "feverous-s", "--methods", "direct", "--setting", "gold",
                "--sample", "6", "--model", "openai:m", "--base-url", endpoint.base_url,
                "--config", str(no_cache(tmp_path)), "--concurrency", "4",
                "--out", str(tmp_path / engine), "--engine", engine,
            ]  # fmt: skip
            code, _, err = cli(argv)
            assert code == 0, err
    thread, ray = stored(tmp_path / "thread"), stored(tmp_path / "ray")
    assert len(ray) == 6 and ray == thread
    assert {row[3] for row in ray} == {"SUPPORTED", "REFUTED"}
    reports = [json.loads((tmp_path / e / "report.json").read_text()) for e in ("thread", "ray")]
    metrics = [r["methods"]["direct"]["metrics"] for r in reports]
    assert metrics[0] == metrics[1]


def batch_items(tmp_path: Path, n: int) -> list[Any]:
    claims = tmp_path / "in.jsonl"
    claims.write_text("".join(f'{{"id": "c{i}", "claim": "claim {i}"}}\n' for i in range(n)))
    return read_items(claims)[0]


def test_a_worker_killed_mid_batch_loses_nothing_and_writes_nothing_twice(tmp_path: Path) -> None:
    items = batch_items(tmp_path, 8)
    marker = tmp_path / "crashes"
    checks = Checks(partial(crashing_verifier, str(marker), "claim 3"))
    out = tmp_path / "out.jsonl"
    with RayEngine() as engine, ResultFile(out) as output:
        failures = run_batch(items, checks, output, concurrency=4, engine=engine)
    assert crashes(marker) == 1  # the worker did die, once
    assert failures == []
    assert sorted(lines(out)) == [f"c{i}" for i in range(8)]
    with RayEngine() as engine, ResultFile(out) as output:  # a rerun has nothing to do
        assert run_batch(items, checks, output, concurrency=4, engine=engine) == []
    assert len(out.read_text().splitlines()) == 8


def test_an_item_that_always_kills_its_worker_is_recorded_as_lost(tmp_path: Path) -> None:
    items = batch_items(tmp_path, 5)
    marker = tmp_path / "crashes"
    checks = Checks(partial(crashing_verifier, str(marker), "claim 2", always=True))
    out = tmp_path / "out.jsonl"
    # Two items at once on two workers: none shares a worker with the one that kills it.
    with RayEngine(retries=1) as engine, ResultFile(out) as output:
        failures = run_batch(items, checks, output, concurrency=2, engine=engine)
    assert crashes(marker) == 2  # run, then run again once
    assert [(f.item.key, type(f.error)) for f in failures] == [("c2", WorkerLostError)]
    assert "died" in str(failures[0].error)
    assert sorted(lines(out)) == ["c0", "c1", "c3", "c4"]
    assert [e["id"] for e in lines(Path(f"{out}.errors.jsonl")).values()] == ["c2"]


@needs_data
def test_a_worker_killed_mid_benchmark_stores_every_example_once(tmp_path: Path) -> None:
    marker = tmp_path / "crashes"
    split = load_dataset("feverous-s")
    config = BenchConfig(
        dataset="feverous-s", methods=("direct",), out=tmp_path / "out", setting="gold",
        sample=5, seed=2, concurrency=2, engine="ray",
    )  # fmt: skip
    build = CrashOnceBuild(str(marker), "")  # the first prompt of all kills its worker
    run = prepare(config, load=lambda *a, **k: split, build=build, sources=no_sources)
    try:
        results = run.run()
    finally:
        run.close()
    assert crashes(marker) == 1
    rows = stored(tmp_path / "out")
    assert sorted(r[1] for r in rows) == sorted(ex.id for ex in run.sample)
    assert all(r[4] is None for r in rows)  # no error: the killed example was run again
    assert results["direct"].metrics.n == 5
    assert "peak_rss_mb" not in results["direct"].extra  # the driver's memory says nothing


def test_an_interrupt_lets_the_items_in_flight_finish_and_starts_no_more() -> None:
    got: list[tuple[int, int]] = []

    def on_result(item: int, result: int) -> None:
        got.append((item, result))
        if len(got) == 1:
            raise KeyboardInterrupt  # as Ctrl-C would, while the driver handles a result

    with RayEngine() as engine, pytest.raises(KeyboardInterrupt):
        engine.run(Doubles(), range(10), on_result, concurrency=3)
    # The first result, then the two that were in flight; nothing after them started.
    assert len(got) == 3 and all(result == 2 * item for item, result in got)
    assert {item for item, _ in got} == {0, 1, 2}


def test_work_that_cannot_be_pickled_is_a_clear_error(tmp_path: Path) -> None:
    import threading

    lock = threading.Lock()
    checks = Checks(lambda: lambda subject: lock)  # type: ignore[arg-type, return-value]
    with (
        RayEngine() as engine,
        ResultFile(tmp_path / "out.jsonl") as output,
        pytest.raises(ConfigError, match="cannot be sent to Ray workers"),
    ):
        run_batch(batch_items(tmp_path, 1), checks, output, engine=engine)


def no_key() -> None:
    raise MissingKeyError("the endpoint", "ENDPOINT_KEY")


def test_a_method_that_cannot_be_built_in_a_worker_stops_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with (
        RayEngine() as engine,
        ResultFile(out) as output,
        pytest.raises(ConfigError, match="set the environment variable ENDPOINT_KEY"),
    ):
        run_batch(batch_items(tmp_path, 2), Checks(no_key), output, engine=engine)  # type: ignore[arg-type]
    assert not out.exists() or out.read_text() == ""


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("executor")
    running = RayExecutor(partial(HandshakeExecutor, str(folder)), concurrency=2)
    running.start()
    try:
        yield running, folder
    finally:
        running.close()


def handshake(folder: Path, request_id: str, seen: list[Event]):
    """A listener that answers the worker's first event with the file it waits for."""

    def listener(event: Event) -> None:
        seen.append(event)
        (folder / f"{request_id}.seen").touch()

    return listener


def test_the_executor_relays_events_while_the_check_runs(executor) -> None:
    import os

    run, folder = executor
    seen: list[Event] = []
    verdict = run({"id": "r1", "claim": "Paris is in France."}, handshake(folder, "r1", seen))
    assert [e.kind for e in seen] == ["check.start", "check.end"]
    assert [e.seq for e in seen] == [1, 2]
    assert verdict.label == "SUPPORTED" and verdict.explanation != str(os.getpid())


def test_the_executor_raises_the_checks_error_as_its_kind(executor) -> None:
    run, folder = executor
    with pytest.raises(BadInputError, match="cannot be checked"):
        run({"id": "r2", "claim": "x", "raise": "bad-input"}, handshake(folder, "r2", []))
    with pytest.raises(ConfigError, match="TEST_SERVICE_KEY"):
        run({"id": "r3", "claim": "x", "raise": "missing-key"}, handshake(folder, "r3", []))


def test_a_listener_that_raises_cancels_the_check(executor) -> None:
    run, folder = executor

    class Stop(Exception):
        pass

    def listener(event: Event) -> None:
        raise Stop

    with pytest.raises(Stop):
        run({"id": "r4", "claim": "x"}, listener)
    # The check stops at its next event; the worker takes the next request.
    seen: list[Event] = []
    assert run({"id": "r5", "claim": "y"}, handshake(folder, "r5", seen)).label == "SUPPORTED"


def test_a_check_whose_worker_died_is_run_again_without_repeating_events(executor) -> None:
    run, folder = executor
    seen: list[Event] = []
    verdict = run({"id": "r6", "claim": "z", "crash_once": True}, handshake(folder, "r6", seen))
    assert crashes(folder / "crash") == 1
    assert verdict.label == "SUPPORTED"
    assert [e.seq for e in seen] == [1, 2]  # the first event was not sent twice
