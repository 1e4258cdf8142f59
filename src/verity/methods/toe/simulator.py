"""A toy tool simulator for ToE's GRPO, where each category's best tool is known.

    trajectory = episode(policy, category=1, rng=random.Random(0), gen=torch.Generator())
    greedy(policy)      # [(tool, probability)] per category, from a fresh episode's state

No model and no source: a claim is only its category (the one-hot in state numbers 0-5
of the 29), each category has one best tool, and an episode lasts 1 to 3 steps. A step
earns 1 for the best tool, -0.1 for another and 0 for stopping. The GRPO tests and
``bench/toe_simulator.py`` train on it: a policy that learns must end up choosing each
category's best tool.
"""

from __future__ import annotations

import random

import torch

from verity.methods.toe.features import ACTIONS, CATEGORIES, STATE_DIM, STOP
from verity.methods.toe.policy import PolicyNet, Step, Trajectory, act

# One best tool per category (in CATEGORIES' order), distinct so that each row tests one.
BEST = ("factcheck", "arxiv", "reddit", "wiki", "social", "web")
ALL = [True] * len(ACTIONS)


def state(category: int, t: int = 0) -> list[float]:
    """The state of step ``t`` of an episode on a claim of this category."""
    s = [0.0] * STATE_DIM
    s[category] = 1.0
    s[14] = s[15] = t / 5  # searches / 5, and / the step budget (also 5 here)
    return s


def episode(
    policy: PolicyNet, category: int, rng: random.Random, gen: torch.Generator
) -> Trajectory:
    """1-3 sampled steps: +1 for the category's best tool, -0.1 for another, 0 for stop."""
    best, steps = ACTIONS.index(BEST[category]), []
    for t in range(rng.randint(1, 3)):
        s = state(category, t)
        action, logprob, _ = act(policy, s, ALL, greedy=False, generator=gen)
        reward = 0.0 if action == STOP else 1.0 if action == best else -0.1
        steps.append(Step(s, ALL, action, logprob, reward))
        if action == STOP:
            break
    return Trajectory(steps, key=CATEGORIES[category])


def greedy(policy: PolicyNet) -> list[tuple[str, float]]:
    """Per category, the policy's most probable first action and its probability."""
    chosen = [act(policy, state(c), ALL, greedy=True) for c in range(len(CATEGORIES))]
    return [(ACTIONS[a], probs[a]) for a, _, probs in chosen]
