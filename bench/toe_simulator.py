"""ToE's GRPO on a toy tool simulator: does the policy find each category's best tool?

    .venv/bin/python bench/toe_simulator.py [--updates 150] [--lr 1e-3] [--seed 0] \
        [--long 6000]

No model and no source: a claim is only its category (the one-hot in state dims 0-5 of the
29), each category has one best tool, and an episode lasts 1 to 3 steps. A step earns 1
for the best tool, -0.1 for another and 0 for stopping. Starting from a fresh network
(near-uniform over the 8 actions), GRPO with Tab. I's settings updates it every 8
episodes. The script prints, per category, the best tool and the greedy action with its
probability before and after training, at a raised learning rate and at Tab. I's own
1e-5 for the same number of updates (where it barely moves), then at 1e-5 for ``--long``
updates, to show how many Tab. I's rate needs (0 skips that run; 6,000 take about half
a minute on one core). The tests use the raised rate for the same reason.
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from verity.methods.toe.features import CATEGORIES
from verity.methods.toe.grpo import GrpoSettings, GrpoTrainer
from verity.methods.toe.policy import PolicyNet
from verity.methods.toe.simulator import BEST, episode, greedy

TAB_I_LR = 1e-5


def run(seed: int, updates: int, lr: float) -> dict:
    torch.manual_seed(seed)
    policy = PolicyNet()
    before = greedy(policy)
    trainer = GrpoTrainer(policy, settings=GrpoSettings(lr=lr))
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    rewards, n = [], 0
    started = time.perf_counter()
    while trainer.updates < updates:
        stats = trainer.add(episode(policy, n % len(CATEGORIES), rng, gen))
        n += 1
        if stats is not None:
            rewards.append(stats["mean_reward"])
    seconds = time.perf_counter() - started
    return {"before": before, "after": greedy(policy), "seconds": seconds, "rewards": rewards,
            "episodes": n}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--updates", type=int, default=150)
    parser.add_argument("--lr", type=float, default=1e-3, help="the raised learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--long", type=int, default=6000, help="updates at Tab. I's lr; 0: skip")
    args = parser.parse_args()
    if args.updates < 1 or args.long < 0:
        parser.error("--updates must be at least 1 and --long at least 0")
    # The network is tiny: a second thread spends longer handing work over than computing.
    torch.set_num_threads(1)
    runs = {
        f"lr {args.lr:g}": run(args.seed, args.updates, args.lr),
        f"lr {TAB_I_LR:g} (Tab. I)": run(args.seed, args.updates, TAB_I_LR),
    }
    if args.long:
        runs[f"lr {TAB_I_LR:g}, {args.long} updates"] = run(args.seed, args.long, TAB_I_LR)
    first = next(iter(runs.values()))
    print(f"GRPO on the tool simulator, seed {args.seed}: {args.updates} updates of 8 episodes")
    header = [f"{'category':<11}", f"{'best':<10}", f"{'before':<17}"]
    print(" ".join(header + [f"{name:<24}" for name in runs]).rstrip())
    for c, category in enumerate(CATEGORIES):
        picks = [first["before"][c]] + [result["after"][c] for result in runs.values()]
        cells = [f"{a} {p:.2f}{'*' if a == BEST[c] else ''}" for a, p in picks]
        row = [f"{category:<11}", f"{BEST[c]:<10}", f"{cells[0]:<17}"]
        print(" ".join(row + [f"{cell:<24}" for cell in cells[1:]]).rstrip())
    print("(* = the category's best tool)")
    for name, result in runs.items():
        right = sum(a == b for (a, _), b in zip(result["after"], BEST, strict=True))
        early, late = result["rewards"][:10], result["rewards"][-10:]
        print(f"{name}: {right}/6 categories right; mean episode reward "
              f"{sum(early) / len(early):.2f} over the first 10 updates, "
              f"{sum(late) / len(late):.2f} over the last 10; {len(result['rewards'])} updates, "
              f"{result['episodes']} episodes, {result['seconds']:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
