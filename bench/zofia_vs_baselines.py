"""ZoFia against Direct and RAG on PolitiFact articles with the embedded model.

    .venv/bin/python bench/zofia_vs_baselines.py [--sample 50] [--out bench/out/zofia]
        [--no-web-standin]

Every method sees the same sample of the SheepDog test split. Retrieval is offline:
Wikipedia from offline-wiki, and for the web the runner's ``bench-news`` stand-in
(docs/bench.md): SummEval's CNN/DailyMail articles and PolitiFact++'s human-written
articles, without labels, dates or URLs, minus every document that is or nearly is a
PolitiFact article. It is news text, which the paper's web query excludes, so these
results are neither the paper's web setting nor its "w/o Open Web" ablation; the report
names the stand-in and how many documents it kept. ``--no-web-standin`` leaves the web
quadrant empty (the paper's w/o Open Web ablation, Table 2) and ZoFia's warning says so;
the two runs have different run ids, so one never resumes the other's results (give each
its own --out to keep both reports).

Results go to a resumable store under --out. Prints the methods' warnings first, then
accuracy and macro-F1, LLM calls, prompt and completion tokens and seconds per article,
the prompt tokens llama.cpp reused from its prefix cache, and how often the debate ended
before the round limit.

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
    parser.add_argument(
        "--no-web-standin",
        action="store_true",
        help="no bench-news stand-in: the web quadrant stays empty (w/o Open Web)",
    )
    args = parser.parse_args()
    config = BenchConfig(
        dataset="politifact",
        methods=tuple(args.methods.split(",")),
        out=args.out,
        setting="open",
        sample=args.sample,
        seed=0,
        sources=("offline-wiki",),
        # With only offline-wiki configured the runner adds the bench-news stand-in.
        web_standin=not args.no_web_standin,
    )
    models = ModelSet.from_settings(ModelSettings())

    def build(name, sources):
        return load_method(name, models=models, sources=sources)

    def sources(split):
        return [shared_source(s) for s in config.sources]

    run = prepare(config, load=load_dataset, build=build, sources=sources)
    standin = run.manifest["web_standin"]
    if standin:
        print(
            f"web stand-in {standin['corpus']}: {standin['documents']} documents, "
            f"excluded {standin['excluded']}",
            flush=True,
        )

    def progress(method, finished, total, accuracy):
        shown = "" if accuracy is None else f" accuracy so far {accuracy:.3f}"
        print(f"  {method}: {finished}/{total}{shown}", flush=True)

    try:
        results = run.run(progress, warn=lambda line: print(line, flush=True))
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
