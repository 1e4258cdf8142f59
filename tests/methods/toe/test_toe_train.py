"""The three training stages end to end on a scripted fake model (control flow only).

What the fake cannot show is whether the networks learn anything useful from a real
judge; the networks' learnability is tested on synthetic targets in their own files.
Here: the stages run in order, save weights with manifests, resume without asking the
model again, and a method loads what they wrote.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from test_toe_method import ListSource, Script

from verity.bench.base import Example
from verity.domain import Claim, Label
from verity.errors import BadInputError, ConfigError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.toe import weights
from verity.methods.toe.evalnet import EvalNet
from verity.methods.toe.method import ToeMethod
from verity.methods.toe.policy import PolicyNet, Step, Trajectory, as_batch, behaviour_clone
from verity.methods.toe.train import train_aggnet, train_evalnet
from verity.methods.toe.train_all import train_all
from verity.methods.toe.train_policy import CLONE_EPOCHS, CLONE_LR, train_policy
from verity.testing import FakeChatModel

EXAMPLES = [
    Example(
        id=str(i),
        subject=Claim(text=f"Claim number {i} about the budget."),
        label=Label.SUPPORTED if i % 2 else Label.REFUTED,
    )
    for i in range(10)
]


def _judge(text: str) -> tuple[float, float]:
    return (0.8, 0.6) if any(ch in text for ch in "13579") else (0.2, 0.5)


def _make(script: Script) -> Any:
    models = ModelSet(ModelClient(FakeChatModel(script)))
    sources = [ListSource("news"), ListSource("offline-wiki")]

    def make(**settings: Any) -> ToeMethod:
        merged = {"max_iterations": 2, "max_docs": 3, "clean": False, "max_depth": 2} | settings
        return ToeMethod(models=models, sources=sources, **merged)

    return make


def test_stages_train_save_resume_and_load(tmp_path: Path) -> None:
    script = Script(_judge)
    make = _make(script)
    quiet: list[str] = []
    figures = train_evalnet(
        lambda **s: make(weights=str(tmp_path), **s),
        EXAMPLES,
        tmp_path,
        dataset="liar-train",
        seed=0,
        epochs=5,
        progress=quiet.append,
    )
    assert figures["nodes"] >= len(EXAMPLES)
    manifest = weights.read_manifest(tmp_path, "evalnet")
    assert manifest["train_ids"] == [f"liar-train:{i}" for i in range(10)]
    assert manifest["hyperparameters"]["lr"] == 1e-3 and manifest["sha256"]
    first = weights.load(EvalNet, tmp_path, "evalnet")[0].state_dict()

    # A rerun reads the saved samples: no model call, and the same weights.
    asked = len(script.asked)
    train_evalnet(
        lambda **s: make(weights=str(tmp_path), **s),
        EXAMPLES,
        tmp_path,
        dataset="liar-train",
        seed=0,
        epochs=5,
        progress=quiet.append,
    )
    assert len(script.asked) == asked
    again = weights.load(EvalNet, tmp_path, "evalnet")[0].state_dict()
    assert all(torch.equal(first[key], again[key]) for key in first)

    policy = train_policy(
        make, EXAMPLES, tmp_path, dataset="liar-train", seed=0, progress=quiet.append
    )
    assert policy["warmup_episodes"] > 0 and policy["claims"] == 10
    saved = [
        json.loads(line) for line in (tmp_path / "policy-samples.jsonl").read_text().splitlines()
    ]
    assert [row["warmup"] for row in saved] == [True] * 8 + [False] * 2
    # Warm-up steps come from the heuristic (log-probability 0), later ones are sampled.
    assert all(s["logprob"] == 0.0 for ep in saved[0]["episodes"] for s in ep["steps"])
    assert any(s["logprob"] < 0.0 for ep in saved[9]["episodes"] for s in ep["steps"])

    agg = train_aggnet(
        make, EXAMPLES, tmp_path, dataset="liar-train", seed=0, epochs=3, progress=quiet.append
    )
    assert agg["trees"] == 10
    rows = [
        json.loads(line) for line in (tmp_path / "aggnet-samples.jsonl").read_text().splitlines()
    ]
    assert {row["y_v"] for row in rows} == {0.0, 1.0}  # the gold labels, Eq. 7

    method = make(weights=str(tmp_path))
    assert method.components() == {
        "evaluator": "network",
        "policy": "network",
        "aggregation": "network",
    }
    assert ("liar-train", "3") in method.excluded_ids()


def test_policy_stage_needs_the_evaluation_network(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="evalnet"):
        train_policy(
            _make(Script(_judge)),
            EXAMPLES,
            tmp_path,
            dataset="liar-train",
            seed=0,
            progress=lambda _: None,
        )


SIXTEEN = [
    Example(
        id=f"c{i}",
        subject=Claim(text=f"Statement {i} on the city budget."),
        label=Label.SUPPORTED if i % 2 else Label.REFUTED,
    )
    for i in range(16)
]


def _judge_by_digit(text: str) -> tuple[float, float]:
    return (0.8, 0.6) if any(ch in text for ch in "13579") else (0.2, 0.4)


def _steps(row: dict[str, Any]) -> list[Trajectory]:
    return [
        Trajectory(steps=[Step(**s) for s in ep["steps"]], key=ep["key"]) for ep in row["episodes"]
    ]


def test_one_call_trains_all_three_stages_and_grpo_updates_the_clone(tmp_path: Path) -> None:
    script = Script(_judge_by_digit)
    make = _make(script)
    said: list[str] = []
    done = train_all(
        make, SIXTEEN, tmp_path, dataset="liar-train", seed=0, epochs=3, progress=said.append,
        about={"model": "fake"},
    )  # fmt: skip
    assert list(done) == ["evalnet", "policy", "aggnet"]
    run = json.loads((tmp_path / "train.json").read_text())
    assert run["claims"] == 16 and run["model"] == "fake" and run["seed"] == 0
    for part in ("evalnet", "policy", "aggnet"):
        file = tmp_path / f"{part}.pt"
        assert run["stages"][part]["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()

    rows = [json.loads(x) for x in (tmp_path / "policy-samples.jsonl").read_text().splitlines()]
    # §III-B: N_warm = 8 claims of warm-up. Only they are cloned; claim 9 on is trained on.
    warm = [t for row in rows[:8] for t in _steps(row)]
    later = [t for row in rows[8:] for t in _steps(row)]
    assert done["policy"]["warmup_episodes"] == len(warm)
    # §III-B, Tab. I: an update at every G = 8 completed trajectories.
    assert len(later) >= 8 and done["policy"]["updates"] == len(later) // 8

    # The clone, made here from the saved warm-up episodes as the trainer makes it.
    torch.manual_seed(0)
    clone = PolicyNet()
    behaviour_clone(clone, warm, epochs=CLONE_EPOCHS, lr=CLONE_LR, seed=0)
    # The ninth claim's episodes were sampled from the clone (all before the first update).
    for trajectory in _steps(rows[8]):
        for step in trajectory.steps:
            state, allowed = as_batch(step.state, step.allowed)
            with torch.no_grad():
                logprobs = torch.log_softmax(clone(state, allowed), dim=-1)[0]
            assert float(logprobs[step.action]) == pytest.approx(step.logprob, abs=1e-5)
    # GRPO moved the policy away from the clone: the saved weights are not the clone's.
    trained = weights.load(PolicyNet, tmp_path, "policy")[0].state_dict()
    cloned = clone.state_dict()
    assert any(not torch.equal(trained[k], cloned[k]) for k in cloned)

    # A rerun of the whole run asks the model nothing more.
    asked = len(script.asked)
    train_all(make, SIXTEEN, tmp_path, dataset="liar-train", seed=0, epochs=3, progress=said.append)
    assert len(script.asked) == asked
    again = weights.load(PolicyNet, tmp_path, "policy")[0].state_dict()
    assert all(torch.equal(trained[k], again[k]) for k in trained)


def test_an_unknown_stage_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="unknown ToE stage"):
        train_all(
            _make(Script(_judge)), EXAMPLES, tmp_path, dataset="liar-train", seed=0, epochs=1,
            progress=lambda _: None, stages=("evalnet", "critic"),
        )  # fmt: skip
    assert not list(tmp_path.iterdir())
