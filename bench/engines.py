"""Examples per second through the thread engine and through Ray, at 1, 4 and 16 in flight.

    .venv/bin/python bench/engines.py [--delay 0.2] [--claims 64] [--method direct]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds, so throughput is set by how many checks an engine keeps in
flight and what it costs to keep them there. Each level runs the benchmark harness on
FEVER claims (no answer cache, no sources) once per engine; Ray runs on a local cluster
started once, before any timing (its start is not a run's cost).

Prints, per engine and level: claims, seconds, claims per second, the ratio to the
thread engine at the same level, and claims per second once running: between the first
and the last result, which leaves out what a run pays once (on Ray, starting its actors
and building the method in each). The ideal at N in flight is N / delay claims per second.
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
from verity.cli.bench import MethodBuilder  # noqa: E402
from verity.engines import Engine  # noqa: E402
from verity.engines.ray import RayEngine  # noqa: E402
from verity.engines.thread import ThreadEngine  # noqa: E402
from verity.llm.spec import ModelSettings  # noqa: E402

LEVELS = (1, 4, 16)


def no_sources(_split: object) -> list:
    return []


def timed_run(
    engine: Engine, base_url: str, method: str, claims: int, concurrency: int
) -> tuple[float, float | None]:
    """Seconds for the run, and claims per second between the first and last result."""
    model = ModelSettings(spec="openai:m", base_url=base_url, cache=False)
    arrivals: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        config = BenchConfig(
            dataset="fever", methods=(method,), out=Path(out), sample=claims,
            seed=concurrency, sources=(), concurrency=concurrency, model=model,
        )  # fmt: skip
        build = MethodBuilder(model, {}, {})
        run = prepare(config, load=load_dataset, build=build, sources=no_sources)
        try:
            started = time.perf_counter()
            run.run(
                lambda _name, done, _total, acc: (
                    acc is not None and arrivals.append(time.perf_counter())
                ),
                warn=lambda line: print(f"  {line}"),
                engine=engine,
            )
            seconds = time.perf_counter() - started
        finally:
            run.close()
    steady = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) if len(arrivals) > 2 else None
    return seconds, steady


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--claims", type=int, default=64, help="claims per run at 16 in flight")
    parser.add_argument("--method", default="direct")
    args = parser.parse_args()
    with LatencyEndpoint(delay=args.delay) as endpoint, RayEngine() as ray:
        engines: dict[str, Engine] = {"thread": ThreadEngine(), "ray": ray}
        for engine in engines.values():  # warm-up: imports, dataset, first connections
            timed_run(engine, endpoint.base_url, args.method, 2, 1)
        print(f"{args.method}, endpoint delay {args.delay} s, Ray CPUs {ray.cluster.cpus()}")
        print(
            f"{'engine':>6} {'in flight':>9} {'claims':>6} {'seconds':>8} {'claims/s':>8} "
            f"{'vs thread':>9} {'running':>8} {'ideal':>6}"
        )
        thread_rate: dict[int, float] = {}
        for level in LEVELS:
            # Fewer claims at low levels: each run takes about the same time.
            claims = max(8, args.claims * level // LEVELS[-1])
            for name, engine in engines.items():
                seconds, steady = timed_run(engine, endpoint.base_url, args.method, claims, level)
                rate = claims / seconds
                thread_rate.setdefault(level, rate)
                running = f"{steady:>8.2f}" if steady is not None else f"{'-':>8}"
                print(
                    f"{name:>6} {level:>9} {claims:>6} {seconds:>8.2f} {rate:>8.2f} "
                    f"{rate / thread_rate[level]:>9.2f} {running} {level / args.delay:>6.1f}"
                )


if __name__ == "__main__":
    main()
