"""How many keywords ZoFia's stage 1 keeps: Algorithm 3 against the relaxed reading.

    .venv/bin/python bench/zofia_keywords.py [--dataset politifact] [--sample 0]

No model is called: spaCy's NER, the encoder and SC-MMR only. For each article of the
dataset (all of it with --sample 0, else a sample drawn as `verity bench` draws it) both
schedules select keywords from the same units, and the script prints the distribution of
keyword counts, why selection stopped, and the saliencies the units had: with MiniLM most
saliencies are below 0.5, so the paper's first reference of 1.0 often stops after the seed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter

from verity.bench.datasets import load_dataset
from verity.domain import Article
from verity.methods.zofia.keywords import KeywordParams, KeywordSelector
from verity.nlp.embed import default_encoder

PAPER = KeywordParams()
RELAXED = KeywordParams(
    schedule="relaxed", lambda_min=0.5, lambda_max=0.9, max_keywords=5, n_min=3, tau_floor=0.0
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="politifact")
    parser.add_argument("--sample", type=int, default=0, help="0: every article")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    examples = list(load_dataset(args.dataset).examples)
    if args.sample:
        examples = random.Random(args.seed).sample(examples, min(args.sample, len(examples)))
    encoder = default_encoder()
    paper = KeywordSelector(encoder=encoder, params=PAPER)
    relaxed = KeywordSelector(encoder=encoder, params=RELAXED)
    paper.warm_up()
    counts: dict[str, Counter[int]] = {"paper": Counter(), "relaxed": Counter()}
    stops: dict[str, Counter[str]] = {"paper": Counter(), "relaxed": Counter()}
    saliencies: list[float] = []
    started = time.perf_counter()
    for example in examples:
        subject = example.subject
        assert isinstance(subject, Article)
        for name, selector in (("paper", paper), ("relaxed", relaxed)):
            selection = selector.select(subject.text)
            counts[name][len(selection.keywords)] += 1
            stops[name][selection.stop] += 1
            if name == "paper":
                saliencies += [u.hierarchical for u in selection.units]
    seconds = time.perf_counter() - started
    print(f"{len(examples)} articles of {args.dataset}, {seconds:.1f} s for both schedules")
    top = max(max(c) for c in counts.values())
    print(f"{'keywords':>9} " + " ".join(f"{k:>4}" for k in range(top + 1)) + "   mean")
    for name, counter in counts.items():
        values = [k for k, n in counter.items() for _ in range(n)]
        cells = " ".join(f"{counter.get(k, 0):>4}" for k in range(top + 1))
        print(f"{name:>9} {cells}   {statistics.mean(values):.2f}")
    for name, counter in stops.items():
        print(f"stop ({name}): " + ", ".join(f"{k} {v}" for k, v in counter.most_common()))
    under = sum(s < 0.5 for s in saliencies) / len(saliencies)
    print(
        f"unit saliencies: n={len(saliencies)}, median {statistics.median(saliencies):.3f}, "
        f"max {max(saliencies):.3f}, {100 * under:.0f}% below 0.5"
    )


if __name__ == "__main__":
    main()
