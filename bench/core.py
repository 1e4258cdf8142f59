"""Speed of the core on this machine: check latency, BM25 index and queries, overhead.

    .venv/bin/python bench/core.py [--queries 500] [--claims 8]
    .venv/bin/python bench/core.py --only rag --claims 20 --answers after.json

Prints one table with each figure, its target and the ratio figure/target (below 1 meets
the target). Every measurement uses a fresh cache directory, so no earlier run helps.
``--only rag`` times the warm rag checks alone; ``--answers`` writes each verdict, so two
runs (before and after a change) can be compared answer by answer. The CPU time other
processes took during the warm checks is printed: on a shared machine, a figure measured
while it was not near zero is not this code's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Checked once before the timed ones, so the model and index are loaded; not timed.
WARM_UP = "Marie Curie won two Nobel Prizes."
CLAIMS = [
    "The Eiffel Tower is in Paris.",
    "Mount Everest is the highest mountain on Earth.",
    "The Great Wall of China is visible from the Moon.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Albert Einstein was born in Germany.",
    "The Amazon is the longest river in Africa.",
    "Jupiter is the largest planet in the Solar System.",
    "Shakespeare wrote Don Quixote.",
    "The Pacific is the largest ocean.",
    "The Moon orbits the Earth.",
    "Tokyo is the capital of Japan.",
    "The Nile flows into the Mediterranean Sea.",
    "Isaac Newton discovered penicillin.",
    "Mars has two moons.",
    "Leonardo da Vinci painted the Mona Lisa.",
    "The Sahara is the largest hot desert in the world.",
    "Mount Kilimanjaro is in Kenya.",
    "Venus is the closest planet to the Sun.",
    "The Beatles were a band from Liverpool.",
    "Mount Fuji is the highest mountain in Japan.",
]


def verity_bin() -> str:
    return str(Path(sys.executable).with_name("verity"))


def timed_cli(claim: str, cache: str) -> float:
    env = {**os.environ, "VERITY_CACHE_DIR": cache}
    start = time.perf_counter()
    proc = subprocess.run(
        [verity_bin(), "check", claim, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"verity check failed: {proc.stderr[-2000:]}")
    json.loads(proc.stdout)
    return elapsed


def bench_cli() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        cold_first = timed_cli(CLAIMS[0], cache)  # index build + model load + answer
        cold = timed_cli(CLAIMS[1], cache)  # new process, index on disk, new claim
        cached = timed_cli(CLAIMS[1], cache)  # same claim: answer from the cache
    return {"cold_first": cold_first, "cold": cold, "cached": cached}


def bench_index(queries: int) -> dict[str, float]:
    from verity.sources.offline_wiki import OfflineWiki, data_file

    with tempfile.TemporaryDirectory() as cache:
        os.environ["VERITY_CACHE_DIR"] = cache
        wiki = OfflineWiki()
        start = time.perf_counter()
        wiki.warm_up()
        build = time.perf_counter() - start
        start = time.perf_counter()
        OfflineWiki().warm_up()
        load = time.perf_counter() - start
        pages = list(json.loads(data_file().read_text(encoding="utf-8")).values())
        rng = random.Random(0)
        # Queries shaped like claims: a page's title with words from its description.
        samples = []
        for _ in range(queries):
            page = rng.choice(pages)
            samples.append(f"{page['title']} is {page.get('description') or 'notable'}")
        times = []
        for q in samples:
            t0 = time.perf_counter()
            wiki.search(q, 5)
            times.append(time.perf_counter() - t0)
    times.sort()
    return {
        "build": build,
        "load": load,
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": times[int(0.95 * (len(times) - 1))] * 1000,
    }


def busy_cpu_seconds() -> float | None:
    """CPU time the whole machine has spent busy so far (Linux), else None."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def bench_overhead(claims: int, answers: Path | None = None) -> dict[str, float]:
    """Wall time of warm rag checks against time spent inside the model backend."""
    from verity.domain import Claim
    from verity.errors import VerityError
    from verity.llm.client import ModelClient
    from verity.llm.local_gguf import LocalBackend
    from verity.llm.spec import ModelSet
    from verity.methods.base import load_method
    from verity.sources.offline_wiki import OfflineWiki

    class TimedBackend(LocalBackend):
        inside = 0.0

        def complete(self, messages, params, schema=None):
            t0 = time.perf_counter()
            try:
                return super().complete(messages, params, schema)
            finally:
                TimedBackend.inside += time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as cache:
        os.environ["VERITY_CACHE_DIR"] = cache
        wiki = OfflineWiki()
        backend = TimedBackend()
        method = load_method("rag", models=ModelSet(ModelClient(backend)), sources=[wiki])
        method.verify(Claim(text=WARM_UP))  # warm: model and index loaded
        TimedBackend.inside = 0.0
        walls = []
        verdicts: dict[str, object] = {}
        busy0, own0 = busy_cpu_seconds(), own_cpu_seconds()
        start = time.perf_counter()
        failed = 0
        for text in CLAIMS[:claims]:
            t0 = time.perf_counter()
            try:
                verdict = method.verify(Claim(text=text))
                verdicts[text] = {
                    "label": verdict.label.value,
                    "confidence": verdict.confidence,
                    "explanation": verdict.explanation,
                    "evidence": [ev.ref for ev in verdict.evidence],
                }
            except VerityError as exc:
                failed += 1  # the time still counts: the method did the work
                verdicts[text] = {"error": type(exc).__name__}
            walls.append(time.perf_counter() - t0)
        wall = time.perf_counter() - start
        busy1 = busy_cpu_seconds()
        others = (
            busy1 - busy0 - (own_cpu_seconds() - own0)
            if busy0 is not None and busy1 is not None
            else float("nan")
        )
    if answers is not None:
        answers.write_text(json.dumps(verdicts, indent=1) + "\n", encoding="utf-8")
    walls.sort()
    return {
        "warm_p50": statistics.median(walls),
        "warm_p95": walls[int(0.95 * (len(walls) - 1))],
        "warm_max": walls[-1],
        "others_cpu": others,
        "overhead_pct": 100 * (wall - TimedBackend.inside) / wall,
        "wall": wall,
        "inside": TimedBackend.inside,
        "failed": failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--claims", type=int, default=8, help=f"warm checks, at most {len(CLAIMS)}")
    parser.add_argument("--only", choices=["cli", "index", "rag"], help="run one part alone")
    parser.add_argument("--answers", type=Path, help="write each warm check's verdict here")
    args = parser.parse_args()
    if not 1 <= args.claims <= len(CLAIMS):
        parser.error(f"--claims must be between 1 and {len(CLAIMS)}")

    # In this order, as before --only existed: the index is built before the warm checks.
    cli = bench_cli() if args.only in (None, "cli") else None
    index = bench_index(args.queries) if args.only in (None, "index") else None
    over = bench_overhead(args.claims, args.answers) if args.only in (None, "rag") else None
    rows: list[tuple[str, float, str, float | None]] = []
    if cli is not None:
        rows += [
            ("cold check, new cache (index build + model load)", cli["cold_first"], "s", None),
            ("cold check, new process, index on disk", cli["cold"], "s", 10.0),
            ("check answered from the model cache (new process)", cli["cached"], "s", None),
        ]
    if over is not None:
        rows += [
            (f"warm check p50 over {args.claims} claims (in process)", over["warm_p50"], "s", 3.0),
            ("warm check p95", over["warm_p95"], "s", None),
            ("warm check max", over["warm_max"], "s", 3.0),
        ]
    if index is not None:
        rows += [
            ("BM25 index build, offline wiki", index["build"], "s", 5.0),
            ("BM25 index load from disk", index["load"], "s", None),
            (f"query p50 over {args.queries} queries", index["p50_ms"], "ms", 5.0),
            (f"query p95 over {args.queries} queries", index["p95_ms"], "ms", None),
        ]
    if over is not None:
        rows.append(("rag overhead: wall time outside the model", over["overhead_pct"], "%", 5.0))
    print(f"{'measure':55} {'value':>10} {'target':>8} {'ratio':>7}")
    for name, value, unit, target in rows:
        tgt = f"{target:g} {unit}" if target is not None else "-"
        ratio = f"{value / target:.2f}" if target else "-"
        print(f"{name:55} {value:>8.2f} {unit:<2}{tgt:>7} {ratio:>7}")
    if over is not None:
        print(
            f"\nrag: {over['wall']:.2f} s wall, {over['inside']:.2f} s inside the model backend, "
            f"{over['failed']} of {args.claims} claims without a valid answer; other processes "
            f"used {over['others_cpu']:.1f} CPU-s meanwhile"
        )


if __name__ == "__main__":
    main()
