"""All of ToE's training from one call: the three stages in order, resumable, with a manifest.

    figures = train_all(make_method, examples, out=Path("runs/toe"), dataset="liar-train",
                        seed=0, epochs=30, progress=print, about={"model": "openai:..."})

Runs the evaluation network, the policy and the aggregation network in the spec's order
(the paper gives none; each stage needs the ones before it), each resuming from its own
samples file in ``out``. After every finished stage ``OUT/train.json`` is rewritten: the
dataset, seed, claims and what the caller says of the run (``about``: the model, the
sources), each finished stage's figures, and the SHA-256 of each weights file, so that
the folder says what it holds and how it was made. A rerun with the same ``out`` asks the
model only for the claims not yet sampled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verity.bench.base import Example
from verity.errors import BadInputError
from verity.methods.toe import weights
from verity.methods.toe.train import (
    STAGES,
    MakeMethod,
    Progress,
    train_aggnet,
    train_evalnet,
)
from verity.methods.toe.train_policy import train_policy

RUN_MANIFEST = "train.json"


def train_all(
    make: MakeMethod,
    examples: Sequence[Example],
    out: Path,
    *,
    dataset: str,
    seed: int,
    epochs: int,
    progress: Progress,
    stages: Sequence[str] = STAGES,
    about: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run ``stages`` (all three by default) in order; each stage's figures, by stage."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise BadInputError(f"unknown ToE stage(s) {unknown}; the stages are {list(STAGES)}")
    ordered = [s for s in STAGES if s in stages]  # a later stage needs the earlier ones
    path = out / RUN_MANIFEST
    manifest = _read(path)
    manifest.update(
        {
            "dataset": dataset,
            "seed": seed,
            "epochs": epochs,
            "claims": len(examples),
            "train_ids": [f"{dataset}:{ex.id}" for ex in examples],
            **(about or {}),
        }
    )
    done: dict[str, dict[str, Any]] = {}
    for stage in ordered:
        progress(f"stage {stage}")
        if stage == "evalnet":
            figures = train_evalnet(
                make, examples, out, dataset=dataset, seed=seed, epochs=epochs, progress=progress
            )
        elif stage == "policy":
            figures = train_policy(
                make, examples, out, dataset=dataset, seed=seed, progress=progress
            )
        else:
            figures = train_aggnet(
                make, examples, out, dataset=dataset, seed=seed, epochs=epochs, progress=progress
            )
        done[stage] = figures
        stored = weights.read_manifest(out, stage)
        manifest.setdefault("stages", {})[stage] = {
            "weights": f"{stage}.pt",
            "sha256": stored.get("sha256"),
            "figures": figures,
        }
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    return done


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # rewritten below from what this run knows
    return data if isinstance(data, dict) else {}
