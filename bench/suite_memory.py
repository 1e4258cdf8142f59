"""What the test suite's process holds on to: resident memory after each test.

    VERITY_TEST_RSS=/tmp/rss.tsv .venv/bin/python -m pytest      # writes one line per test
    .venv/bin/python bench/suite_memory.py /tmp/rss.tsv [--top 15]

Prints the memory after the last test and the highest seen, then the tests after which
the resident set grew most: where a model, an index or a cache was loaded and kept.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    rows = []
    for line in args.file.read_text(encoding="utf-8").splitlines():
        mb, _, test = line.partition("\t")
        rows.append((float(mb), test))
    if not rows:
        print("no tests recorded")
        return
    print(f"{len(rows)} tests; last {rows[-1][0]:.0f} MB, highest {max(r[0] for r in rows):.0f} MB")
    growth = [(after - before, test) for (before, _), (after, test) in itertools.pairwise(rows)]
    growth.sort(reverse=True)
    print(f"{'grew MB':>8}  test")
    for grew, test in growth[: args.top]:
        print(f"{grew:>8.0f}  {test}")


if __name__ == "__main__":
    main()
