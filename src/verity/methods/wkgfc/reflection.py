"""Self-reflection after a training episode (paper section 4.4): critique and reward.

    judged = critique(verdict, "REFUTED", model, CallLog())   # the critic, once gold is known
    score(verdict, "REFUTED", judged).total(Weights())        # the composite reward, in [0, 1]
    step_rewards(verdict, "REFUTED", judged, Weights())       # r_t of every step; they sum to it

Once the gold label is known, the critic (role ``critic``) judges the whole episode (a
critique and the paper's error types), whether the information the episode retrieved
settles the claim either way (the paper's evidence sufficiency: every graph fact and
passage retrieved, cited by the verdict or not), and every step in turn, flagging the
retrievals that were unnecessary or redundant.

The composite reward follows the terms the paper names (4.4: correctness, sufficiency,
efficiency; the introduction adds citation quality); how they are measured and weighted
is verity's choice:

    reward = 0.6 correctness + 0.15 sufficiency + 0.1 citation + 0.15 efficiency

- correctness: 1 when the verdict matches the gold label, else 0;
- sufficiency: 1 when the critic judged the retrieved evidence sufficient to support or
  refute the claim, else 0 (0 when the critique could not be read); what the verdict
  cited is the citation term's business, not this one's;
- citation: the share of the verdict's cited fact and passage numbers that point at
  evidence that exists (``trace.citations``: valid / cited), 0 when nothing is cited;
- efficiency: 1 - redundant / choices. The choices are the policy's retrieval actions
  (``expandKG``, ``webSearch`` and ``invalid``, a step without a valid action); the first
  observation and the verdict are not choices. A choice is redundant when it brought
  nothing new (not carried out, nothing new found, or invalid; a search finds something
  new only in passages no earlier search kept) or when the critic flagged it. With no
  choices, efficiency is 1.

Correctness dominates: the other terms together weigh 0.4 < 0.6, so a wrong episode never
outscores a right one.

Per-step rewards r_t (the buffer's) sum to the episode's reward: each redundant choice
costs ``efficiency / choices``, the verdict step earns the rest (the correctness,
sufficiency and citation terms and the whole efficiency weight), other steps earn 0.

Besides the critic's error types, the experience buffer holds two that only the
optimiser records: ``NO_VERDICT`` (the episode ended without a verdict) and
``CRITIQUE_FAILED`` (the critic's answer could not be read; the reward still counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Final, Literal

from pydantic import BaseModel

from verity.domain import Verdict
from verity.errors import BadInputError
from verity.kg.base import Triple
from verity.kg.facts import fact_text
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Step
from verity.methods.wkgfc.context import fit_lines, free_tokens

ErrorType = Literal[
    "none",
    "missing relation",
    "premature verdict",
    "redundant retrieval",
    "mishandled contradiction",
]

# Kept out of ErrorType so that the critic is never offered them: they describe a failure
# of the run, not a behaviour of the policy.
NO_VERDICT: Final = "no verdict"
CRITIQUE_FAILED: Final = "critique failed"

# The first observation answers a_0 (section 4.1): the environment's, not a choice.
FIRST_OBSERVATIONS: Final = ("initKGRetrieval", "givenEvidence")
# The policy's retrieval choices, the actions efficiency counts (4.4: "unnecessary or
# redundant retrieval actions"); "invalid" is a step the policy wasted on no valid action.
CHOICES: Final = ("expandKG", "webSearch", "invalid")

# verity's choices: how much of each retrieved text and of the justification the critic
# reads; enough to judge sufficiency, short enough for a small model's context. The list
# of retrieved items is cut only to fit the critic's context, cited items kept longest.
EVIDENCE_CHARS: Final = 300
JUSTIFICATION_CHARS: Final = 800


class StepCritique(BaseModel):
    """The critic's word on one step, by its number as shown."""

    step: int
    critique: str
    redundant: bool


class Critique(BaseModel):
    """The critic's diagnosis of one episode."""

    critique: str
    error_type: ErrorType
    sufficient: bool
    steps: list[StepCritique]


CRITIC = Step(
    name="wkgfc.critique",
    instruction=(
        "You review a fact-checking agent's episode after the true answer is known. Say "
        "what it did well or badly and name the main error: 'missing relation' (the "
        "deciding fact was never retrieved), 'premature verdict' (it decided before the "
        "evidence sufficed), 'redundant retrieval' (it fetched what it already had or did "
        "not need), 'mishandled contradiction' (it resolved conflicting graph and web "
        "evidence wrongly), or 'none'. Say whether the information the episode retrieved "
        "(all of it, whether the verdict cited it or not) is enough to support or refute "
        "the claim (sufficient). Then comment on each numbered step and mark a retrieval "
        "step redundant when it was unnecessary or repeated one before it."
    ),
    template=(
        "Claim: {claim}\nTrue label: {gold}\nAgent's verdict: {predicted}\n\nSteps:\n{steps}"
        "\n\nEvidence retrieved (items the verdict cited are marked):\n{evidence}"
        "\n\nJustification given: {justification}"
    ),
    output=Critique,
    trusted=("gold", "predicted"),
)


@dataclass(frozen=True)
class Weights:
    """Weights of the composite reward: verity's choice (the paper names the terms only).

    Weights(correctness=0.7, sufficiency=0.1, citation=0.1, efficiency=0.1)
    Weights.parse("0.6,0.15,0.1,0.15")   # the defaults, in field order
    """

    correctness: float = 0.6
    sufficiency: float = 0.15
    citation: float = 0.1
    efficiency: float = 0.15

    def __post_init__(self) -> None:
        values = [getattr(self, f.name) for f in fields(self)]
        if any(not math.isfinite(v) or v < 0 for v in values):
            raise BadInputError(f"reward weights must be non-negative numbers, not {values}")
        if not math.isclose(sum(values), 1.0, abs_tol=1e-9):
            raise BadInputError(f"reward weights must sum to 1, not {sum(values):g} ({values})")

    @classmethod
    def parse(cls, text: str) -> Weights:
        """Four comma-separated numbers: correctness, sufficiency, citation, efficiency."""
        parts = [p.strip() for p in text.split(",")]
        names = ", ".join(f.name for f in fields(cls))
        if len(parts) != len(fields(cls)):
            raise BadInputError(f"--weights takes four numbers ({names}), not {text!r}")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise BadInputError(f"--weights takes four numbers ({names}), not {text!r}") from None
        return cls(*values)


# The reward's weights when none are given (verity's choice, see Weights).
DEFAULT_WEIGHTS: Final = Weights()


def actions(verdict: Verdict) -> list[dict[str, Any]]:
    """The episode's steps in order, ending with the verdict (added if the trace lacks it)."""
    steps = [dict(a) for a in verdict.trace.model_dump().get("actions", [])]
    if not steps or steps[-1].get("action") != "verdict":
        steps.append({"action": "verdict", "reason": "", "summary": "", "taken": True, "new": 0})
    return steps


def choice_steps(steps: list[dict[str, Any]]) -> list[int]:
    """Numbers (from 1, as the critic sees them) of the policy's retrieval choices."""
    return [t for t, a in enumerate(steps, start=1) if a.get("action") in CHOICES]


def redundant_steps(steps: list[dict[str, Any]], judged: Critique | None) -> list[int]:
    """The choices that brought nothing new or that the critic flagged as redundant."""
    flagged = {s.step for s in judged.steps if s.redundant} if judged else set()
    return [
        t
        for t in choice_steps(steps)
        if t in flagged
        or steps[t - 1].get("action") == "invalid"
        or not steps[t - 1].get("taken", True)
        or steps[t - 1].get("new", 1) == 0
    ]


@dataclass(frozen=True)
class Score:
    """The reward's four terms for one episode, each in [0, 1]."""

    correctness: float
    sufficiency: float
    citation: float
    efficiency: float
    choices: int
    redundant: tuple[int, ...]  # step numbers

    def total(self, weights: Weights) -> float:
        """The composite reward."""
        return (
            weights.correctness * self.correctness
            + weights.sufficiency * self.sufficiency
            + weights.citation * self.citation
            + weights.efficiency * self.efficiency
        )


def score(verdict: Verdict, gold: str, judged: Critique | None) -> Score:
    """The reward's terms; ``judged`` is None when the critique failed."""
    steps = actions(verdict)
    citations = verdict.trace.model_dump().get("citations") or {}
    cited, valid = int(citations.get("cited", 0)), int(citations.get("valid", 0))
    choices = len(choice_steps(steps))
    redundant = redundant_steps(steps, judged)
    return Score(
        correctness=1.0 if verdict.label.value == gold else 0.0,
        sufficiency=1.0 if judged is not None and judged.sufficient else 0.0,
        citation=min(valid, cited) / cited if cited > 0 else 0.0,
        efficiency=1.0 - len(redundant) / choices if choices else 1.0,
        choices=choices,
        redundant=tuple(redundant),
    )


def reward(
    verdict: Verdict, gold: str, judged: Critique | None, weights: Weights = DEFAULT_WEIGHTS
) -> float:
    """The composite reward of one episode (see the module documentation)."""
    return score(verdict, gold, judged).total(weights)


def step_rewards(
    verdict: Verdict, gold: str, judged: Critique | None, weights: Weights = DEFAULT_WEIGHTS
) -> list[float]:
    """r_t for every step of `actions`: they sum to `reward`.

    A redundant choice costs its share of the efficiency weight; the verdict earns the
    rest, so the reward of the whole episode is paid where the episode ends.
    """
    steps = actions(verdict)
    terms = score(verdict, gold, judged)
    rewards = [0.0] * len(steps)
    for t in terms.redundant:
        rewards[t - 1] = -weights.efficiency / terms.choices
    rewards[-1] = (
        weights.correctness * terms.correctness
        + weights.sufficiency * terms.sufficiency
        + weights.citation * terms.citation
        + weights.efficiency
    )
    return rewards


def step_text(action: dict[str, Any], label: str = "") -> str:
    """One step as an action call: ``webSearch("query")``, ``expandKG(Q1, Q2)``, ``verdict``."""
    name = str(action.get("action", "?"))
    if action.get("query"):
        return f"{name}({str(action['query'])!r})"
    if action.get("entities"):
        return f"{name}({', '.join(str(e) for e in action['entities'])})"
    if name == "verdict" and label:
        return f"verdict({label})"
    return name


def outcome_text(action: dict[str, Any]) -> str:
    """What a step observed, with what made it bring nothing."""
    text = str(action.get("summary", "")) or "(no summary)"
    if action.get("action") == "invalid":
        return f"{text} (wasted step)"
    if not action.get("taken", True):
        return f"{text} (not carried out)"
    if action.get("action") in CHOICES and action.get("new", 1) == 0:
        return f"{text} (nothing new)"
    return text


def steps_text(verdict: Verdict) -> str:
    """The episode's numbered steps as the critic reads them."""
    lines = [
        f"{t}. {step_text(a, verdict.label.value)}: {outcome_text(a)}; "
        f"reason: {a.get('reason', '')}"
        for t, a in enumerate(actions(verdict), start=1)
    ]
    return "\n".join(lines)


def _cut(text: str) -> str:
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 3] + "..."


def retrieved_lines(verdict: Verdict) -> list[str]:
    """Every item the episode retrieved, once, each cut to `EVIDENCE_CHARS`.

    The verdict's citations come first, marked, then the graph facts (as the trace holds
    them) and the passages (as the prompts showed them) it did not cite, in the order
    found. Sufficiency (4.4) is about what was retrieved, so an uncited fact counts.
    """
    trace = verdict.trace.model_dump()
    cited = {handle for e in verdict.evidence for handle in (e.id, e.ref) if handle}
    lines = [f"({e.source}, cited) {_cut(e.text)}" for e in verdict.evidence]
    for f in (trace.get("subgraph") or {}).get("facts", []):
        if f"{f['subject']}|{f['pid']}|{f['object']}" in cited:
            continue
        fact = Triple(
            f["subject"], f.get("subject_label"), f["pid"], f.get("property_label"),
            f["object"], f.get("object_label"), f.get("object_kind", "entity"),
        )  # fmt: skip
        lines.append(f"(graph) {_cut(fact_text(fact))}")
    for result in trace.get("web") or []:
        for kept in result.get("kept", []):
            ref = kept.get("ref")
            if ref in cited:
                continue
            cited.add(ref)  # each passage once, however many searches kept it
            text = kept.get("text") or kept.get("title") or ""
            lines.append(f"({kept.get('source', 'web')}) {_cut(text)}")
    return [f"[{i}] {line}" for i, line in enumerate(lines, start=1)]


def critique(verdict: Verdict, gold: str, model: ModelClient, log: CallLog) -> Critique:
    """The critic's view of an episode."""
    inputs: dict[str, Any] = {
        "claim": verdict.subject.text,
        "gold": gold,
        "predicted": verdict.label.value,
        "steps": steps_text(verdict),
        "justification": verdict.explanation[:JUSTIFICATION_CHARS],
    }
    lines = retrieved_lines(verdict)
    shown = fit_lines(lines, free_tokens(model, CRITIC, evidence="", **inputs), model)
    evidence = "\n".join(shown) or "(nothing retrieved)"
    if len(shown) < len(lines):
        evidence += f"\n({len(lines) - len(shown)} more left out to fit the context)"
    return CRITIC.run(model, log=log, evidence=evidence, **inputs)
