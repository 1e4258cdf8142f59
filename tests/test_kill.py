"""Killed with SIGKILL at random moments, then resumed: every id exactly once, nothing lost.

The model is a loopback OpenAI-compatible endpoint that answers every request with a valid
verdict after a short wait (`faults`), so runs are long enough to be killed anywhere and
short enough to repeat; what is tested is verity's bookkeeping, not a model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults import FaultServer, model

pytestmark = pytest.mark.integration

VERITY = str(Path(sys.executable).with_name("verity"))
# Generous: each step waits for an event (a process ending, a result stored); the limit
# only ends a run that hangs for good.
OUTER_LIMIT = 600.0


@pytest.fixture
def endpoint():
    slow_answer = dataclasses.replace(model.answer(), delay=0.02)
    with FaultServer(default=slow_answer) as server:
        yield server


def env_for(tmp_path: Path) -> dict[str, str]:
    # No answer cache: every resumed claim must really be asked again.
    config = tmp_path / "verity.toml"
    config.write_text("[model]\ncache = false\n", encoding="utf-8")
    return {**os.environ, "VERITY_CACHE_DIR": str(tmp_path / "cache"), "VERITY_CONFIG": str(config)}


def kill_at_random(argv: list[str], env: dict[str, str], rng: random.Random, most: float) -> None:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait = rng.uniform(0.0, most)
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=OUTER_LIMIT)


def batch_ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    complete = [json.loads(line) for line in lines[:-1]]  # a torn last line is redone later
    return [r["id"] for r in complete]


def test_a_batch_killed_again_and_again_loses_and_repeats_nothing(tmp_path: Path, endpoint) -> None:
    claims = tmp_path / "claims.jsonl"
    ids = [f"c{i}" for i in range(40)]
    claims.write_text(
        "".join(json.dumps({"id": i, "claim": f"Claim number {i}."}) + "\n" for i in ids)
    )
    out = tmp_path / "out.jsonl"
    argv = [VERITY, "check", "--input", str(claims), "--output", str(out), "--method", "direct",
            "--model", "openai:m", "--base-url", f"{endpoint.url}/v1",
            "--concurrency", "4"]  # fmt: skip
    env = env_for(tmp_path)
    rng = random.Random(7)
    for _ in range(6):
        kill_at_random(argv, env, rng, most=4.0)
        seen = batch_ids(out)
        assert len(seen) == len(set(seen)), "a result was written twice"
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=OUTER_LIMIT)
    assert done.returncode == 0, done.stderr
    assert sorted(batch_ids(out)) == sorted(ids)
    assert out.read_bytes().endswith(b"\n")
    assert not (tmp_path / "out.jsonl.errors.jsonl").exists()


def test_two_batches_on_one_output_never_duplicate(tmp_path: Path, endpoint) -> None:
    claims = tmp_path / "claims.jsonl"
    ids = [f"c{i}" for i in range(30)]
    claims.write_text("".join(json.dumps({"id": i, "claim": f"Claim {i}."}) + "\n" for i in ids))
    out = tmp_path / "out.jsonl"
    argv = [VERITY, "check", "--input", str(claims), "--output", str(out), "--method", "direct",
            "--model", "openai:m", "--base-url", f"{endpoint.url}/v1"]  # fmt: skip
    env = env_for(tmp_path)
    procs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = [p.communicate(timeout=OUTER_LIMIT) for p in procs]
    codes = sorted(p.returncode for p in procs)
    refused = [err for _, err in outcomes if "another verity batch is writing" in err]
    # Either the second was refused while the first ran, or it found everything done.
    assert codes in ([0, 0], [0, 2]) and (codes == [0, 0] or len(refused) == 1)
    assert sorted(batch_ids(out)) == sorted(ids)


def test_a_benchmark_killed_again_and_again_resumes_exactly(tmp_path: Path, endpoint) -> None:
    from verity.bench.datasets import data_dir
    from verity.errors import DatasetError

    try:
        data_dir()
    except DatasetError as exc:
        pytest.skip(f"benchmark data not here: {exc}")
    out = tmp_path / "run"
    argv = [VERITY, "bench", "--dataset", "feverous-s", "--methods", "direct", "--setting", "gold",
            "--sample", "30", "--seed", "3", "--out", str(out), "--model", "openai:m",
            "--base-url", f"{endpoint.url}/v1", "--concurrency", "3"]  # fmt: skip
    env = env_for(tmp_path)
    rng = random.Random(11)
    stored: dict[str, str] = {}
    for _ in range(5):
        kill_at_random(argv, env, rng, most=5.0)
        if (out / "results.sqlite").exists():
            with sqlite3.connect(out / "results.sqlite") as db:
                try:
                    now = dict(db.execute("SELECT example_id, coalesce(pred, error) FROM results"))
                except sqlite3.OperationalError:  # killed after the file, before its tables
                    continue
            assert {k: v for k, v in now.items() if k in stored} == stored  # nothing redone
            stored = now
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=OUTER_LIMIT)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT example_id FROM results").fetchall()
    assert len(rows) == 30 and len({r[0] for r in rows}) == 30
    assert json.loads((out / "report.json").read_text())["methods"]["direct"]["metrics"]["n"] == 30


def test_a_kill_mid_write_leaves_a_tail_the_next_run_redoes(tmp_path: Path, endpoint) -> None:
    """The torn last line a SIGKILL can leave is verity's own, and is redone once."""
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        "".join(json.dumps({"id": f"c{i}", "claim": f"C {i}."}) + "\n" for i in range(3))
    )
    out = tmp_path / "out.jsonl"
    argv = [VERITY, "check", "--input", str(claims), "--output", str(out), "--method", "direct",
            "--model", "openai:m", "--base-url", f"{endpoint.url}/v1"]  # fmt: skip
    env = env_for(tmp_path)
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=OUTER_LIMIT)
    assert first.returncode == 0, first.stderr
    lines = out.read_bytes().split(b"\n")
    out.write_bytes(b"\n".join(lines[:2]) + b"\n" + lines[2][: len(lines[2]) // 2])  # torn
    started = time.monotonic()
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=OUTER_LIMIT)
    assert again.returncode == 0, again.stderr
    assert time.monotonic() - started < OUTER_LIMIT
    assert sorted(batch_ids(out)) == ["c0", "c1", "c2"]
