"""Throughput of a benchmark run at 1, 8 and 32 examples in flight, against a fixed latency.

    .venv/bin/python bench/concurrency.py [--delay 0.5] [--method direct] [--claims 256]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds, so a run's throughput is set by how many calls verity keeps in
flight. Each level runs the benchmark harness (`verity bench`'s runner) on FEVER claims
with ``concurrency`` = 1, 8, 32 and no answer cache, after one warm-up example (loads are
not throughput). Prints, per level: claims, seconds, claims per second, the ratio to the
throughput at 1 and the ideal (the level itself), and the most requests the endpoint ever
had in flight. The target: at least 0.8 of the ideal at 8 and 32.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint lives with the tests

from faults.latency import LatencyEndpoint  # noqa: E402
from verity.bench.datasets import load_dataset  # noqa: E402
from verity.bench.runner import BenchConfig, prepare  # noqa: E402
from verity.llm.spec import ModelSet, ModelSettings  # noqa: E402
from verity.methods.base import load_method  # noqa: E402


def timed_run(endpoint: LatencyEndpoint, method: str, claims: int, concurrency: int) -> float:
    """Seconds for ``claims`` claims at ``concurrency``, in a fresh store and models."""
    models = ModelSet.from_settings(
        ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
    )
    with tempfile.TemporaryDirectory() as out:
        config = BenchConfig(
            dataset="fever",
            methods=(method,),
            out=Path(out),
            sample=claims,
            seed=concurrency,
            sources=(),
            concurrency=concurrency,
        )
        run = prepare(
            config,
            load=load_dataset,
            build=lambda name, given: load_method(name, models=models, sources=given),
            sources=lambda split: [],
        )
        try:
            started = time.perf_counter()
            run.run(warn=lambda line: print(f"  {line}"))
            return time.perf_counter() - started
        finally:
            run.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--method", default="direct")
    parser.add_argument("--claims", type=int, default=256)
    args = parser.parse_args()
    with LatencyEndpoint(delay=args.delay) as endpoint:
        timed_run(endpoint, args.method, 1, 1)  # warm-up: imports, dataset, client
        print(f"{args.method}, endpoint delay {args.delay} s")
        print(f"{'in flight':>9} {'claims':>6} {'seconds':>8} {'claims/s':>8} {'ratio':>6} "
              f"{'ideal':>5} {'peak':>5}")  # fmt: skip
        base = None
        for level in (1, 8, 32):
            # At 1, fewer claims: the figure is the same and the run 8 times shorter.
            claims = max(8, args.claims // 8) if level == 1 else args.claims
            endpoint.reset()
            seconds = timed_run(endpoint, args.method, claims, level)
            rate = claims / seconds
            base = base or rate
            print(
                f"{level:>9} {claims:>6} {seconds:>8.2f} {rate:>8.2f} {rate / base:>6.1f} "
                f"{level:>5} {endpoint.peak:>5}"
            )


if __name__ == "__main__":
    main()
