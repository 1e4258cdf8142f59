"""The retrieval agent's step reward, Eq. 5 with Table I's weights.

    r_t = w_r·Δrel_t + w_v·|Δver_t| + w_e·min(n_new, 4)·δ_e + b_t − δ_step

    step_reward(Belief(0.5, 0.5), Belief(0.3, 0.7), new_items=3, authoritative=True,
                first_high=False)    # 0.2 + 0.1 + 0.15 + 0.1 - 0.01 = 0.54

Δrel and Δver are the change in the node's reliability and veracity after the step's
evidence is scored. The paper leaves δ_e and the bonus conditions undefined; verity reads
δ_e as 1, pays b_auth when the step brings an authoritative document and b_rel once, at
the first step whose reliability reaches τ_h (docs/toe.md). Stopping earns nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Belief:
    """A node's (veracity, reliability) as the evaluator scores its evidence so far."""

    v: float
    r: float


@dataclass(frozen=True)
class RewardWeights:
    """Table I's reward settings."""

    w_r: float = 1.0  # reliability gain weight (Tab. I)
    w_v: float = 0.5  # veracity shift weight (Tab. I)
    w_e: float = 0.05  # new-evidence weight (Tab. I)
    step_cost: float = 0.01  # δ_step (Tab. I)
    tau_h: float = 0.8  # high-reliability threshold τ_h (Tab. I)
    b_auth: float = 0.1  # authoritative-source bonus (Tab. I)
    b_rel: float = 0.2  # high-reliability bonus (Tab. I)
    # Eq. 5 caps the evidence term at 4 new items; δ_e is undefined, read as 1.
    new_cap: int = 4
    delta_e: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """The weights, for manifests."""
        return asdict(self)


def step_reward(
    before: Belief,
    after: Belief,
    *,
    new_items: int,
    authoritative: bool,
    first_high: bool,
    weights: RewardWeights | None = None,
) -> float:
    """Eq. 5 for one search step; ``first_high``: r reaches τ_h for the first time here."""
    weights = weights or RewardWeights()
    bonus = (weights.b_auth if authoritative else 0.0) + (weights.b_rel if first_high else 0.0)
    return (
        weights.w_r * (after.r - before.r)
        + weights.w_v * abs(after.v - before.v)
        + weights.w_e * min(new_items, weights.new_cap) * weights.delta_e
        + bonus
        - weights.step_cost
    )
