"""Self-reflective prompt optimisation (paper section 4.4), TextGrad-style, LLM frozen.

The training examples are shuffled once (seeded); each epoch runs the policy on the next
``batch`` of them, cycling, so that successive epochs see different claims and the
gradient prompt stays short. Every episode is critiqued, scored and stored in the
experience buffer. The critiques are turned into a textual gradient (what in the
instructions led to the errors), the policy prompt is rewritten along it, and the rewrite
is kept only if it scores better (balanced accuracy) on the validation examples. The best
prompt is saved after every epoch with its scores, its lineage and the ids it was trained
and validated on, so that evaluation can leave those out and a rerun can resume.

    result = optimize(make, train, val, labels, optimizer=model, critic=model,
                      epochs=2, out=Path("runs/wkgfc-opt"), max_steps=6, batch=10)
    result["prompt"], result["val_score"], result["lineage"]
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from verity.bench.base import Example
from verity.bench.metrics import compute_metrics
from verity.domain import Label, Verdict
from verity.errors import BadInputError, ModelOutputError, VerityError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Step
from verity.methods.wkgfc.buffer import ExperienceBuffer
from verity.methods.wkgfc.prompts import POLICY
from verity.methods.wkgfc.reflection import (
    CRITIQUE_FAILED,
    NO_VERDICT,
    critique,
    episode_record,
    reward,
)

# A critique is cut to this length in the gradient prompt, so a batch of ten stays well
# inside a 4,096-token context.
CRITIQUE_CHARS = 300


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
    lines = []
    for r in rows:
        text = r["critique"]
        if len(text) > CRITIQUE_CHARS:
            text = text[: CRITIQUE_CHARS - 3] + "..."
        lines.append(f"- reward {r['reward']:.2f}, error: {r['error_type']}; {text}")
    return "\n".join(lines) or "(no episodes)"


def epoch_batch(order: Sequence[Example], epoch: int, size: int) -> list[Example]:
    """The training examples of an epoch (from 1): the next ``size`` of ``order``, cycling.

    With ``order`` = [a, b, c] and ``size`` = 2, epochs 1, 2 and 3 take [a, b], [c, a], [b, c].
    """
    start = (epoch - 1) * size
    return [order[(start + i) % len(order)] for i in range(min(size, len(order)))]


def _run_episode(
    buffer: ExperienceBuffer,
    method: Verifier,
    ex: Example,
    *,
    epoch: int,
    pid: str,
    critic: ModelClient,
    max_steps: int,
) -> None:
    """Run the policy on one training example, critique the episode and store it."""
    gold = ex.label.value
    predicted: str | None = None
    score, episode = 0.0, {}
    try:
        verdict = method.verify(ex.subject)
    except VerityError as exc:
        error_type, text = NO_VERDICT, f"the policy gave no verdict: {exc}"
    else:
        predicted, episode = verdict.label.value, episode_record(verdict)
        score = reward(verdict, gold, max_steps)
        try:
            judged = critique(verdict, gold, critic, CallLog())
            error_type, text = judged.error_type, judged.critique
        except VerityError as exc:
            # An unreadable critique loses the diagnosis, not the episode or the run.
            error_type, text = CRITIQUE_FAILED, f"the critique could not be read: {exc}"
    buffer.add(
        epoch=epoch, prompt_id=pid, example_id=ex.id, claim=ex.subject.text, gold=gold,
        predicted=predicted, reward=score, error_type=error_type, critique=text,
        episode=episode,
    )  # fmt: skip


def _save(path: Path, result: dict[str, Any]) -> None:
    # Written beside and renamed, so a crash never leaves half a prompt file.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def _saved_run(path: Path, split: dict[str, Any]) -> dict[str, Any] | None:
    """The saved state of an earlier run on the same split, or None when there is none."""
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(f"cannot read {path} to resume from it: {exc}") from exc
    needed = {"prompt", "val_score", "initial_val_score", "lineage"}
    if not isinstance(saved, dict) or not needed <= saved.keys():
        raise BadInputError(f"{path} is not a policy file of verity optimize")
    differ = [key for key, value in split.items() if saved.get(key) != value]
    if differ:
        # Overwriting would lose that run's results; resuming would mix two splits. The
        # folder's experience buffer belongs to that run too, hence a new folder.
        raise BadInputError(
            f"{path} holds an optimisation with another {', '.join(differ)}; "
            "choose another output folder"
        )
    return saved


def _result(
    best: str, score: float, initial: float, lineage: list[dict[str, Any]], split: dict[str, Any]
) -> dict[str, Any]:
    return {
        "prompt": best,
        "prompt_id": prompt_id(best),
        "val_score": score,
        "initial_val_score": initial,
        "lineage": lineage,
        **split,
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
    batch: int = 10,
    seed: int = 0,
    dataset: str = "",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the optimisation; return (and save as ``out/policy.json``) the best prompt.

    ``epochs`` counts from the start of the run: when ``out/policy.json`` holds an earlier
    run on the same dataset, split, seed and batch, it resumes after its last epoch.
    """
    if batch < 1:
        raise BadInputError(f"batch must be at least 1, not {batch}")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "policy.json"
    split = {
        "dataset": dataset,
        "train_ids": [ex.id for ex in train],
        "val_ids": [ex.id for ex in val],
        "seed": seed,
        "batch": batch,
    }
    saved = _saved_run(path, split)
    say = progress or (lambda message: None)
    buffer = ExperienceBuffer(out / "experience.sqlite")
    try:
        lineage: list[dict[str, Any]]
        if saved is None:
            initial = evaluate(make(POLICY), val, labels)
            best, best_score = POLICY, initial
            lineage = [
                {"epoch": 0, "prompt_id": prompt_id(POLICY), "val_score": initial, "accepted": True}
            ]
            _save(path, _result(best, best_score, initial, lineage, split))
            say(f"initial prompt: validation balanced accuracy {initial:.3f}")
        else:
            best, best_score = saved["prompt"], saved["val_score"]
            initial, lineage = saved["initial_val_score"], saved["lineage"]
            say(f"resuming after epoch {lineage[-1]['epoch']}: best score {best_score:.3f}")
        order = random.Random(seed).sample(list(train), len(train))
        for epoch in range(lineage[-1]["epoch"] + 1, epochs + 1):
            # The policy is always the best prompt so far: a rewrite replaces it only if kept.
            method, pid = make(best), prompt_id(best)
            done = buffer.done(epoch, pid)
            for ex in epoch_batch(order, epoch, batch):
                if ex.id not in done:
                    _run_episode(
                        buffer, method, ex, epoch=epoch, pid=pid, critic=critic,
                        max_steps=max_steps,
                    )  # fmt: skip
            rows = buffer.critiques(epoch, pid)
            step: dict[str, Any] = {
                "epoch": epoch,
                "parent": pid,
                "train_reward": sum(r["reward"] for r in rows) / max(1, len(rows)),
            }
            try:
                critiques = _critiques_text(rows)
                gradient = GRADIENT.run(optimizer, prompt=best, critiques=critiques)
                candidate = REWRITE.run(optimizer, prompt=best, feedback=gradient.feedback)
                if not candidate.prompt.strip():
                    raise ModelOutputError("the rewrite is empty")
            except VerityError as exc:
                # A model too weak to write a gradient or a rewrite loses the epoch, not the run.
                lineage.append({**step, "failed": str(exc), "accepted": False})
                say(f"epoch {epoch}: no rewrite ({exc})")
            else:
                score = evaluate(make(candidate.prompt), val, labels)
                accepted = score > best_score
                lineage.append(
                    {
                        **step,
                        "prompt_id": prompt_id(candidate.prompt),
                        "gradient": gradient.feedback,
                        "val_score": score,
                        "accepted": accepted,
                    }
                )
                verdict_word = "kept" if accepted else "dropped"
                say(f"epoch {epoch}: rewrite scores {score:.3f} ({verdict_word})")
                if accepted:
                    best, best_score = candidate.prompt, score
            _save(path, _result(best, best_score, initial, lineage, split))
        return _result(best, best_score, initial, lineage, split)
    finally:
        buffer.close()
