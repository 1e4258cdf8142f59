"""ToE's rule-based aggregation (paper §III-D): a node's scores from its evaluated children.

    children = [Scored(w=0.6, v=0.2, r=0.9), Scored(w=0.4, v=0.1, r=0.8)]
    rule_aggregate(children, children=2, own=(0.5, 0.3))     # (0.16279..., 0.77574...)
    rule_parts(children, children=2, own=(0.5, 0.3)).kappa   # 0.90202...

The paper uses the rule "as an interpretable fallback and a source of soft supervision"
for the aggregation network (§III-D, Eq. 8). Its words: veracity is "a reliability- and
importance-weighted average of child veracity scores", and reliability is "adjusted by
the number of available children and the consistency of their veracity estimates". The
formula itself is not given; this module follows the specification's proposal, with C
the evaluated children and w their importance weights:

- v = Σ w r v / Σ w r
- r̄ = Σ w r / Σ w
- κ = max(0, 1 - 2·sd_w(v)), sd_w the importance-weighted *population* standard
  deviation around the importance-weighted mean Σ w v / Σ w (with every v in [0, 1],
  sd_w is at most 0.5, so κ reaches 0 only for an even split between 0 and 1 and the
  clip guards rounding)
- η = |C| / |children| (coverage)
- r = r̄·κ·η

Children enter with their aggregated scores (a leaf's aggregate is its self score): the
caller passes them so. Choices the paper leaves open, decided here:

- No evaluated child (a leaf, or an expanded node whose children are all pending): the
  node keeps its own scores.
- ``self_weight`` > 0 lets the node's own self score join the pool as one more child
  with that importance weight, in v, r̄ and κ. It does not count for coverage: η asks
  how much of the decomposition has been examined, and the node's own score is no part
  of it. The default 0 is the literal reading (own score excluded).
- Every child weight 0: there is no importance to weigh by, so the children weigh
  equally.
- Σ w r = 0 (no pooled score has any reliability): v keeps the node's own veracity, the
  limit of a vanishing self weight, and r = 0 since r̄ = 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from verity.errors import BadInputError


def _unit(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise BadInputError(f"{name} must be a number in [0, 1], got {value!r}")
    return value


@dataclass(frozen=True)
class Scored:
    """One evaluated child: importance weight ``w``, veracity ``v``, reliability ``r``."""

    w: float
    v: float
    r: float

    def __post_init__(self) -> None:
        w = float(self.w)
        if not math.isfinite(w) or w < 0.0:
            raise BadInputError(f"an importance weight must be finite and >= 0, got {w!r}")
        _unit("a veracity score", self.v)
        _unit("a reliability score", self.r)


@dataclass(frozen=True)
class RuleParts:
    """Every quantity of the rule, for traces and checks: ``r = rbar * kappa * eta``."""

    v: float
    rbar: float
    sd_w: float
    kappa: float
    eta: float
    r: float


def rule_parts(
    evaluated: Sequence[Scored],
    children: int,
    own: tuple[float, float],
    self_weight: float = 0.0,
) -> RuleParts:
    """The rule's quantities for a node with ``children`` children, ``evaluated`` among them."""
    own_v, own_r = _unit("the node's own veracity", own[0]), _unit("own reliability", own[1])
    if not math.isfinite(self_weight) or self_weight < 0.0:
        raise BadInputError(f"self_weight must be finite and >= 0, got {self_weight!r}")
    if not 0 <= len(evaluated) <= children:
        raise BadInputError(
            f"{len(evaluated)} evaluated children do not fit a node with {children} children"
        )
    if not evaluated:
        return RuleParts(v=own_v, rbar=own_r, sd_w=0.0, kappa=1.0, eta=1.0, r=own_r)

    pool = list(evaluated)
    if sum(c.w for c in pool) == 0.0:
        pool = [Scored(w=1.0, v=c.v, r=c.r) for c in pool]
    if self_weight > 0.0:
        pool.append(Scored(w=self_weight, v=own_v, r=own_r))

    total_w = sum(c.w for c in pool)
    if not math.isfinite(total_w):
        raise BadInputError("the importance weights are too large to add up")
    total_wr = sum(c.w * c.r for c in pool)
    v = sum(c.w * c.r * c.v for c in pool) / total_wr if total_wr > 0.0 else own_v
    rbar = total_wr / total_w
    mean_w = sum(c.w * c.v for c in pool) / total_w
    # Population, not sample, variance, weighted by importance alone (spec 7 pins it).
    sd_w = math.sqrt(sum(c.w * (c.v - mean_w) ** 2 for c in pool) / total_w)
    # Two standard deviations of disagreement remove all confidence (spec 7 PROPOSAL).
    kappa = max(0.0, 1.0 - 2.0 * sd_w)
    eta = len(evaluated) / children
    return RuleParts(v=v, rbar=rbar, sd_w=sd_w, kappa=kappa, eta=eta, r=rbar * kappa * eta)


def rule_aggregate(
    evaluated: Sequence[Scored],
    children: int,
    own: tuple[float, float],
    self_weight: float = 0.0,
) -> tuple[float, float]:
    """The node's aggregated (v, r); ``own`` is its self (v, r), kept when none is evaluated."""
    parts = rule_parts(evaluated, children, own, self_weight)
    return parts.v, parts.r
