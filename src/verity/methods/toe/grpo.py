"""Online GRPO for ToE's retrieval policy (§III-B, Tab. I; spec §4 "Training").

    policy = PolicyNet()
    behaviour_clone(policy, warmup_episodes, epochs=20, lr=1e-3, seed=0)
    trainer = GrpoTrainer(policy)             # pi_ref = a frozen copy of the warm-started policy
    for steps, node_id in episodes:           # one node's retrieval episode each
        stats = trainer.add(Trajectory(steps=steps, key=node_id))
        if stats is not None:                 # G episodes were buffered: one update ran
            log(stats["loss"], stats["mean_reward"], stats["grad_norm"])

The paper names GRPO [16] and Tab. I's constants; the rest is spec §4's PROPOSAL,
followed as written: a group is whatever G episodes are buffered; the return of step t is
R_t = sum_k gamma^(k-t) r_k; advantages are the returns normalised over every step of the
group; the loss is the clipped surrogate minus an entropy bonus plus the exact categorical
KL(pi || pi_ref) over the allowed actions; pi_ref is fixed (the policy after warm-up
behaviour cloning, not the previous policy, which the clip already constrains); K epochs of
Adam per group; the buffer is emptied after each update.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch

from verity.errors import BadInputError, ConfigError
from verity.methods.toe.policy import PolicyNet, Step, Trajectory, behaviour_clone, check_batch

__all__ = [  # Step, Trajectory and behaviour_clone live beside the network they train.
    "HYPERPARAMETERS", "Batch", "GrpoSettings", "GrpoTrainer", "LossParts", "Step",
    "Trajectory", "behaviour_clone", "discounted_returns", "frozen_copy", "group_advantages",
    "grpo_loss", "make_batch",
]  # fmt: skip

# Tab. I: group size G, discount gamma, clipping range epsilon, entropy coefficient alpha,
# KL coefficient beta, learning rate and max gradient norm.
GROUP_SIZE = 8
GAMMA = 0.99
CLIP_EPS = 0.2
ENTROPY_COEF = 0.01
KL_COEF = 0.1
LEARNING_RATE = 1e-5
MAX_GRAD_NORM = 0.5
# Not in the paper (spec §4 PROPOSAL): K = 4 epochs over each group, with Adam.
EPOCHS = 4
# Spec §4: A = (R - mean) / (std + 1e-8); std is the population one (a lone step gets A = 0).
ADVANTAGE_EPS = 1e-8


@dataclass(frozen=True)
class GrpoSettings:
    """GRPO's knobs; the defaults are Tab. I's (tests and the simulator raise ``lr``)."""

    group_size: int = GROUP_SIZE
    gamma: float = GAMMA
    clip_eps: float = CLIP_EPS
    entropy_coef: float = ENTROPY_COEF
    kl_coef: float = KL_COEF
    lr: float = LEARNING_RATE
    max_grad_norm: float = MAX_GRAD_NORM
    epochs: int = EPOCHS

    def __post_init__(self) -> None:
        if self.group_size < 1 or self.epochs < 1:
            raise ConfigError("GRPO group size and epochs must be at least 1")
        if not 0.0 <= self.gamma <= 1.0 or not 0.0 < self.clip_eps < 1.0:
            raise ConfigError("GRPO needs 0 <= gamma <= 1 and 0 < clip eps < 1")
        if min(self.entropy_coef, self.kl_coef) < 0 or min(self.lr, self.max_grad_norm) <= 0:
            raise ConfigError("GRPO coefficients must be >= 0, lr and grad norm > 0")


# What a weights manifest records about training (the defaults; a trainer's own
# `hyperparameters` gives the values it actually used).
HYPERPARAMETERS: dict[str, Any] = {
    **asdict(GrpoSettings()),
    "optimizer": "adam",
    "advantage_eps": ADVANTAGE_EPS,
}


class Batch(NamedTuple):
    """A group flattened to one row per step (i, t)."""

    states: torch.Tensor  # [N, 29] float
    allowed: torch.Tensor  # [N, 8] bool
    actions: torch.Tensor  # [N] long
    old_logprobs: torch.Tensor  # [N] float, log pi_old(a | s) recorded when acting
    advantages: torch.Tensor  # [N] float


class LossParts(NamedTuple):
    """The loss and its three terms: total = policy_loss - alpha * entropy + beta * kl."""

    total: torch.Tensor
    policy_loss: torch.Tensor  # -mean min(rho A, clip(rho, 1 - eps, 1 + eps) A)
    entropy: torch.Tensor  # mean H(pi(. | s)) over allowed actions
    kl: torch.Tensor  # mean KL(pi_theta(. | s) || pi_ref(. | s)), exact over allowed actions
    clip_fraction: torch.Tensor  # share of rows whose ratio left [1 - eps, 1 + eps]


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """R_t = sum_{k >= t} gamma^(k-t) r_k (spec §4), for every t."""
    returns, running = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def group_advantages(trajectories: Sequence[Trajectory], gamma: float) -> list[list[float]]:
    """Returns normalised over every step of every trajectory in the group (spec §4)."""
    returns = [discounted_returns(t.rewards, gamma) for t in trajectories]
    flat = [r for rs in returns for r in rs]
    if not flat:
        raise BadInputError("a GRPO group needs at least one step")
    mean = sum(flat) / len(flat)
    std = math.sqrt(sum((r - mean) ** 2 for r in flat) / len(flat))
    return [[(r - mean) / (std + ADVANTAGE_EPS) for r in rs] for rs in returns]


def make_batch(trajectories: Sequence[Trajectory], gamma: float) -> Batch:
    """The group as tensors, with its advantages."""
    steps = [s for t in trajectories for s in t.steps]
    advantages = [a for adv in group_advantages(trajectories, gamma) for a in adv]
    return Batch(
        states=torch.tensor([s.state for s in steps], dtype=torch.float32),
        allowed=torch.tensor([s.allowed for s in steps], dtype=torch.bool),
        actions=torch.tensor([s.action for s in steps], dtype=torch.long),
        old_logprobs=torch.tensor([s.logprob for s in steps], dtype=torch.float32),
        advantages=torch.tensor(advantages, dtype=torch.float32),
    )


def grpo_loss(
    policy: PolicyNet,
    reference: PolicyNet,
    batch: Batch,
    *,
    clip_eps: float = CLIP_EPS,
    entropy_coef: float = ENTROPY_COEF,
    kl_coef: float = KL_COEF,
) -> LossParts:
    """Spec §4: -mean[min(rho A, clip(rho) A)] - alpha H(pi) + beta KL(pi || pi_ref)."""
    states, allowed = check_batch(batch.states, batch.allowed)
    logits = policy(states, allowed)
    probs = torch.softmax(logits, dim=-1)
    # Masked actions have probability 0 and log-probability -inf; 0 * -inf is NaN (and so
    # would be its gradient), so their log-probabilities are zeroed before any product.
    logp = torch.log_softmax(logits, dim=-1).masked_fill(~allowed, 0.0)
    with torch.no_grad():
        ref_logp = torch.log_softmax(reference(states, allowed), dim=-1).masked_fill(~allowed, 0.0)
    ratio = torch.exp(logp.gather(1, batch.actions[:, None]).squeeze(1) - batch.old_logprobs)
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    surrogate = torch.minimum(ratio * batch.advantages, clipped * batch.advantages)
    policy_loss = -surrogate.mean()
    entropy = -(probs * logp).sum(dim=-1).mean()
    kl = (probs * (logp - ref_logp)).sum(dim=-1).mean()
    total = policy_loss - entropy_coef * entropy + kl_coef * kl
    outside = ((ratio - 1.0).abs() > clip_eps).float().mean().detach()
    return LossParts(total, policy_loss, entropy, kl, outside)


def frozen_copy(policy: PolicyNet) -> PolicyNet:
    """A deep copy that no optimiser moves: pi_ref."""
    reference = copy.deepcopy(policy).eval()
    reference.requires_grad_(False)
    return reference


class GrpoTrainer:
    """Buffers completed episodes and runs one GRPO update per G of them (§III-B).

        trainer = GrpoTrainer(policy, settings=GrpoSettings(lr=1e-3))
        stats = trainer.add(trajectory)    # None until the buffer holds G trajectories

    The reference policy is a frozen copy of ``policy`` taken now (or of ``reference``);
    `set_reference` takes a new one, for instance after warm-up behaviour cloning.
    """

    def __init__(
        self,
        policy: PolicyNet,
        *,
        settings: GrpoSettings | None = None,
        reference: PolicyNet | None = None,
    ) -> None:
        self.policy = policy
        self.settings = settings or GrpoSettings()
        self.reference = frozen_copy(reference if reference is not None else policy)
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=self.settings.lr)
        self.buffer: list[Trajectory] = []
        self.updates = 0

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """The settings this trainer uses, for a weights manifest."""
        return {**HYPERPARAMETERS, **asdict(self.settings)}

    def set_reference(self) -> None:
        """Freeze a deep copy of the current policy as pi_ref (spec §4: after warm-up)."""
        self.reference = frozen_copy(self.policy)

    def add(self, trajectory: Trajectory) -> dict[str, float] | None:
        """Buffer one completed episode; at G of them, update, empty the buffer, return stats."""
        self.buffer.append(trajectory)
        if len(self.buffer) < self.settings.group_size:
            return None
        group, self.buffer = self.buffer, []
        return self.update(group)

    def update(self, group: Sequence[Trajectory]) -> dict[str, float]:
        """K epochs of Adam on the group's loss, gradients clipped to the max norm (Tab. I).

        Losses and gradient norms are means over the K epochs; ``grad_norm`` is measured
        before clipping, so it shows how often Tab. I's 0.5 bites.
        """
        s = self.settings
        batch = make_batch(group, s.gamma)
        sums = dict.fromkeys(("loss", "policy_loss", "entropy", "kl", "clip_fraction"), 0.0)
        norms: list[float] = []
        for _ in range(s.epochs):
            parts = grpo_loss(
                self.policy, self.reference, batch,
                clip_eps=s.clip_eps, entropy_coef=s.entropy_coef, kl_coef=s.kl_coef,
            )  # fmt: skip
            self.optimizer.zero_grad()
            torch.autograd.backward(parts.total)
            norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), s.max_grad_norm)
            self.optimizer.step()
            norms.append(float(norm))
            for name, value in zip(sums, parts, strict=True):
                sums[name] += float(value.detach()) / s.epochs
        self.updates += 1
        return {
            **sums,
            "grad_norm": sum(norms) / len(norms),
            "grad_norm_max": max(norms),
            "mean_reward": sum(sum(t.rewards) for t in group) / len(group),
            "steps": float(len(batch.actions)),
            "updates": float(self.updates),
        }

    def state_dict(self) -> dict[str, Any]:
        """Policy, reference and optimiser, to resume training (the buffer is not kept)."""
        return {
            "policy": self.policy.state_dict(),
            "reference": self.reference.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` saved."""
        self.policy.load_state_dict(state["policy"])
        self.reference.load_state_dict(state["reference"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state["updates"])
