"""What grounding adds to a check: one call after the verdict, and nothing else.

    .venv/bin/python bench/grounding_cost.py [--delay 0.5] [--claims 5]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds with a schema-valid made-up answer, so what is measured is
verity's own work with the model's latency fixed. Each method checks the same claims
with grounding off, then on (a fresh answer cache for each run, so no answer is reused):
the table gives the seconds per check, the requests the endpoint received, and the time
grounding added per check beside the one call's latency it cannot avoid. The sentence
splitter's one-time load is timed first, apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint

from faults.latency import LatencyEndpoint  # noqa: E402
from verity.api import load_method  # noqa: E402
from verity.domain import Claim, Evidence  # noqa: E402
from verity.grounding.cite import sentences_of  # noqa: E402
from verity.llm.spec import ModelSettings  # noqa: E402

CLAIMS = [
    "The Eiffel Tower is in Paris.",
    "Marie Curie won two Nobel Prizes.",
    "The Great Wall of China is visible from the Moon.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Mount Everest is the tallest mountain on Earth.",
]
PASSAGES = [
    Evidence(text="The Eiffel Tower is a lattice tower in Paris, France.", source="gold"),
    Evidence(text="Marie Curie won the 1903 and 1911 Nobel Prizes.", source="gold"),
    Evidence(text="Mount Everest is Earth's highest mountain above sea level.", source="gold"),
]


def run(method: str, mode: str, claims: list[str], endpoint: LatencyEndpoint) -> list[float]:
    """Seconds per check of ``claims`` with grounding ``mode``, on a fresh cache."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["VERITY_CACHE_DIR"] = cache
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url)
        built = load_method(method, model=model, sources=(), grounding=mode)
        seconds = []
        for text in claims:
            started = time.perf_counter()
            built.verify(Claim(text=text), evidence=PASSAGES)
            seconds.append(time.perf_counter() - started)
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--claims", type=int, default=5)
    parser.add_argument("--methods", default="direct,rag")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "loopback")
    # Distinct claims: a repeated one would be answered from the run's cache.
    claims = [f"{CLAIMS[i % len(CLAIMS)]} (case {i + 1})" for i in range(args.claims)]
    # The sentencizer loads once a process; timed apart so the table shows the cost a check.
    started = time.perf_counter()
    sentences_of("It loads. Once.")
    loaded = time.perf_counter() - started
    print(f"endpoint delay {args.delay:.2f} s, {len(claims)} claims per run; "
          f"the sentence splitter loaded once in {loaded:.2f} s\n")  # fmt: skip
    print(f"{'method':8} {'grounding':9} {'s/check':>8} {'requests':>8} {'added s':>8} "
          f"{'added - delay':>13}")  # fmt: skip
    with LatencyEndpoint(delay=args.delay) as endpoint:
        for method in args.methods.split(","):
            base = None
            for mode in ("off", "on"):
                endpoint.reset()
                seconds = statistics.mean(run(method, mode, claims, endpoint))
                added = "" if base is None else f"{seconds - base:8.3f}"
                over = "" if base is None else f"{seconds - base - args.delay:13.3f}"
                print(f"{method:8} {mode:9} {seconds:8.3f} {endpoint.count:8d} {added:>8} "
                      f"{over:>13}")  # fmt: skip
                base = seconds if base is None else base


if __name__ == "__main__":
    main()
