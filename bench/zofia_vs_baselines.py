"""ZoFia against Direct and RAG on PolitiFact articles with the embedded model.

    .venv/bin/python bench/zofia_vs_baselines.py [--sample 50] [--out bench/out/zofia]

Every method sees the same sample of the SheepDog test split. Retrieval is offline:
Wikipedia from offline-wiki, and no web source (there is no local news corpus), so the web
quadrant is empty and claim verification has nothing to check against; the report says
so. Results go to a resumable store under --out. Prints accuracy and macro-F1, LLM calls,
prompt and completion tokens and seconds per article, the prompt tokens llama.cpp reused
from its prefix cache, and how often the debate ended before the round limit.

Run it with a fresh ``VERITY_CACHE_DIR``: answers served from verity's answer cache take
no time, which would make the seconds per article meaningless.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verity.api import shared_source
from verity.bench.datasets import load_dataset
from verity.bench.runner import BenchConfig, prepare
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("bench/out/zofia"))
    parser.add_argument("--methods", default="direct,rag,zofia")
    args = parser.parse_args()
    config = BenchConfig(
        dataset="politifact",
        methods=tuple(args.methods.split(",")),
        out=args.out,
        setting="open",
        sample=args.sample,
        seed=0,
        sources=("offline-wiki",),
    )
    models = ModelSet.from_settings(ModelSettings())

    def build(name, sources):
        return load_method(name, models=models, sources=sources)

    def sources(split):
        return [shared_source(s) for s in config.sources]

    run = prepare(config, load=load_dataset, build=build, sources=sources)

    def progress(method, finished, total, accuracy):
        shown = "" if accuracy is None else f" accuracy so far {accuracy:.3f}"
        print(f"  {method}: {finished}/{total}{shown}", flush=True)

    try:
        results = run.run(progress)
    finally:
        run.close()
    print(
        f"{'method':7} {'n':>3} {'err':>3} {'acc':>6} {'macro-F1':>17} {'calls':>6} "
        f"{'prompt tok':>10} {'reused':>7} {'compl tok':>9} {'s/article':>9} {'early':>6}"
    )
    for name, result in results.items():
        m, u, extra = result.metrics, result.usage_per_claim, result.extra
        prompt = u.get("prompt_tokens", 0.0)
        reused = u.get("cached_tokens", 0.0) / prompt if prompt else 0.0
        early = extra.get("debate_early_share")
        ci = m.macro_f1_ci
        interval = f"{m.macro_f1:.3f}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else "")
        print(
            f"{name:7} {m.n:>3} {m.errors:>3} {m.accuracy:>6.3f} {interval:>17} "
            f"{u.get('llm_calls', 0):>6.1f} {prompt:>10.0f} {100 * reused:>6.1f}% "
            f"{u.get('completion_tokens', 0):>9.0f} "
            f"{extra.get('seconds_per_example', float('nan')):>9.1f} "
            f"{(f'{100 * early:.0f}%' if early is not None else '-'):>6}"
        )


if __name__ == "__main__":
    main()
