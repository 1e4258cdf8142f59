"""ToE's tools offline, paper-faithful beside guarded, on LIAR, LIAR-New and Check-COVID.

    .venv/bin/python bench/toe_leakage.py [--sample 20] [--methods direct,rag] \
        [--model local] [--out bench/out/toe-leakage]

Every method retrieves from ToE's tools as they stand in offline: ``offline-wiki``
(Wikipedia), ``arxiv:offline`` (Check-COVID's abstracts), ``factcheck:offline``
(PolitiFact's rulings of LIAR's validation split) and ``news-offline`` (PolitiFact and
GossipCop articles). Each retrieving method runs in both leakage settings
(`verity.bench.leakage`). Prints, per dataset and method, accuracy and accuracy per gold
label in each setting, the share of verdicts citing a fact-check ruling, what the guard
dropped, and LIAR-New's majority-class baseline (it is 85% false). The runs are stored
under ``OUT/DATASET`` with their reports; a rerun resumes.

With the embedded model the accuracies say little about ToE: they show what each setting
lets through. A capable model behind ``--model openai:...`` gives figures to read.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from verity.api import shared_source
from verity.bench.datasets import data_dir, load_dataset
from verity.bench.loaders.liar import majority_baseline
from verity.bench.runner import BenchConfig, prepare
from verity.bench.standins import ensure_standin
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method
from verity.sources.leakage import GuardedSource
from verity.sources.registry import STANDINS

DATASETS = ("liar", "liar-new-3way", "check-covid")
SOURCES = ("offline-wiki", "arxiv:offline", "factcheck:offline", "news-offline")


def run_dataset(
    name: str, args: argparse.Namespace, settings: ModelSettings, models: ModelSet
) -> dict[str, Any]:
    """One dataset: the run, its rows, and what each guarded source dropped."""
    config = BenchConfig(
        dataset=name,
        methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()),
        out=args.out / name,
        setting="open",
        sample=args.sample,
        seed=0,
        model=settings,
        sources=SOURCES,
    )

    def build(method: str, given: Any) -> Any:
        return load_method(method, models=models, sources=given)

    # The dataset's own corpus (Check-COVID's abstracts) is left out: the point here is
    # what ToE's tools let through, and that corpus is the same abstracts again.
    run = prepare(
        config, load=load_dataset, build=build,
        sources=lambda split: [shared_source(spec) for spec in SOURCES],
    )  # fmt: skip
    try:
        results = run.run()
        cited = {}
        for method in run.methods:
            rows = run.store.rows(run.run_id, method)
            fact = [
                any(
                    e["source"] == "factcheck:offline"
                    for e in (r.verdict or {}).get("evidence", [])
                )
                for r in rows
            ]
            cited[method] = sum(fact) / len(fact) if fact else 0.0
    finally:
        run.close()
    dropped: Counter[str] = Counter()
    for method in run.methods.values():
        for source in getattr(method, "sources", []):
            if isinstance(source, GuardedSource):
                for reason, n in source.dropped.items():
                    dropped[f"{source.name}: {reason}"] += n
    return {"results": results, "cited": cited, "dropped": dropped, "sample": run.sample}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--methods", default="direct,rag")
    parser.add_argument("--model", default="local")
    parser.add_argument("--out", type=Path, default=Path("bench/out/toe-leakage"))
    args = parser.parse_args()
    folder = data_dir()
    for spec in SOURCES:
        if spec in STANDINS:
            ensure_standin(STANDINS[spec][1], folder)
    settings = ModelSettings(spec=args.model)
    models = ModelSet.from_settings(settings, {})
    print(f"model {args.model}, {args.sample} claims per dataset, sources {', '.join(SOURCES)}")
    for name in DATASETS:
        found = run_dataset(name, args, settings, models)
        print(f"\n## {name}")
        if name == "liar-new-3way":
            label, _, share = majority_baseline(found["sample"])
            print(f"majority class on this sample: {label.value}, accuracy {share:.3f}")
        print("| method | n | accuracy | per gold label | cites a ruling |")
        print("|---|--:|--:|---|--:|")
        for method, result in found["results"].items():
            m = result.metrics
            per_label = ", ".join(
                f"{lab.value} {m.per_class[lab].recall:.2f}"
                for lab in m.labels
                if m.per_class[lab].support
            )
            print(
                f"| {method} | {m.n} | {m.accuracy:.3f} | {per_label} "
                f"| {found['cited'][method]:.2f} |"
            )
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(found["dropped"].items())) or "nothing"
        print(f"guard dropped: {dropped}")


if __name__ == "__main__":
    main()
