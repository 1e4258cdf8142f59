"""Each method's calls, critical path and own time against an endpoint with a fixed latency.

    .venv/bin/python bench/speed.py [--delay 0.5] [--sample 4] [--methods zofia,local,wkgfc]
    .venv/bin/python bench/speed.py --methods toe,zofia@politifact   # a row on another dataset

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds with a valid made-up answer, so the time a check takes is the
model calls that stand one after another, times the delay, plus verity's own work. Each
method runs in its own process (its peak memory is its own) on a seeded sample of its
paper's data: ZoFia on GossipCop (offline-wiki and the bench-news stand-in), LoCal on
HOVER (offline-wiki), WKGFC on FEVER (kg-local and offline-wiki), ToE on LIAR (Table II's
first dataset; its four offline tools, as the toe-t2 recipe runs them), direct and rag on
FEVER. ``METHOD@DATASET`` runs a method on another dataset (``zofia@politifact``: ZoFia
on PolitiFact's long articles). The answers are made so that each method takes its usual
path: LoCal gets a program of one question and two facts (one of them about the
question's answer), every fact holds and both evaluators accept the first solution;
ZoFia's judge asks for a second round, then rules; WKGFC's policy searches the web once
after the beam, then decides; ToE grows a tree two levels deep (`toe_answer`), every
document cleaned chunk by chunk and assessed.

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
    # Table II's LIAR, with the tools the toe-t2 recipe gives ToE offline: Wikipedia, and
    # the stand-ins for fact-checking sites, arXiv and the web (docs/datasets.md).
    "toe": ("liar", ("offline-wiki", "factcheck:offline", "arxiv:offline", "news-offline")),
    "rag": ("fever", ("offline-wiki",)),
    "direct": ("fever", ()),
}
_ROUND = re.compile(r"Round (\d+), con")
_SEARCHED = re.compile(r"^\d+\. webSearch", re.MULTILINE)
_STATEMENT = re.compile(r"<claim>\s*(.*?)\s*</claim>", re.DOTALL)
_PART = re.compile(r"^Part ([\d.]+): (.*)$", re.DOTALL)


def toe_answer(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    """ToE's analysis, judge and decomposition on a tree that grows two levels.

    The root's judge leaves it open (r 0.4), its first sub-claim is unsettled (r 0.5) and
    decomposed in turn, every other node is reliable and true (0.8, 0.8): Algorithm 1
    then evaluates five nodes, one per iteration, and stops with the last of them, when
    the root has converged (and is decisive). A sub-claim is half of its parent's words,
    named by its path (``Part 1.2: ...``), so that the judge can tell the nodes apart.
    The analysis makes the node a political factual statement (LIAR's), whose queries
    are its own words. Cleaning and assessment keep the endpoint's made-up answers:
    three statements per chunk, each document in support.
    """
    schema = schema or {}
    title, props = schema.get("title"), schema.get("properties", {})
    said = messages[-1]["content"] if messages else ""
    found = _STATEMENT.search(said)
    statement = found.group(1) if found else ""
    part = _PART.match(statement)
    path, words = (part.group(1), part.group(2)) if part else ("", statement)
    if title == "NodeAnalysis" and "counter_query" in props:
        flags = dict.fromkeys(("recent_event", "historical_fact", "opinion", "prediction"), False)
        return {"category": "political", "locale": "national", "factual_statement": True,
                **flags, "background_query": words, "supporting_query": words,
                "counter_query": f"{words} false"}  # fmt: skip
    if title == "Decomposition" and "subclaims" in props:
        cut = words.split()
        half = max(1, len(cut) // 2)
        first, second = " ".join(cut[:half]), " ".join(cut[half:]) or " ".join(cut)
        below = f"{path}." if path else ""
        return {"subclaims": [
            {"text": f"Part {below}1: {first}", "dimension": "core event", "weight": 0.6},
            {"text": f"Part {below}2: {second}", "dimension": "entity identity", "weight": 0.4},
        ]}  # fmt: skip
    if title == "Judgement" and {"veracity", "reliability"} <= set(props):
        v, r = (0.5, 0.4) if not path else (0.7, 0.5) if path == "1" else (0.8, 0.8)
        return {"explanation": "As weighed.", "veracity": v, "reliability": r}
    return None


def usual_path(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    """Answers that keep a method on its usual path, where a made-up one would not."""
    props = (schema or {}).get("properties", {})
    if (toe := toe_answer(messages, schema)) is not None:
        return toe
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
    from verity.bench.datasets import data_dir, load_dataset
    from verity.bench.runner import BenchConfig, prepare
    from verity.bench.standins import ensure_standin
    from verity.llm.spec import ModelSet, ModelSettings
    from verity.methods.base import load_method
    from verity.sources.registry import STANDINS

    row = method
    method, _, other = method.partition("@")
    dataset, sources = SETUPS[method.partition("/")[0]]
    dataset = other or dataset
    for spec in sources:
        if spec in STANDINS:  # built from the data folder on first use, as `verity bench` does
            ensure_standin(STANDINS[spec][1], data_dir())
    with LatencyEndpoint(delay=delay, answer=usual_path) as endpoint:
        settings = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        models = ModelSet.from_settings(settings)
        # On the fact-check datasets (ToE's LIAR) a bench reports a retrieving method in two
        # leakage settings; one row is timed here, the paper's.
        config = BenchConfig(
            dataset=dataset, methods=(method,), out=out, sample=sample, seed=0, sources=sources,
            leakage="paper-faithful",
        )  # fmt: skip
        run = prepare(
            config,
            load=load_dataset,
            build=lambda name, given: load_method(name, models=models, sources=given),
            sources=lambda split: [shared_source(s) for s in sources],
        )
        started = time.perf_counter()
        try:
            run.run(warn=lambda line: None)
            [name] = run.methods  # the method, or its one leakage setting's row
            rows = list(run.store.rows(run.run_id, name))
        finally:
            run.close()
        total = time.perf_counter() - started
    return {
        "method": row,
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
    parser.add_argument("--methods", default="zofia,zofia@politifact,local,wkgfc,toe,rag,direct")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.sample, args.delay, args.out)))
        return
    print(f"endpoint delay {args.delay} s; {args.sample} examples per method, the first apart")
    names = args.methods.split(",")
    w = max(8, *(len(name) for name in names))
    print(
        f"{'method':{w}} {'n':>2} {'err':>3} {'calls':>6} {'critical':>8} {'s/ex':>6} "
        f"{'own s':>6} {'share':>6} {'first s':>7} {'peak MB':>7}"
    )
    for method in names:
        with tempfile.TemporaryDirectory() as out:
            done = subprocess.run(
                [sys.executable, __file__, "--one", method, "--sample", str(args.sample),
                 "--delay", str(args.delay), "--out", out],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
        if done.returncode != 0:
            print(f"{method:{w}} failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        f = figures(json.loads(done.stdout.strip().splitlines()[-1]))
        if not f:
            print(f"{method:{w}} no example finished")
            continue
        print(
            f"{method:{w}} {f['n']:>2} {f['errors']:>3} {f['calls']:>6.1f} {f['critical']:>8.1f} "
            f"{f['seconds']:>6.2f} {f['own']:>6.2f} {100 * f['share']:>5.1f}% "
            f"{f['first']:>7.1f} {f['peak_mb']:>7.0f}"
        )


if __name__ == "__main__":
    main()
