"""ZoFia's stage 1 per article, by article length: entity recognition, encoding, SC-MMR.

    .venv/bin/python bench/zofia_stage1.py [--dataset politifact] [--sample 30] [--repeat 2]

No model is called and no source is read: `KeywordSelector.select` on each article of a
seeded sample, after one article to load spaCy and the encoder (a check pays those loads
once per process). Each article is selected ``--repeat`` times and its best time kept,
so that other work on the machine shows less. Prints the seconds per article in bands of
length, with the share that entity recognition takes, and the total.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from verity.bench.datasets import load_dataset
from verity.methods.zofia.keywords import KeywordSelector
from verity.nlp.ner import EntityRecognizer
from verity.nlp.text import split_sentences

BANDS = ((0, 2_000), (2_000, 5_000), (5_000, 12_000), (12_000, 10**9))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="politifact")
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    examples = list(load_dataset(args.dataset).examples)
    random.Random(args.seed).shuffle(examples)
    texts = [e.subject.text for e in examples[: args.sample + 1]]
    recognizer = EntityRecognizer()
    selector = KeywordSelector(recognizer)
    selector.select(texts[0])  # loads
    rows: list[tuple[int, float, float]] = []
    for text in texts[1:]:
        whole = ner = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            selector.select(text)
            whole = min(whole, time.perf_counter() - started)
            started = time.perf_counter()
            recognizer.analyse_many(split_sentences(text))
            ner = min(ner, time.perf_counter() - started)
        rows.append((len(text), whole, ner))
    print(f"{args.dataset}: {len(rows)} articles, best of {args.repeat}")
    print(f"{'characters':>16} {'n':>3} {'mean s':>7} {'max s':>6} {'NER share':>9}")
    for low, high in BANDS:
        band = [r for r in rows if low <= r[0] < high]
        if band:
            name = f"{low:,}-{high:,}" if high < 10**9 else f"{low:,}+"
            mean = statistics.mean(r[1] for r in band)
            share = sum(r[2] for r in band) / sum(r[1] for r in band)
            print(f"{name:>16} {len(band):>3} {mean:>7.3f} {max(r[1] for r in band):>6.3f} "
                  f"{100 * share:>8.0f}%")  # fmt: skip
    total = sum(r[1] for r in rows)
    print(f"{'all':>16} {len(rows):>3} {total / len(rows):>7.3f} "
          f"(mean {statistics.mean(r[0] for r in rows):,.0f} characters)")  # fmt: skip


if __name__ == "__main__":
    main()
