"""LoCal against Direct with the embedded model: FEVEROUS-S (gold) and HoVer 2-hop (open).

    .venv/bin/python bench/local_vs_direct.py [--sample 100] [--out bench/out/local]
    .venv/bin/python bench/local_vs_direct.py --ids ids.json   # {"hover": [...], ...}

Both methods see the same sample of each dataset (demonstration claims left out);
``--ids`` names the examples per dataset instead, to rerun an earlier run's sample. Open
book uses the offline sources only (offline-wiki). Results go to a resumable store under
--out, so an interrupted run continues where it stopped. Prints, per dataset: macro-F1 of
each method and their ratio, LLM calls and tokens per claim, LoCal's iterations per
claim, and the framework overhead (wall time outside model calls).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, prepare
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method

RUNS = (
    ("feverous-s", None, "gold"),
    ("hover", 2, "open"),
)


def run_one(
    dataset: str, hops: int | None, setting: str, sample: int, out: Path, ids: list[str] | None
):
    from verity.api import shared_source

    config = BenchConfig(
        dataset=dataset,
        methods=("direct", "local"),
        out=out / f"{dataset}{hops or ''}-{setting}",
        setting=setting,  # type: ignore[arg-type]
        sample=sample,
        seed=0,
        hops=hops,
        sources=("offline-wiki",),
        ids=tuple(ids) if ids is not None else None,
    )
    models = ModelSet.from_settings(ModelSettings())

    def build(name, sources):
        return load_method(name, models=models, sources=sources)

    def sources(split):
        return [shared_source(s) for s in config.sources]

    run = prepare(config, load=load_dataset, build=build, sources=sources)

    def progress(method, finished, total, accuracy):
        shown = "" if accuracy is None else f" accuracy so far {accuracy:.3f}"
        print(f"  {dataset} {method}: {finished}/{total}{shown}", flush=True)

    try:
        return run.run(progress)
    finally:
        run.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("bench/out/local"))
    parser.add_argument("--only", choices=[d for d, _, _ in RUNS], default=None)
    parser.add_argument("--ids", type=Path, default=None, help="JSON: dataset -> example ids")
    args = parser.parse_args()
    ids = json.loads(args.ids.read_text("utf-8")) if args.ids else {}
    rows = []
    for dataset, hops, setting in RUNS:
        if args.only and dataset != args.only:
            continue
        results = run_one(dataset, hops, setting, args.sample, args.out, ids.get(dataset))
        rows.append((f"{dataset}{f' {hops}-hop' if hops else ''} ({setting})", results))
    header = (
        f"{'dataset':28} {'method':7} {'n':>4} {'err':>4} {'macro-F1':>9} {'ratio':>6} "
        f"{'calls':>6} {'prompt tok':>10} {'compl tok':>9} {'iters':>6} {'overhead':>9}"
    )
    print(header)
    for label, results in rows:
        direct = results.get("direct")
        for name, result in results.items():
            m, u, extra = result.metrics, result.usage_per_claim, result.extra
            ratio = (
                m.macro_f1 / direct.metrics.macro_f1
                if direct and direct.metrics.macro_f1 > 0
                else float("nan")
            )
            iters = extra.get("iterations_per_claim")
            print(
                f"{label:28} {name:7} {m.n:>4} {m.errors:>4} {m.macro_f1:>9.3f} {ratio:>6.2f} "
                f"{u.get('llm_calls', 0):>6.1f} {u.get('prompt_tokens', 0):>10.0f} "
                f"{u.get('completion_tokens', 0):>9.0f} "
                f"{(f'{iters:.2f}' if iters is not None else '-'):>6} "
                f"{100 * extra.get('overhead_share', float('nan')):>8.2f}%"
            )


if __name__ == "__main__":
    main()
