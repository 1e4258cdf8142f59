"""Self-reflective prompt optimisation (paper section 4.4), TextGrad-style, LLM frozen.

Each epoch runs the policy on the training examples; every episode is critiqued, scored
and stored in the experience buffer. The critiques are turned into a textual gradient
(what in the instructions led to the errors), the policy prompt is rewritten along it,
and the rewrite is kept only if it scores better (balanced accuracy) on the validation
examples. The best prompt is saved with its scores, its lineage and the ids it was
trained and validated on, so that evaluation can leave those out.

    result = optimize(make, train, val, labels, optimizer=model, critic=model,
                      epochs=2, out=Path("runs/wkgfc-opt"), max_steps=6)
    result["prompt"], result["val_score"], result["lineage"]
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from verity.bench.base import Example
from verity.bench.metrics import compute_metrics
from verity.domain import Label, Verdict
from verity.errors import VerityError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Step
from verity.methods.wkgfc.buffer import ExperienceBuffer
from verity.methods.wkgfc.prompts import POLICY
from verity.methods.wkgfc.reflection import critique, episode_record, reward


class Gradient(BaseModel):
    """A textual gradient: what in the instructions caused the errors, and the fix."""

    analysis: str
    feedback: str


class Rewrite(BaseModel):
    """The rewritten instructions."""

    prompt: str


GRADIENT = Step(
    name="wkgfc.gradient",
    instruction=(
        "You improve the instructions of a fact-checking agent. From critiques of its "
        "episodes, find what in the instructions led to the errors and say how they should "
        "change. Speak of behaviour in general, never of particular claims."
    ),
    template="Current instructions:\n{prompt}\n\nEpisodes:\n{critiques}",
    output=Gradient,
)

REWRITE = Step(
    name="wkgfc.rewrite",
    instruction=(
        "You rewrite an agent's instructions following feedback. Keep the actions "
        "expandKG, webSearch and verdict and what each does; stay under 200 words."
    ),
    template="Current instructions:\n{prompt}\n\nFeedback:\n{feedback}",
    output=Rewrite,
)


class Verifier(Protocol):
    """What the optimiser needs of the method: a verdict for a subject."""

    def verify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        """Check a claim."""
        ...


def prompt_id(prompt: str) -> str:
    """A short stable id of a prompt text."""
    return hashlib.sha256(prompt.encode()).hexdigest()[:12]


def evaluate(method: Verifier, examples: Sequence[Example], labels: Sequence[Label]) -> float:
    """Balanced accuracy of the method on the examples; a failed example counts as wrong."""
    preds: list[Label | None] = []
    for ex in examples:
        try:
            preds.append(method.verify(ex.subject).label)
        except VerityError:
            preds.append(None)
    return compute_metrics(
        [ex.label for ex in examples], preds, labels, bootstrap=0
    ).balanced_accuracy


def _critiques_text(rows: Sequence[dict[str, Any]]) -> str:
    return (
        "\n".join(
            f"- reward {r['reward']:.2f}, error: {r['error_type']}; {r['critique']}" for r in rows
        )
        or "(no episodes)"
    )


def _save(path: Path, result: dict[str, Any]) -> None:
    # Written beside and renamed, so a crash never leaves half a prompt file.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def _result(
    best: str,
    score: float,
    initial: float,
    lineage: list[dict[str, Any]],
    dataset: str,
    train: Sequence[Example],
    val: Sequence[Example],
) -> dict[str, Any]:
    return {
        "prompt": best,
        "prompt_id": prompt_id(best),
        "val_score": score,
        "initial_val_score": initial,
        "lineage": lineage,
        "dataset": dataset,
        "train_ids": [ex.id for ex in train],
        "val_ids": [ex.id for ex in val],
    }


def optimize(
    make: Callable[[str], Verifier],
    train: Sequence[Example],
    val: Sequence[Example],
    labels: Sequence[Label],
    *,
    optimizer: ModelClient,
    critic: ModelClient,
    epochs: int,
    out: Path,
    max_steps: int,
    dataset: str = "",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the optimisation; return (and save as ``out/policy.json``) the best prompt."""
    out.mkdir(parents=True, exist_ok=True)
    buffer = ExperienceBuffer(out / "experience.sqlite")
    say = progress or (lambda message: None)
    try:
        current = POLICY
        initial = evaluate(make(current), val, labels)
        best, best_score = current, initial
        lineage: list[dict[str, Any]] = [
            {"epoch": 0, "prompt_id": prompt_id(current), "val_score": initial, "accepted": True}
        ]
        say(f"initial prompt: validation balanced accuracy {initial:.3f}")
        for epoch in range(1, epochs + 1):
            method, pid = make(current), prompt_id(current)
            done = buffer.done(epoch, pid)
            for ex in train:
                if ex.id in done:
                    continue
                log = CallLog()
                try:
                    verdict = method.verify(ex.subject)
                except VerityError as exc:
                    buffer.add(
                        epoch=epoch, prompt_id=pid, example_id=ex.id, claim=ex.subject.text,
                        gold=ex.label.value, predicted=None, reward=0.0, error_type="none",
                        critique=f"no verdict: {exc}", episode={},
                    )  # fmt: skip
                    continue
                judged = critique(verdict, ex.label.value, critic, log)
                buffer.add(
                    epoch=epoch, prompt_id=pid, example_id=ex.id, claim=ex.subject.text,
                    gold=ex.label.value, predicted=verdict.label.value,
                    reward=reward(verdict, ex.label.value, max_steps),
                    error_type=judged.error_type, critique=judged.critique,
                    episode=episode_record(verdict),
                )  # fmt: skip
            rows = buffer.critiques(epoch, pid)
            gradient = GRADIENT.run(optimizer, prompt=current, critiques=_critiques_text(rows))
            candidate = REWRITE.run(optimizer, prompt=current, feedback=gradient.feedback).prompt
            score = evaluate(make(candidate), val, labels)
            accepted = score > best_score
            lineage.append(
                {
                    "epoch": epoch,
                    "prompt_id": prompt_id(candidate),
                    "parent": pid,
                    "train_reward": sum(r["reward"] for r in rows) / max(1, len(rows)),
                    "gradient": gradient.feedback,
                    "val_score": score,
                    "accepted": accepted,
                }
            )
            say(f"epoch {epoch}: rewrite scores {score:.3f} ({'kept' if accepted else 'dropped'})")
            if accepted:
                best, best_score, current = candidate, score, candidate
            _save(
                out / "policy.json",
                _result(best, best_score, initial, lineage, dataset, train, val),
            )
        result = _result(best, best_score, initial, lineage, dataset, train, val)
        _save(out / "policy.json", result)
        return result
    finally:
        buffer.close()
