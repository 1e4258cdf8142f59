"""ToE's retrieval policy (§III-B): an MLP from the 29-dim search state to 8 actions.

    net = PolicyNet()
    allowed = [True] * len(ACTIONS)
    allowed[ACTIONS.index("reddit")] = False       # no Reddit source configured
    action, logprob, probs = act(net, state, allowed, greedy=False, generator=rng)
    ACTIONS[action]                                # "web", ..., "stop"
    step = Step(state, allowed, action, logprob, reward)          # r_t of Eq. 5
    behaviour_clone(net, warmup_trajectories, epochs=20, lr=1e-3, seed=0)

The state layout is spec §4's table (category one-hot, locale, flags, search counters,
stances, per-tool counts, authoritative flag, current reliability); this module only
checks its width. A tool that is not available for this run (offline, or removed by a
Tab. III ablation) is masked: its logit becomes -inf, so it gets probability 0 and is
never sampled. Stop is always allowed, so every mask leaves at least one action.
`Step` and `Trajectory` record episodes for `verity.methods.toe.grpo`;
`behaviour_clone` fits the network to the warm-up heuristic's episodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from verity.errors import BadInputError, ConfigError

# The 29-number state (§III-B) and the eight actions in §III-B's order, the last one
# ending the episode, are defined with the other layouts in `features`.
from verity.methods.toe.features import ACTIONS, STATE_DIM, STOP

# §III-B: hidden layers 128, 128 and 64. The activation is not stated (spec §4 PROPOSAL: ReLU).
HIDDEN = (128, 128, 64)

StateLike = Sequence[float] | torch.Tensor
MaskLike = Sequence[bool] | torch.Tensor


class PolicyNet(nn.Module):
    """pi_theta of §III-B: state [B, 29] and allowed [B, 8] to masked logits [B, 8].

    logits = PolicyNet()(torch.zeros(1, STATE_DIM), torch.ones(1, len(ACTIONS), dtype=torch.bool))
    """

    def __init__(self) -> None:
        super().__init__()
        sizes = (STATE_DIM, *HIDDEN)
        layers: list[nn.Module] = []
        for width_in, width_out in pairwise(sizes):
            layers += [nn.Linear(width_in, width_out), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], len(ACTIONS)))
        self.mlp = nn.Sequential(*layers)

    def forward(self, state: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Logits with every unavailable tool at -inf (stop is allowed whatever the mask says)."""
        state, allowed = check_batch(state, allowed)
        logits: torch.Tensor = self.mlp(state)
        return logits.masked_fill(~allowed, -math.inf)


def check_batch(state: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a batch and return it as float states and a bool mask with stop set."""
    if state.dim() != 2 or state.shape[1] != STATE_DIM:
        raise BadInputError(f"policy state must be [batch, {STATE_DIM}], got {list(state.shape)}")
    if allowed.shape != (state.shape[0], len(ACTIONS)):
        raise BadInputError(
            f"action mask must be [{state.shape[0]}, {len(ACTIONS)}], got {list(allowed.shape)}"
        )
    state = state.to(torch.float32)
    if not bool(torch.isfinite(state).all()):
        raise BadInputError("policy state holds a NaN or infinite value")
    allowed = allowed.to(torch.bool).clone()
    allowed[:, STOP] = True
    return state, allowed


def as_batch(state: StateLike, allowed: MaskLike) -> tuple[torch.Tensor, torch.Tensor]:
    """One state and its mask, from lists or tensors, as a batch of one."""
    state_t = torch.as_tensor(state, dtype=torch.float32).reshape(1, -1)
    allowed_t = torch.as_tensor(allowed, dtype=torch.bool).reshape(1, -1)
    return check_batch(state_t, allowed_t)


def act(
    net: PolicyNet,
    state: StateLike,
    allowed: MaskLike,
    *,
    greedy: bool,
    generator: torch.Generator | None = None,
) -> tuple[int, float, list[float]]:
    """Choose one action: (index into ACTIONS, its log-probability, all 8 probabilities).

    ``greedy`` takes the most probable action (evaluation, §IV-A: the policy is frozen);
    otherwise the action is sampled with ``generator`` (the global RNG when it is None),
    so a seeded generator replays the same episode.
    """
    state_t, allowed_t = as_batch(state, allowed)
    with torch.no_grad():
        logprobs = torch.log_softmax(net(state_t, allowed_t), dim=-1)[0]
    probs = logprobs.exp()
    if greedy:
        action = int(torch.argmax(probs).item())
    else:
        action = int(torch.multinomial(probs, 1, generator=generator).item())
    return action, float(logprobs[action].item()), [float(p) for p in probs.tolist()]


@dataclass(frozen=True)
class Step:
    """One transition: what the policy saw, what it did, with what log-probability, r_t (Eq. 5).

    ``logprob`` is log pi_old(action | state) as recorded by `act`; GRPO's ratio needs it.
    Steps of the warm-up heuristic, which only behaviour cloning reads, may carry 0.0.
    """

    state: Sequence[float]
    allowed: Sequence[bool]
    action: int
    logprob: float
    reward: float

    def __post_init__(self) -> None:
        state = tuple(float(x) for x in self.state)
        allowed = tuple(bool(x) for x in self.allowed)
        if len(state) != STATE_DIM or not all(math.isfinite(x) for x in state):
            raise BadInputError(f"a step's state must be {STATE_DIM} finite numbers")
        if len(allowed) != len(ACTIONS):
            raise BadInputError(f"a step's action mask must have {len(ACTIONS)} entries")
        if not 0 <= self.action < len(ACTIONS) or not (allowed[self.action] or self.action == STOP):
            raise BadInputError(f"action {self.action} is not an allowed action")
        if not math.isfinite(self.logprob) or self.logprob > 1e-6:
            raise BadInputError(f"a step's log-probability must be finite and <= 0: {self.logprob}")
        if not math.isfinite(self.reward):
            raise BadInputError(f"a step's reward must be finite: {self.reward}")
        object.__setattr__(self, "state", state)
        object.__setattr__(self, "allowed", allowed)


@dataclass(frozen=True)
class Trajectory:
    """One completed retrieval episode (spec §4: one node's); ``key`` names it (node id)."""

    steps: Sequence[Step]
    key: str = ""

    def __post_init__(self) -> None:
        if not self.steps:
            raise BadInputError(f"trajectory {self.key!r} has no steps")
        object.__setattr__(self, "steps", tuple(self.steps))

    @property
    def rewards(self) -> list[float]:
        """r_0 .. r_T of the episode."""
        return [step.reward for step in self.steps]


def behaviour_clone(
    policy: PolicyNet,
    trajectories: Sequence[Trajectory],
    *,
    epochs: int = 20,
    lr: float = 1e-3,
    seed: int = 0,
    batch_size: int = 64,
) -> list[float]:
    """Fit ``policy`` to the warm-up heuristic's actions by cross-entropy; loss per epoch.

    §III-B only says the first N_warm claims follow a heuristic; cloning it and taking the
    result as pi_ref is spec §4's PROPOSAL, and epochs, lr and batch size are not in the
    paper either. The seed fixes the mini-batch order.
    """
    steps = [s for t in trajectories for s in t.steps]
    if not steps:
        raise BadInputError("behaviour cloning needs at least one step")
    if epochs < 1 or lr <= 0 or batch_size < 1:
        raise ConfigError("behaviour cloning needs epochs >= 1, lr > 0 and batch size >= 1")
    states = torch.tensor([s.state for s in steps], dtype=torch.float32)
    allowed = torch.tensor([s.allowed for s in steps], dtype=torch.bool)
    actions = torch.tensor([s.action for s in steps], dtype=torch.long)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    losses: list[float] = []
    for _ in range(epochs):
        total = 0.0
        for rows in torch.split(torch.randperm(len(steps), generator=generator), batch_size):
            loss = F.cross_entropy(policy(states[rows], allowed[rows]), actions[rows])
            optimizer.zero_grad()
            torch.autograd.backward(loss)
            optimizer.step()
            total += float(loss.detach()) * len(rows)
        losses.append(total / len(steps))
    return losses
