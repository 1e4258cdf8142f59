"""Training ToE's three networks, one stage at a time (§III-B, §III-C, §III-D; spec 6).

    train_stage("evalnet", make_method, examples, out=Path("runs/toe"), seed=0, epochs=30)
    train_stage("policy", make_method, examples, out=Path("runs/toe"), seed=0)
    train_stage("aggnet", make_method, examples, out=Path("runs/toe"), seed=0, epochs=30)

The order is the spec's (the paper gives none): collect evidence sets with the warm-up
heuristic and score their nodes with the LLM judge, then train the evaluation network on
the judge's soft targets (Eq. 6); with that network's rewards (Eq. 5) warm up the policy
on the heuristic's first 8 claims (behaviour cloning; the result is GRPO's fixed
reference), then GRPO on-policy; with both, grow trees and train the aggregation network
on the gold label at the root (Eq. 7) and the rule's aggregates below it (Eq. 8).

Every claim's material is one JSON line in ``OUT/STAGE-samples.jsonl``, written as soon as
the claim is done: a rerun with the same ``--out`` skips the claims already there (and,
for the policy, replays their episodes through the same seeded updates), so a stopped run
resumes. The weights go to ``OUT/STAGE.pt`` with a manifest naming the training ids.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from verity.bench.base import Example
from verity.domain import Claim, Label
from verity.errors import BadInputError, VerityError
from verity.llm.calllog import CallLog
from verity.methods.base import run_sync
from verity.methods.toe import aggnet, evalnet, weights
from verity.methods.toe.combine import tree_rows
from verity.methods.toe.evalinputs import pack
from verity.methods.toe.features import ClaimFeatures, SlotMode, claim_vector, evidence_rows
from verity.methods.toe.method import ToeMethod
from verity.methods.toe.tree import Node

STAGES = ("evalnet", "policy", "aggnet")
# §III-B: "the first N_warm = 8 claims" follow the heuristic.
WARMUP_CLAIMS = 8
# verity's choice: a fifth of the claims is held out to report the loss before and after.
HELD_OUT = 0.2
TARGETS = {Label.SUPPORTED: 1.0, Label.REFUTED: 0.0}  # Eq. 7's y_v; anything else is 0.5

MakeMethod = Callable[..., ToeMethod]
Progress = Callable[[str], None]


def done_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The rows already saved in a stage's samples file, by claim id."""
    if not path.is_file():
        return {}
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["id"]] = row
    return rows


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def claim_of(example: Example) -> Claim:
    """The example's claim; ToE does not train on articles."""
    if not isinstance(example.subject, Claim):
        raise BadInputError(f"ToE trains on claims; {example.id} is an article")
    return example.subject


def collect(
    path: Path,
    examples: Sequence[Example],
    sample: Callable[[int, Example], dict[str, Any] | None],
    progress: Progress,
) -> dict[str, dict[str, Any]]:
    """Run ``sample`` on each claim not yet in ``path``; every row, old and new."""
    rows = done_rows(path)
    for index, example in enumerate(examples):
        if example.id in rows:
            continue
        try:
            row = sample(index, example)
        except VerityError as exc:  # one unreadable claim does not end the run
            progress(f"{example.id}: skipped ({exc})")
            row = {"error": str(exc)[:300]}
        row = {"id": example.id, **(row or {})}
        _append(path, row)
        rows[example.id] = row
        progress(f"{len(rows)}/{len(examples)} {example.id}")
    return rows


def _split(ids: Sequence[str], seed: int) -> tuple[set[str], set[str]]:
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    cut = max(1, int(len(shuffled) * HELD_OUT)) if len(shuffled) > 1 else 0
    return set(shuffled[cut:]), set(shuffled[:cut])


def manifest_for(
    examples: Sequence[Example], dataset: str, seed: int, **extra: Any
) -> dict[str, Any]:
    """What a weights manifest says of the training data, plus the stage's own parts."""
    return {
        "train_ids": [f"{dataset}:{ex.id}" for ex in examples],
        "dataset": dataset,
        "seed": seed,
        **extra,
    }


def train_evalnet(
    make: MakeMethod,
    examples: Sequence[Example],
    out: Path,
    *,
    dataset: str,
    seed: int,
    epochs: int,
    progress: Progress,
) -> dict[str, Any]:
    """Judge-scored nodes from heuristic trees, then Eq. 6 on them."""
    method = make(evaluator="llm-judge", policy="heuristic", aggregation="rule")
    slots = method.config.evidence_slots

    def sample(_: int, example: Example) -> dict[str, Any]:
        grown = run_sync(method.grow(claim_of(example), CallLog()))
        nodes = [n for n in grown.tree.nodes if n.status == "evaluated"]
        return {"nodes": [_node_sample(n, slots) for n in nodes]}

    rows = collect(out / "evalnet-samples.jsonl", examples, sample, progress)
    nodes = [(cid, n) for cid, row in rows.items() for n in row.get("nodes", [])]
    if not nodes:
        raise BadInputError("no claim gave an evaluated node to train on")
    train_ids, held_ids = _split(sorted({cid for cid, _ in nodes}), seed)
    torch.manual_seed(seed)
    net = evalnet.EvalNet()
    train = _tensors([n for cid, n in nodes if cid in train_ids])
    held = _tensors([n for cid, n in nodes if cid in held_ids]) if held_ids else train
    before = evalnet.mean_loss(net, *held)
    losses = evalnet.fit(net, *train, epochs=epochs, seed=seed)
    after = evalnet.mean_loss(net, *held)
    figures = {
        "nodes": len(nodes),
        "held_out_loss_before": before,
        "held_out_loss_after": after,
        "train_loss_first_epoch": losses[0],
        "train_loss_last_epoch": losses[-1],
    }
    weights.save(
        net,
        out,
        "evalnet",
        manifest_for(
            examples,
            dataset,
            seed,
            hyperparameters=evalnet.HYPERPARAMETERS,
            epochs=epochs,
            evidence_slots=slots,
            figures=figures,
        ),
    )
    return figures


def _node_sample(node: Node, slots: SlotMode) -> dict[str, Any]:
    features = node.features or ClaimFeatures()
    return {
        "claim": claim_vector(features),
        "items": evidence_rows(node.episode.items, slots),
        "v": node.v_self,
        "r": node.r_self,
    }


def _tensors(nodes: Sequence[dict[str, Any]]) -> tuple[torch.Tensor, ...]:
    packed = [pack(n["items"]) for n in nodes]
    return (
        torch.tensor([n["claim"] for n in nodes], dtype=torch.float32),
        torch.stack([e for e, _ in packed]),
        torch.stack([m for _, m in packed]),
        torch.tensor([n["v"] for n in nodes], dtype=torch.float32),
        torch.tensor([n["r"] for n in nodes], dtype=torch.float32),
    )


def train_aggnet(
    make: MakeMethod,
    examples: Sequence[Example],
    out: Path,
    *,
    dataset: str,
    seed: int,
    epochs: int,
    progress: Progress,
) -> dict[str, Any]:
    """Trees grown with the trained evaluator and policy, then Eqs. 7-8 on them.

    y_v is the gold label (true 1, false 0, anything else 0.5); y_r is the LLM judge's
    reliability for the root's evidence, the same target source as Eq. 6 (spec 7).
    """
    method = make(aggregation="rule")

    def sample(_: int, example: Example) -> dict[str, Any]:
        grown = run_sync(method.grow(claim_of(example), CallLog(), judge_root=True))
        rows, _index = tree_rows(grown.tree, method.config.self_weight)
        judged = grown.root_judged
        return {
            "rows": [{"features": r.features, "parent": r.parent, "rule": r.rule} for r in rows],
            "y_v": TARGETS.get(example.label, 0.5),
            "y_r": judged.r if judged is not None else 0.0,
        }

    found = collect(out / "aggnet-samples.jsonl", examples, sample, progress)
    # The network applies to nodes with an evaluated child: a root alone teaches nothing.
    every = [_tree(row) for row in found.values() if row.get("rows")]
    trees = {cid: _tree(row) for cid, row in found.items() if len(row.get("rows", [])) > 1}
    if not trees:
        raise BadInputError("no claim gave a tree with an evaluated sub-claim to train on")
    train_ids, held_ids = _split(sorted(trees), seed)
    torch.manual_seed(seed)
    net = aggnet.AggNet()
    train = [t for cid, t in trees.items() if cid in train_ids]
    held = [t for cid, t in trees.items() if cid in held_ids] or train
    before = aggnet.mean_loss(net, held)
    losses = aggnet.fit(net, train, epochs=epochs, seed=seed)
    after = aggnet.mean_loss(net, held)
    figures = {
        "trees": len(every),
        "trees_with_children": len(trees),
        "held_out_loss_before": before,
        "held_out_loss_after": after,
        "train_loss_first_epoch": losses[0] if losses else None,
        "train_loss_last_epoch": losses[-1] if losses else None,
    }
    weights.save(
        net,
        out,
        "aggnet",
        manifest_for(
            examples,
            dataset,
            seed,
            hyperparameters=aggnet.HYPERPARAMETERS,
            epochs=epochs,
            figures=figures,
        ),
    )
    return figures


def _tree(row: dict[str, Any]) -> aggnet.TreeSample:
    rows = [
        aggnet.TreeRow(
            features=r["features"],
            parent=r["parent"],
            rule=tuple(r["rule"]) if r["rule"] is not None else None,
        )
        for r in row["rows"]
    ]
    return aggnet.TreeSample(rows=rows, y_v=row["y_v"], y_r=row["y_r"])
