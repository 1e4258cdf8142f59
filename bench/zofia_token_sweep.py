"""ZoFia's output-token budget sweep (the paper's Figure 4): macro-F1 at each cap.

    .venv/bin/python bench/zofia_token_sweep.py [--caps 64,128,256,512] [--sample 20] \
        [--dataset politifact] [--model local] [--out bench/out/zofia-sweep]

Every call of every agent is capped at the same number of output tokens; each cap is its
own resumable run on the same sample. A cap too small to finish an agent's JSON makes
that agent fail (recorded, the verdict goes on without it) or, for the final ruling,
the example fail (counted as an error). Prints, per cap: n, errors, accuracy, macro-F1,
completion tokens and seconds per article, and the share of agent answers lost.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verity.api import shared_source
from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, prepare
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method


def run_cap(cap: int, args: argparse.Namespace) -> tuple[object, float]:
    config = BenchConfig(
        dataset=args.dataset,
        methods=("zofia",),
        out=args.out / f"cap-{cap}",
        setting="open",
        sample=args.sample,
        seed=0,
        sources=("offline-wiki",),
        method_settings={"zofia": {"max_tokens": cap}},
    )
    models = ModelSet.from_settings(ModelSettings(spec=args.model, base_url=args.base_url))

    def build(name, sources):
        return load_method(name, models=models, sources=sources, max_tokens=cap)

    run = prepare(
        config,
        load=load_dataset,
        build=build,
        sources=lambda split: [shared_source(s) for s in config.sources],
    )
    try:
        results = run.run(lambda m, done, total, acc: print(f"  cap {cap}: {done}/{total}"))
        rows = list(run.store.rows(run.run_id, "zofia"))
    finally:
        run.close()
    failures = calls = 0
    for row in rows:
        if row.verdict:
            trace = row.verdict["trace"]
            failures += len(trace.get("failures", []))
            calls += len(trace.get("calls", []))
    return results["zofia"], failures / calls if calls else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--caps", default="64,128,256,512")
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--dataset", default="politifact")
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--out", type=Path, default=Path("bench/out/zofia-sweep"))
    args = parser.parse_args()
    table = [(cap, *run_cap(cap, args)) for cap in (int(c) for c in args.caps.split(","))]
    print(f"{'cap':>5} {'n':>3} {'err':>3} {'acc':>6} {'macro-F1':>8} {'compl tok':>9} "
          f"{'s/article':>9} {'lost':>6}")  # fmt: skip
    for cap, result, lost in table:
        m, u, extra = result.metrics, result.usage_per_claim, result.extra  # type: ignore[attr-defined]
        print(
            f"{cap:>5} {m.n:>3} {m.errors:>3} {m.accuracy:>6.3f} {m.macro_f1:>8.3f} "
            f"{u.get('completion_tokens', 0):>9.0f} "
            f"{extra.get('seconds_per_example', float('nan')):>9.1f} {100 * lost:>5.1f}%"
        )


if __name__ == "__main__":
    main()
