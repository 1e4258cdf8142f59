"""What a run scored per method: the records the report, its plots and the runner share.

    result = MethodResult(name="local", metrics=metrics, usage_per_claim={"llm_calls": 1.0})

Kept apart from `verity.bench.report` so that the modules the report draws on (its
plots, its comparisons) can name a method's result without importing the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verity.bench.heatmap import ActionSummary
from verity.bench.metrics import Metrics, Outcome, usage_per_claim
from verity.domain import Usage
from verity.errors import BadInputError

__all__ = ["GroundingScore", "GroupScore", "MethodResult"]


@dataclass(frozen=True)
class GroupScore:
    """One method's accuracy on a subset, and how often it cited a poisoned passage there.

    ``cites_poison`` is the share of the subset's verdicts whose evidence includes an
    injected passage, counted over the verdicts that could cite one (the method met the
    passages through its sources); None where none could. ``poison_in_text`` counts the
    verdicts whose method got the passages in its input text instead.
    """

    n: int
    accuracy: float
    cites_poison: float | None = None
    poison_in_text: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "cites_poison": self.cites_poison,
            "poison_in_text": self.poison_in_text,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupScore:
        """Rebuild a group score from `to_dict` output."""
        share = data.get("cites_poison")
        return cls(
            n=int(data["n"]),
            accuracy=float(data["accuracy"]),
            cites_poison=float(share) if share is not None else None,
            poison_in_text=int(data.get("poison_in_text", 0)),
        )


@dataclass(frozen=True)
class GroundingScore:
    """How far one method's explanations rest on their evidence (`verity.grounding`).

    ``grounded``: the mean grounded share over the verdicts that have one; ``contradicts_label``:
    the share of the checked verdicts whose explanation argues against their label.
    ``checked`` counts verdicts whose check ran, ``errors`` those whose checker failed;
    ``usage_per_verdict`` is the checker's own, apart from the method's.

        GroundingScore.of([{"grounded_share": 0.5, "consistent_with_label": False}])
    """

    checked: int
    errors: int
    grounded: float | None
    contradicts_label: float | None
    usage_per_verdict: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, summaries: Sequence[Mapping[str, Any]]) -> GroundingScore | None:
        """The score of stored grounding summaries; None when no verdict was grounded."""
        if not summaries:
            return None
        ran = [s for s in summaries if not s.get("error")]
        shares = [float(s["grounded_share"]) for s in ran if s.get("grounded_share") is not None]
        against = sum(s.get("consistent_with_label") is False for s in ran)
        return cls(
            checked=len(ran),
            errors=len(summaries) - len(ran),
            grounded=sum(shares) / len(shares) if shares else None,
            contradicts_label=against / len(ran) if ran else None,
            usage_per_verdict=usage_per_claim([Usage(**s.get("usage", {})) for s in summaries]),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {
            "checked": self.checked,
            "errors": self.errors,
            "grounded": self.grounded,
            "contradicts_label": self.contradicts_label,
            "usage_per_verdict": dict(self.usage_per_verdict),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroundingScore:
        """Rebuild a score from `to_dict` output."""
        grounded, against = data.get("grounded"), data.get("contradicts_label")
        return cls(
            checked=int(data["checked"]),
            errors=int(data["errors"]),
            grounded=float(grounded) if grounded is not None else None,
            contradicts_label=float(against) if against is not None else None,
            usage_per_verdict={k: float(v) for k, v in data.get("usage_per_verdict", {}).items()},
        )


@dataclass(frozen=True)
class MethodResult:
    """One method's scores and cost on a run.

    ``usage_per_claim`` is `verity.bench.metrics.usage_per_claim` of its examples;
    ``extra`` holds means of numbers only this method has (LoCal's iterations per claim);
    ``examples`` holds its outcome on each example (id, gold, prediction, confidence),
    which the paired tests and calibration read; empty where they were not kept.

        MethodResult(name="direct", metrics=metrics, usage_per_claim={"llm_calls": 1.0})
    """

    name: str
    metrics: Metrics
    usage_per_claim: Mapping[str, float]
    extra: Mapping[str, float] = field(default_factory=dict)
    # Subsets of the dataset (AdvFact's two attacks): n, accuracy and, where the subset
    # was poisoned, the share of verdicts citing a poisoned passage.
    groups: Mapping[str, GroupScore] = field(default_factory=dict)
    # ToE's search actions per claim category (its Fig. 5), where the rows counted them.
    actions: ActionSummary | None = None
    examples: tuple[Outcome, ...] = ()
    # Where the run checked explanations (`verity.bench.runner.BenchConfig.grounding`).
    grounding: GroundingScore | None = None

    def __post_init__(self) -> None:
        # report.json is strict JSON: NaN and infinity have no place in it.
        for part, values in (("usage_per_claim", self.usage_per_claim), ("extra", self.extra)):
            for key, value in values.items():
                if not math.isfinite(value):
                    raise BadInputError(f"{self.name}: {part}[{key!r}] is {value}, not a number")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values, as stored under ``methods.NAME`` in ``report.json``."""
        out: dict[str, Any] = {
            "metrics": self.metrics.to_dict(),
            "usage_per_claim": dict(self.usage_per_claim),
            "extra": dict(self.extra),
            "groups": {name: group.to_dict() for name, group in self.groups.items()},
        }
        if self.actions is not None:
            out["actions"] = self.actions.to_dict()
        if self.examples:
            out["examples"] = [outcome.to_dict() for outcome in self.examples]
        if self.grounding is not None:
            out["grounding"] = self.grounding.to_dict()
        return out

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> MethodResult:
        """Rebuild a result from `to_dict` output."""
        return cls(
            name=name,
            metrics=Metrics.from_dict(data["metrics"]),
            usage_per_claim={k: float(v) for k, v in data["usage_per_claim"].items()},
            extra={k: float(v) for k, v in data.get("extra", {}).items()},
            groups={k: GroupScore.from_dict(v) for k, v in data.get("groups", {}).items()},
            actions=ActionSummary.from_dict(data["actions"]) if data.get("actions") else None,
            examples=tuple(Outcome.from_dict(e) for e in data.get("examples", ())),
            grounding=GroundingScore.from_dict(found) if (found := data.get("grounding")) else None,
        )
