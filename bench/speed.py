"""Each method's calls, critical path and own time against an endpoint with a fixed latency.

    .venv/bin/python bench/speed.py [--delay 0.5] [--sample 4] [--methods zofia,local,wkgfc]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds with a valid made-up answer, so the time a check takes is the
model calls that stand one after another, times the delay, plus verity's own work. Each
method runs in its own process (its peak memory is its own) on a seeded sample of its
paper's data: ZoFia on GossipCop (offline-wiki and the bench-news stand-in), LoCal on
HOVER (offline-wiki), WKGFC on FEVER (kg-local and offline-wiki), direct and rag on FEVER.
The answers are made so that each method takes its usual path: LoCal gets a program of
one question and two facts (one of them about the question's answer), every fact holds
and both evaluators accept the first solution; ZoFia's judge asks for a second round,
then rules; WKGFC's policy searches the web once after the beam, then decides.

Prints, per method: examples, model calls, calls on the critical path (those that stood
one after another; with no such figure in the verdicts, every call), seconds per example
and non-model seconds per example (time with none of the check's model calls in flight;
without that figure, the wall time minus the time inside calls), the overhead share
(non-model over wall), the first example's seconds apart (loads), and peak memory. All
but the first example are averaged: loads happen once per process.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint lives with the tests

SETUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "zofia": ("gossipcop", ("offline-wiki",)),
    "local": ("hover", ("offline-wiki",)),
    "wkgfc": ("fever", ("kg-local", "offline-wiki")),
    "rag": ("fever", ("offline-wiki",)),
    "direct": ("fever", ()),
}
_ROUND = re.compile(r"Round (\d+), con")
_SEARCHED = re.compile(r"^\d+\. webSearch", re.MULTILINE)


def usual_path(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    """Answers that keep a method on its usual path, where a made-up one would not."""
    props = (schema or {}).get("properties", {})
    if "deduction" in props:
        program = {
            "questions": [{"text": "Who built the tower?"}],
            "facts": [{"text": "{q1} was an engineer."}, {"text": "The tower is in Paris."}],
            "deduction": "f1 and f2",
        }
        return {key: value for key, value in program.items() if key in props}
    # LoCal's evaluators both accept at once, as for most claims in the paper (5.6).
    for verdict in ("claim_is_true", "contradiction"):
        if verdict in props:
            return {"reason": "It follows.", verdict: True}
    if props.get("answer", {}).get("type") == "boolean":
        return {"reason": "It says so.", "answer": True}
    # WKGFC's policy searches the web once after the beam, then asks for the verdict.
    if "verdict" in props.get("action", {}).get("enum", []):
        said = messages[-1]["content"] if messages else ""
        searched = _SEARCHED.search(said) is not None
        move = {"reasoning": "Next.", "action": "verdict" if searched else "webSearch",
                "entities": [], "query": "the claim's subject"}  # fmt: skip
        return {key: value for key, value in move.items() if key in props}
    if set(props) == {"ruling"} and "I" in props["ruling"].get("enum", []):
        said = messages[-1]["content"] if messages else ""
        rounds = max((int(n) for n in _ROUND.findall(said)), default=0)
        return {"ruling": "I" if rounds < 2 else "R"}
    return None


def one(method: str, sample: int, delay: float, out: Path) -> dict[str, Any]:
    """Run one method on its sample in this process; the figures as a dict."""
    from faults.latency import LatencyEndpoint
    from verity.api import shared_source
    from verity.bench.datasets import load_dataset
    from verity.bench.runner import BenchConfig, prepare
    from verity.llm.spec import ModelSet, ModelSettings
    from verity.methods.base import load_method

    dataset, sources = SETUPS[method.partition("/")[0]]
    with LatencyEndpoint(delay=delay, answer=usual_path) as endpoint:
        settings = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        models = ModelSet.from_settings(settings)
        config = BenchConfig(
            dataset=dataset, methods=(method,), out=out, sample=sample, seed=0, sources=sources
        )
        run = prepare(
            config,
            load=load_dataset,
            build=lambda name, given: load_method(name, models=models, sources=given),
            sources=lambda split: [shared_source(s) for s in sources],
        )
        started = time.perf_counter()
        try:
            run.run(warn=lambda line: None)
            rows = list(run.store.rows(run.run_id, method))
        finally:
            run.close()
        total = time.perf_counter() - started
    return {
        "method": method,
        "rows": [{"usage": r.usage, "extra": r.extra, "error": r.error} for r in rows],
        "total": total,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def figures(result: dict[str, Any]) -> dict[str, float]:
    """Means over every example but the first, and the first apart."""
    rows = [r for r in result["rows"] if r["usage"]]
    if not rows:
        return {}

    def of(row: dict[str, Any]) -> tuple[float, float, float, float]:
        u, wall = row["usage"], row["extra"]["wall_seconds"]
        critical = u.get("critical_calls") or u["llm_calls"]
        own = u["non_model_seconds"] if "non_model_seconds" in u else wall - u["seconds"]
        return u["llm_calls"], critical, wall, own

    rest = [of(r) for r in rows[1:]] or [of(rows[0])]
    n = len(rest)
    calls, critical, wall, own = (sum(col) / n for col in zip(*rest, strict=True))
    return {
        "n": len(rows),
        "errors": len(result["rows"]) - len(rows),
        "calls": calls,
        "critical": critical,
        "seconds": wall,
        "own": own,
        "share": own / wall if wall else 0.0,
        "first": of(rows[0])[2],
        "peak_mb": result["peak_mb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--sample", type=int, default=4)
    parser.add_argument("--methods", default="zofia,local,wkgfc,rag,direct")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.sample, args.delay, args.out)))
        return
    print(f"endpoint delay {args.delay} s; {args.sample} examples per method, the first apart")
    print(
        f"{'method':8} {'n':>2} {'err':>3} {'calls':>6} {'critical':>8} {'s/ex':>6} "
        f"{'own s':>6} {'share':>6} {'first s':>7} {'peak MB':>7}"
    )
    for method in args.methods.split(","):
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run(
                [sys.executable, __file__, "--one", method, "--sample", str(args.sample),
                 "--delay", str(args.delay), "--out", out],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
        if done.returncode != 0:
            print(f"{method:8} failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        f = figures(json.loads(done.stdout.strip().splitlines()[-1]))
        if not f:
            print(f"{method:8} no example finished")
            continue
        print(
            f"{method:8} {f['n']:>2} {f['errors']:>3} {f['calls']:>6.1f} {f['critical']:>8.1f} "
            f"{f['seconds']:>6.2f} {f['own']:>6.2f} {100 * f['share']:>5.1f}% "
            f"{f['first']:>7.1f} {f['peak_mb']:>7.0f}"
        )


if __name__ == "__main__":
    main()
