"""Training the retrieval policy: warm-up on the heuristic, then online GRPO (§III-B).

    figures = train_policy(make_method, examples, out=Path("runs/toe"), dataset="liar-train",
                           seed=0, progress=print)

Needs the trained evaluation network in ``out`` (its scores give Eq. 5's rewards). The
first 8 claims follow the warm-up heuristic; the policy is behaviour-cloned on their
episodes before the ninth claim is sampled, and the clone becomes GRPO's fixed reference
(spec 4). Every later claim's node episodes are sampled from the policy and handed to the
trainer, which updates at every G = 8 completed episodes. Each claim's episodes are saved
as they finish; a rerun replays the saved ones through the same seeded updates before it
goes on, and each claim samples from a generator seeded by its position, so a resumed run
equals an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from verity.bench.base import Example
from verity.llm.calllog import CallLog
from verity.methods.base import run_sync
from verity.methods.toe import grpo, weights
from verity.methods.toe.policy import PolicyNet, Step, Trajectory, act, behaviour_clone
from verity.methods.toe.retrieval import StepRecord
from verity.methods.toe.train import (
    WARMUP_CLAIMS,
    MakeMethod,
    Progress,
    claim_of,
    collect,
    done_rows,
    manifest_for,
)
from verity.methods.toe.tree import Node

# Not in the paper: behaviour cloning's epochs and learning rate (spec 4 PROPOSAL).
CLONE_EPOCHS = 50
CLONE_LR = 1e-3


def _episodes(row: dict[str, Any]) -> list[Trajectory]:
    return [
        Trajectory(steps=[Step(**step) for step in ep["steps"]], key=ep["key"])
        for ep in row.get("episodes", [])
    ]


def train_policy(
    make: MakeMethod,
    examples: Sequence[Example],
    out: Path,
    *,
    dataset: str,
    seed: int,
    progress: Progress,
    settings: grpo.GrpoSettings | None = None,
) -> dict[str, Any]:
    """Warm-up, behaviour cloning, then GRPO over the claims; saves ``out/policy.pt``."""
    method = make(weights=str(out), evaluator="network", policy="heuristic", aggregation="rule")
    torch.manual_seed(seed)
    policy = PolicyNet()
    trainer: grpo.GrpoTrainer | None = None
    warm: list[Trajectory] = []
    stats: list[dict[str, float]] = []
    clone_losses: list[float] = []

    def ready() -> grpo.GrpoTrainer:
        """The trainer, after cloning the warm-up episodes into the policy (once)."""
        nonlocal trainer, clone_losses
        if trainer is None:
            if warm:
                clone_losses = behaviour_clone(
                    policy, warm, epochs=CLONE_EPOCHS, lr=CLONE_LR, seed=seed
                )
            trainer = grpo.GrpoTrainer(policy, settings=settings)  # π_ref = the clone
        return trainer

    def learn(index: int, episodes: list[Trajectory]) -> None:
        if index < WARMUP_CLAIMS:
            warm.extend(episodes)
            return
        group = ready()
        for episode in episodes:
            found = group.add(episode)
            if found is not None:
                stats.append(found)

    def sample(index: int, example: Example) -> dict[str, Any]:
        collected: list[tuple[Node, list[StepRecord]]] = []
        generator = torch.Generator().manual_seed(seed * 1_000_003 + index)
        if index >= WARMUP_CLAIMS:
            # The warm-up is over: clone it before the first sample, so that this claim's
            # episodes come from the warm-started policy, not the random initial one.
            ready()

            def choose(
                node: Node, state: list[float], allowed: list[bool], _: float | None
            ) -> tuple[int, float]:
                action, logprob, _probs = act(
                    policy, state, allowed, greedy=False, generator=generator
                )
                return action, logprob

            method.chooser = choose
        else:
            method.chooser = method._choose  # the heuristic: no policy net is loaded
        method.on_episode = lambda node, records: collected.append((node, records))
        run_sync(method.grow(claim_of(example), CallLog()))
        rows = [
            {"key": f"{example.id}:{node.id}", "steps": [asdict(r) for r in records]}
            for node, records in collected
            if records
        ]
        learn(index, _episodes({"episodes": rows}))
        return {"warmup": index < WARMUP_CLAIMS, "episodes": rows}

    replayed = len(_replay(out, examples, learn))
    collect(out / "policy-samples.jsonl", examples, sample, progress)
    final = ready()  # fewer than N_warm + 1 claims: the policy is the clone
    rewards = [s["mean_reward"] for s in stats]
    figures = {
        "claims": len(examples),
        "replayed_claims": replayed,
        "warmup_episodes": len(warm),
        "clone_loss_first": clone_losses[0] if clone_losses else None,
        "clone_loss_last": clone_losses[-1] if clone_losses else None,
        "updates": len(stats),
        "mean_reward_first_update": rewards[0] if rewards else None,
        "mean_reward_last_update": rewards[-1] if rewards else None,
    }
    hyper = final.hyperparameters
    weights.save(
        policy,
        out,
        "policy",
        manifest_for(
            examples,
            dataset,
            seed,
            hyperparameters={
                **hyper,
                "warmup_claims": WARMUP_CLAIMS,
                "clone_epochs": CLONE_EPOCHS,
                "clone_lr": CLONE_LR,
            },
            figures=figures,
        ),
    )
    return figures


def _replay(out: Path, examples: Sequence[Example], learn: Any) -> list[str]:
    """Feed the saved claims' episodes to ``learn`` in order, as the first run did."""
    saved = done_rows(out / "policy-samples.jsonl")
    replayed = []
    for index, example in enumerate(examples):
        row = saved.get(example.id)
        if row is None:
            break
        learn(index, _episodes(row))
        replayed.append(example.id)
    return replayed
