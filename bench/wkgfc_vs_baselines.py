"""WKGFC against Direct and RAG on FEVER claims whose subjects the offline graph holds.

    .venv/bin/python bench/wkgfc_vs_baselines.py [--sample 50] [--out bench/out/wkgfc]

The sample is drawn from FEVER paper_dev (binary, NOT ENOUGH INFO left out) among claims
whose first named entity has an exact label or alias in ``kg-local``: the graph covers
only part of Wikidata, and the comparison is about using a graph that has the subject.
WKGFC reads ``kg-local`` (no web source offline); RAG reads ``offline-wiki``. Prints
balanced accuracy, LLM calls, SPARQL queries and seconds per claim, and WKGFC's error
analysis: the share of its errors that followed a web request after expansion
(insufficient graph), a forced verdict (step limit) or a verdict on the initial graph
only (over-confidence).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from verity.api import shared_source
from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, prepare
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method
from verity.nlp.ner import EntityRecognizer


def covered(split: Any) -> Any:
    """The split restricted to claims whose first entity the offline graph names exactly."""
    graph = shared_source("kg-local").graph  # type: ignore[attr-defined]
    recognizer = EntityRecognizer()
    kept = []
    for ex in split.examples:
        spans = recognizer.extract(ex.subject.text)
        if spans:
            match = graph.link(spans[0].text, k=1)
            if match and match[0].matched in ("label", "alias"):
                kept.append(ex)
        if len(kept) >= 400:  # enough to sample from; linking every claim takes minutes
            break
    return replace(split, examples=tuple(kept))


def error_analysis(rows: list[Any]) -> dict[str, float]:
    """Shares of WKGFC's wrong answers by what preceded the verdict."""
    wrong = [r for r in rows if r.pred is not None and r.pred != r.gold and r.verdict]
    counts = {"insufficient graph": 0, "step limit": 0, "over-confidence": 0}
    for row in wrong:
        trace = row.verdict["trace"]
        actions = [a["action"] for a in trace.get("actions", [])]
        if trace.get("forced_verdict"):
            counts["step limit"] += 1
        if "webSearch" in actions and "expandKG" in actions[: actions.index("webSearch")]:
            counts["insufficient graph"] += 1
        if not {"expandKG", "webSearch"} & set(actions):
            counts["over-confidence"] += 1
    return {k: v / len(wrong) for k, v in counts.items()} if wrong else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("bench/out/wkgfc"))
    args = parser.parse_args()
    config = BenchConfig(
        dataset="fever",
        methods=("direct", "rag", "wkgfc"),
        out=args.out,
        setting="open",
        sample=args.sample,
        seed=0,
        sources=("kg-local", "offline-wiki"),
    )
    models = ModelSet.from_settings(ModelSettings())

    def build(name: str, sources: Any) -> Any:
        chosen = [s for s in sources if (s.name == "kg-local") == (name == "wkgfc")]
        return load_method(name, models=models, sources=chosen)

    def load(name: str, **kwargs: Any) -> Any:
        return covered(load_dataset(name, **kwargs))

    run = prepare(
        config,
        load=load,
        build=build,
        sources=lambda split: [shared_source(s) for s in config.sources],
    )
    try:
        results = run.run(lambda m, done, total, acc: print(f"  {m}: {done}/{total}", flush=True))
        rows = list(run.store.rows(run.run_id, "wkgfc"))
    finally:
        run.close()
    print(
        f"{'method':7} {'n':>3} {'err':>3} {'bal.acc':>7} {'calls':>6} {'sparql':>6} {'s/claim':>7}"
    )
    for name, result in results.items():
        m, u, extra = result.metrics, result.usage_per_claim, result.extra
        sparql = (
            sum(r.verdict["trace"].get("sparql_queries", 0) for r in rows if r.verdict) / len(rows)
            if name == "wkgfc" and rows
            else 0.0
        )
        print(
            f"{name:7} {m.n:>3} {m.errors:>3} {m.balanced_accuracy:>7.3f} "
            f"{u.get('llm_calls', 0):>6.1f} {sparql:>6.1f} "
            f"{extra.get('seconds_per_example', float('nan')):>7.1f}"
        )
    for cause, share in error_analysis(rows).items():
        print(f"wkgfc errors after {cause}: {100 * share:.0f}%")


if __name__ == "__main__":
    main()
