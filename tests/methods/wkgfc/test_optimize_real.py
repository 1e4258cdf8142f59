"""``verity optimize wkgfc`` for real: the embedded model as policy, critic and optimizer.

One FEVER claim to train on and one to validate, over the offline Wikidata subset, with a
one-hop beam and a one-step agent so that the run stays short. What is checked is what
the scripted tests cannot show: the critique, gradient and rewrite schemas go through a
real local backend, and the buffer and the policy file come out consistent.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from verity.bench.datasets import data_dir
from verity.errors import ConfigError, DatasetError
from verity.kg.store import kg_file
from verity.methods.wkgfc.policyfile import load_policy

pytestmark = pytest.mark.integration

KNOWN_ERRORS = {
    "none",
    "missing relation",
    "premature verdict",
    "redundant retrieval",
    "mishandled contradiction",
    "no verdict",
    "critique failed",
}


def test_one_epoch_on_the_embedded_model_fills_the_buffer_and_the_policy_file(
    tmp_path: Path,
) -> None:
    try:
        kg_file()
        data = data_dir()
    except (ConfigError, DatasetError) as exc:
        pytest.skip(f"the offline graph or the datasets are not here: {exc}")
    config = tmp_path / "verity.toml"
    config.write_text("[methods.wkgfc]\nhops = 1\nk = 1\nmax_steps = 1\nagent_hops = 0\n")
    out = tmp_path / "opt"
    argv = ["optimize", "wkgfc", "--dataset", "fever", "--train", "1", "--val", "1"]
    argv += ["--epochs", "1", "--batch", "1", "--source", "kg-local", "--out", str(out)]
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("verity")), *argv, "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "VERITY_DATA_DIR": str(data)},
        timeout=3600,  # stops only a run that hangs for good
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "validation balanced accuracy" in proc.stdout
    saved = json.loads((out / "policy.json").read_text())
    assert [step["epoch"] for step in saved["lineage"]] == [0, 1]
    assert saved["datasets"] == ["fever"] and saved["weights"]["correctness"] == 0.6
    [update] = saved["lineage"][1]["updates"]
    assert update["parent"] == saved["lineage"][0]["prompt_id"]
    policy = load_policy(str(out / "policy.json"))
    assert {dataset for dataset, _ in policy.examples} == {"fever"}
    assert len(policy.examples) == 2
    with sqlite3.connect(out / "experience.sqlite") as db:
        [(example, reward, error)] = db.execute(
            "SELECT example_id, reward, error_type FROM episodes"
        ).fetchall()
        steps = db.execute(
            "SELECT t, action, reward FROM steps WHERE example_id = ? ORDER BY t", (example,)
        ).fetchall()
    assert example == saved["train_ids"][0] and error in KNOWN_ERRORS
    # One row per time step, the episode's reward paid out over them (section 4.4).
    assert [t for t, _, _ in steps] == list(range(1, len(steps) + 1))
    assert sum(r for _, _, r in steps) == pytest.approx(reward)
    if error != "no verdict":
        assert steps[0][1].startswith("initKGRetrieval") and steps[-1][1].startswith("verdict")
