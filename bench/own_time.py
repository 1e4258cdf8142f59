"""Where a method's own time goes: cProfile over checks against an instant endpoint.

    .venv/bin/python bench/own_time.py zofia [--sample 4] [--top 30] [--sort tottime]

The loopback endpoint of `bench/speed.py` answers at once, so everything profiled is
verity's own work. The first example (loads: spaCy, the encoder, indexes, the graph) is
run before profiling starts; the rest are profiled one after the other, with the work a
method hands to worker threads (`asyncio.to_thread`) run inline: cProfile sees one
thread, and the profile then holds all of verity's own work. Prints the
functions with the most cumulative time (or ``--sort tottime``), with the profiled
seconds per example. Profiles of each method are kept in docs/profiles/.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from faults.latency import LatencyEndpoint  # noqa: E402
from speed import SETUPS, usual_path  # noqa: E402
from verity.api import shared_source  # noqa: E402
from verity.bench.datasets import load_dataset  # noqa: E402
from verity.bench.runner import BenchConfig, prepare  # noqa: E402
from verity.llm.spec import ModelSet, ModelSettings  # noqa: E402
from verity.methods.base import load_method  # noqa: E402


async def _inline(func, /, *args, **kwargs):  # type: ignore[no-untyped-def]
    return func(*args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("method")
    parser.add_argument("--sample", type=int, default=4)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="cumulative", choices=("cumulative", "tottime"))
    args = parser.parse_args()
    dataset, sources = SETUPS[args.method.partition("/")[0]]
    instant = LatencyEndpoint(delay=0.0, answer=usual_path)
    with instant as endpoint, tempfile.TemporaryDirectory() as out:
        models = ModelSet.from_settings(
            ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        )
        config = BenchConfig(
            dataset=dataset, methods=(args.method,), out=Path(out), sample=args.sample + 1,
            seed=0, sources=sources,
        )  # fmt: skip
        run = prepare(
            config,
            load=load_dataset,
            build=lambda name, given: load_method(name, models=models, sources=given),
            sources=lambda split: [shared_source(s) for s in sources],
        )
        method = run.methods[args.method]
        first, *rest = run.sample
        started = time.perf_counter()
        method.verify(first.subject)
        print(f"first example (loads included): {time.perf_counter() - started:.2f} s")
        asyncio.to_thread = _inline  # type: ignore[assignment]
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for example in rest:
            method.verify(example.subject)
        profiler.disable()
        took = (time.perf_counter() - started) / max(1, len(rest))
        run.close()
    print(f"{args.method}: {took:.3f} s per example over {len(rest)} (endpoint instant)")
    pstats.Stats(profiler).strip_dirs().sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
