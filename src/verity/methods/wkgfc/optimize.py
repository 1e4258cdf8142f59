"""Self-reflective prompt optimisation (paper section 4.4), TextGrad-style, LLM frozen.

    result = optimize(make, train, val, labels, optimizer=model, critic=model, epochs=20,
                      out=Path("runs/opt"), batch=10, datasets=["fever", "hover"])
    result["prompt"], result["val_score"], result["lineage"]

The policy prompt is the only thing trained; the model's weights never change. An epoch
is a full pass over the training examples (4.4: "20 epochs over 100 training samples'
trajectories"), shuffled anew each epoch (seed + epoch), in mini-batches of ``batch``.
For each mini-batch the policy runs every example with the current prompt, the critic
judges each episode, and the episode goes to the experience buffer, step by step with its
rewards and critiques (`verity.methods.wkgfc.reflection`, `buffer`). The batch's
episodes become a textual gradient (what in the instructions led to these outcomes) and
the prompt is rewritten along it; the next mini-batch runs the rewritten prompt.

At the end of an epoch its prompt is validated (balanced accuracy on the validation
examples) and kept if it beats the best so far; the final prompt is the best by
validation (4.4: "selected based on validation performance"). Every epoch starts from
the best prompt so far, so an epoch that made things worse is not built upon (verity's
choice). An epoch whose rewrites all failed ends with the prompt it started from, whose
score is known: it is not validated again.

``out/policy.json`` (the best prompt, its score, the lineage and the split) is written
after the initial validation and after every epoch. A rerun with the same split, seed,
batch size and weights resumes after the last finished epoch; an epoch cut short is
redone from its start, reusing the episodes and rewrites already in the buffer.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final, Protocol

from pydantic import BaseModel

from verity.bench.base import Example
from verity.bench.metrics import compute_metrics
from verity.domain import Label, Verdict
from verity.errors import BadInputError, ModelOutputError, VerityError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Step
from verity.methods.wkgfc.buffer import EpisodeRow, ExperienceBuffer, RewriteRow, StepRow
from verity.methods.wkgfc.context import fit_lines, free_tokens
from verity.methods.wkgfc.prompts import POLICY
from verity.methods.wkgfc.reflection import (
    CRITIQUE_FAILED,
    DEFAULT_WEIGHTS,
    NO_VERDICT,
    Critique,
    Weights,
    actions,
    critique,
    outcome_text,
    reward,
    step_rewards,
    step_text,
)

# verity's choice: the paper bounds neither the prompt nor the batch. A short prompt
# leaves a small model's context to the evidence; ten episodes make one gradient.
REWRITE_WORDS: Final = 200
BATCH: Final = 10


class Gradient(BaseModel):
    """A textual gradient: what in the instructions caused the outcomes, and the fix."""

    analysis: str
    feedback: str


class Rewrite(BaseModel):
    """The rewritten instructions."""

    prompt: str


GRADIENT = Step(
    name="wkgfc.gradient",
    instruction=(
        "You improve the instructions of a fact-checking agent that gathers evidence from "
        "a knowledge graph and the web, then decides. You get its episodes: each with "
        "the true label, its verdict, a reward, a reviewer's critique, and every step "
        "with what the agent knew, what it did, what came back, the step's reward and "
        "the reviewer's comment. Find which parts of the instructions led to low rewards "
        "(when to expand the graph, when to search, when to stop, how to weigh "
        "conflicting evidence) and say how they should change. Speak of behaviour in "
        "general, never of particular claims."
    ),
    template="Current instructions:\n{prompt}\n\nEpisodes:\n{episodes}",
    output=Gradient,
)

REWRITE = Step(
    name="wkgfc.rewrite",
    instruction=(
        "You rewrite an agent's instructions following feedback. Keep the actions "
        "expandKG, webSearch and verdict and what each does; stay under "
        f"{REWRITE_WORDS} words."
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


def epoch_batches(
    train: Sequence[Example], epoch: int, seed: int, size: int
) -> list[list[Example]]:
    """An epoch's mini-batches: every training example once, shuffled with seed + epoch.

    epoch_batches([a, b, c], epoch=1, seed=0, size=2)   # e.g. [[c, a], [b]]
    """
    order = random.Random(seed + epoch).sample(list(train), len(train))
    return [order[i : i + size] for i in range(0, len(order), size)]


def step_rows(
    verdict: Verdict, gold: str, judged: Critique | None, weights: Weights
) -> tuple[StepRow, ...]:
    """The episode's (s_t, a_t, o_t, r_t, critique_t), one per step.

    The state is what the policy had before acting, in brief: the facts and passages
    found so far and the steps taken.
    """
    steps = actions(verdict)
    rewards = step_rewards(verdict, gold, judged, weights)
    said = {s.step: s.critique for s in judged.steps} if judged else {}
    rows: list[StepRow] = []
    taken: list[str] = []
    facts = passages = 0
    for t, (action, r) in enumerate(zip(steps, rewards, strict=True), start=1):
        state = f"{facts} facts, {passages} passages; steps so far: {', '.join(taken) or 'none'}"
        did = step_text(action, verdict.label.value)
        if action.get("reason"):
            did += f" because: {action['reason']}"
        rows.append(
            StepRow(
                t=t,
                state=state,
                action=did,
                observation=outcome_text(action),
                reward=r,
                critique=said.get(t, ""),
            )
        )
        new = int(action.get("new", 0) or 0) if action.get("taken", True) else 0
        if action.get("action") in ("initKGRetrieval", "expandKG"):
            facts += new
        elif action.get("action") in ("webSearch", "givenEvidence"):
            passages += new
        taken.append(str(action.get("action")))
    return tuple(rows)


def run_episode(
    method: Verifier,
    ex: Example,
    *,
    epoch: int,
    pid: str,
    critic: ModelClient,
    weights: Weights,
) -> EpisodeRow:
    """Run the policy on one training example and critique the episode."""
    gold, claim = ex.label.value, ex.subject.text
    try:
        verdict = method.verify(ex.subject)
    except VerityError as exc:
        text = f"the policy gave no verdict: {exc}"
        failed = StepRow(t=1, state="start", action="none", observation=text, reward=0.0,
                         critique="")  # fmt: skip
        return EpisodeRow(epoch, pid, ex.id, claim, gold, None, 0.0, NO_VERDICT, text,
                          sufficient=False, steps=(failed,))  # fmt: skip
    judged: Critique | None
    error_type: str
    try:
        judged = critique(verdict, gold, critic, CallLog())
        error_type, text = judged.error_type, judged.critique
    except VerityError as exc:
        # An unreadable critique loses the diagnosis, not the episode or the run.
        judged, error_type, text = None, CRITIQUE_FAILED, f"the critique could not be read: {exc}"
    return EpisodeRow(
        epoch, pid, ex.id, claim, gold, verdict.label.value,
        reward(verdict, gold, judged, weights), error_type, text,
        sufficient=bool(judged and judged.sufficient),
        steps=step_rows(verdict, gold, judged, weights),
    )  # fmt: skip


def episode_text(number: int, row: EpisodeRow) -> str:
    """One episode as the gradient reads it: outcome, critique, then every step."""
    lines = [
        f"Episode {number}. Claim: {row.claim}",
        f"True label {row.gold}; verdict {row.predicted or 'none'}; reward {row.reward:.2f}; "
        f"error: {row.error_type}; evidence sufficient: {'yes' if row.sufficient else 'no'}",
        f"Critique: {row.critique}",
    ]
    for s in row.steps:
        comment = f" | critique: {s.critique}" if s.critique else ""
        lines.append(
            f"  step {s.t} | state: {s.state} | action: {s.action} | "
            f"observation: {s.observation} | reward {s.reward:+.2f}{comment}"
        )
    return "\n".join(lines)


def gradient_episodes(
    model: ModelClient, prompt: str, rows: Sequence[EpisodeRow]
) -> tuple[str, int]:
    """The episodes that fit the gradient prompt in ``model``'s context, and how many did not.

    Whole episodes are dropped from the end: half an episode would show steps without
    their outcome, or an outcome without the steps that led to it.
    """
    texts = [episode_text(i, r) for i, r in enumerate(rows, start=1)]
    room = free_tokens(model, GRADIENT, prompt=prompt, episodes="")
    shown = fit_lines(texts, room, model)
    return "\n".join(shown), len(texts) - len(shown)


def _rewrite(
    buffer: ExperienceBuffer,
    optimizer: ModelClient,
    current: str,
    rows: Sequence[EpisodeRow],
    *,
    epoch: int,
    index: int,
) -> tuple[str, dict[str, Any]]:
    """The prompt after one mini-batch's gradient and rewrite, and its lineage entry.

    A gradient or rewrite the model cannot give loses the update, not the run: the
    prompt stays as it was.
    """
    pid = prompt_id(current)
    step: dict[str, Any] = {"batch": index, "parent": pid, "episodes": len(rows)}
    done = buffer.rewrite(epoch, index, pid)
    if done is None:
        try:
            shown, left_out = gradient_episodes(optimizer, current, rows)
            if not shown:
                raise ModelOutputError("no episode fits the optimizer's context")
            gradient = GRADIENT.run(optimizer, prompt=current, episodes=shown)
            candidate = REWRITE.run(optimizer, prompt=current, feedback=gradient.feedback)
            if not candidate.prompt.strip():
                raise ModelOutputError("the rewrite is empty")
        except VerityError as exc:
            return current, {**step, "failed": str(exc)}
        done = RewriteRow(gradient.feedback, candidate.prompt.strip(), left_out)
        buffer.add_rewrite(epoch, index, pid, done)
    return done.prompt, {
        **step,
        "prompt_id": prompt_id(done.prompt),
        "gradient": done.gradient,
        "left_out": done.left_out,
    }


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
    batch: int = BATCH,
    seed: int = 0,
    weights: Weights = DEFAULT_WEIGHTS,
    datasets: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the optimisation; return (and save as ``out/policy.json``) the best prompt.

    Example ids must be unique across ``train`` and ``val`` (the CLI qualifies them with
    their dataset, "fever:123"); ``datasets`` names where they came from, for the record.
    ``epochs`` counts from the start of the run: when ``out/policy.json`` holds an
    earlier run with the same split, seed, batch and weights, it resumes after its last
    finished epoch.
    """
    if batch < 1:
        raise BadInputError(f"batch must be at least 1, not {batch}")
    ids = [ex.id for ex in [*train, *val]]
    if len(set(ids)) != len(ids):
        raise BadInputError("training and validation example ids must be unique")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "policy.json"
    split = {
        "datasets": list(datasets),
        "train_ids": [ex.id for ex in train],
        "val_ids": [ex.id for ex in val],
        "seed": seed,
        "batch": batch,
        "weights": asdict(weights),
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
        for epoch in range(lineage[-1]["epoch"] + 1, epochs + 1):
            current, updates, rewards = best, [], []
            for index, examples in enumerate(epoch_batches(train, epoch, seed, batch), start=1):
                pid = prompt_id(current)
                method, done = make(current), buffer.done(epoch, pid)
                for ex in examples:
                    if ex.id not in done:
                        buffer.add(
                            run_episode(method, ex, epoch=epoch, pid=pid, critic=critic,
                                        weights=weights)
                        )  # fmt: skip
                rows = buffer.episodes(epoch, pid, [ex.id for ex in examples])
                rewards += [r.reward for r in rows]
                current, update = _rewrite(
                    buffer, optimizer, current, rows, epoch=epoch, index=index
                )
                updates.append(update)
                say(f"epoch {epoch}, batch {index}: " + update.get("failed", "prompt rewritten"))
            step: dict[str, Any] = {
                "epoch": epoch,
                "start": prompt_id(best),
                "prompt_id": prompt_id(current),
                "train_reward": sum(rewards) / max(1, len(rewards)),
                "updates": updates,
            }
            if current == best:
                lineage.append({**step, "accepted": False, "unchanged": True})
                say(f"epoch {epoch}: the prompt did not change")
            else:
                score = evaluate(make(current), val, labels)
                accepted = score > best_score  # a tie keeps the earlier, shorter-trained prompt
                lineage.append({**step, "val_score": score, "accepted": accepted})
                say(f"epoch {epoch}: {score:.3f} ({'kept' if accepted else 'dropped'})")
                if accepted:
                    best, best_score = current, score
            _save(path, _result(best, best_score, initial, lineage, split))
        return _result(best, best_score, initial, lineage, split)
    finally:
        buffer.close()
