"""Start-up: how long the quick commands take, and where a first check's time goes.

    .venv/bin/python bench/startup.py [--runs 5] [--delay 0.05] [--methods wkgfc,zofia]

First, the best of ``--runs`` wall times of ``verity --help``, ``verity sources`` and
``verity models``, each a new process of the installed console script (``--methods ''``
stops there).

Then, per method, a new process times each load on its own, in the order a check meets
them: the imports (verity's API, the method's modules and its sources' modules), the
model client and the method, spaCy (the NER pipeline and the sentence splitter) and the
sentence encoder, the graph store with its name index (``kg-local``), the source index
(``offline-wiki``); then two checks of the same subject against the loopback endpoint of
`bench/speed.py` (``--delay`` s per call, answers that keep the method on its usual path),
with the model calls of each. A library's import is counted with the load that needs it
(torch with the encoder). A second process runs the same two checks with nothing loaded
beforehand, as ``verity check`` or ``verity.check`` does: its first check carries every
load. Both checks make the same calls, so what the first costs over the second is what
it loaded; with every load once per process, the second checks of both processes cost
the same.

WKGFC checks a FEVER claim with kg-local (``$VERITY_KG_FILE``, else the shared subset) and
offline-wiki; ZoFia a GossipCop article with offline-wiki: the first example of each
dataset.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERITY = ROOT / ".venv" / "bin" / "verity"
COMMANDS = (["--help"], ["sources"], ["models"])
SETUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "wkgfc": ("fever", ("kg-local", "offline-wiki")),
    "zofia": ("gossipcop", ("offline-wiki",)),
}
ROWS = (
    ("imports", "imports"),
    ("client", "model client + method"),
    ("spacy", "spaCy load (NER, splitter)"),
    ("encoder", "sentence encoder load"),
    ("graph", "graph store + names"),
    ("index", "source index load"),
    ("first", "first check"),
    ("second", "second check"),
)
LAZY_ROWS = (
    ("imports", "imports"),
    ("client", "model client + method"),
    ("first", "first check (all loads)"),
    ("second", "second check"),
)


def best_of(argv: list[str], runs: int) -> float:
    """The shortest wall time of ``verity ARGV`` over ``runs`` new processes."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([str(VERITY), *argv], capture_output=True, check=True)
        best = min(best, time.perf_counter() - started)
    return best


def subject(method: str) -> dict[str, Any]:
    """The first example of the method's dataset, as JSON for the child process."""
    from verity.bench.datasets import load_dataset

    first = load_dataset(SETUPS[method][0]).examples[0].subject
    return {"kind": type(first).__name__, **first.model_dump(mode="json")}


def child(method: str, delay: float, warm: bool, given: dict[str, Any]) -> dict[str, Any]:
    """Time the loads and two checks in this (new) process; seconds and calls by row."""
    sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint
    sys.path.insert(0, str(ROOT / "bench"))
    from faults.latency import LatencyEndpoint
    from speed import usual_path

    found: dict[str, Any] = {}
    clock = time.perf_counter()

    def lap(row: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        found[row] = now - clock
        clock = now

    with LatencyEndpoint(delay=delay, answer=usual_path) as endpoint:
        clock = time.perf_counter()
        from verity.api import shared_source
        from verity.domain import Article, Claim
        from verity.llm.spec import ModelSet, ModelSettings
        from verity.methods.base import load_method, method_class

        method_class(method)
        sources = [shared_source(spec) for spec in SETUPS[method][1]]
        kind = {"Claim": Claim, "Article": Article}[given.pop("kind")]
        checked = kind.model_validate(given)
        lap("imports")
        settings = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        built = load_method(method, models=ModelSet.from_settings(settings), sources=sources)
        lap("client")
        if warm:
            from verity.nlp.embed import default_encoder
            from verity.nlp.ner import EntityRecognizer
            from verity.nlp.text import split_sentences

            EntityRecognizer().warm_up()
            split_sentences("The splitter loads on first use. This is it.")
            lap("spacy")
            default_encoder().warm_up()
            lap("encoder")
            for source in sources:
                graph = getattr(source, "graph", None)
                if graph is not None:
                    graph.warm_up()
                    # More matches than any name has exactly: the fuzzy keys load too.
                    graph.link("Paris", k=50)
            lap("graph")
            for source in sources:
                if getattr(source, "graph", None) is None and hasattr(source, "warm_up"):
                    source.warm_up()
            lap("index")
        for row in ("first", "second"):
            before = endpoint.count
            built.verify(checked)
            lap(row)
            found[f"{row}_calls"] = endpoint.count - before
    return found


def run_child(method: str, delay: float, warm: bool) -> dict[str, Any]:
    """`child` in a new process of this interpreter."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", method, "--delay", str(delay),
         *(["--warm"] if warm else [])],
        input=json.dumps(subject(method)), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{method} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cell(result: dict[str, Any], row: str) -> str:
    if row not in result:
        return "-"
    calls = result.get(f"{row}_calls")
    return f"{result[row]:.2f}" + (f" ({calls} calls)" if calls is not None else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--methods", default="wkgfc,zofia")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        given = json.loads(sys.stdin.read())
        print(json.dumps(child(args.child, args.delay, args.warm, given)))
        return
    print(f"command               best of {args.runs}, s")
    for argv in COMMANDS:
        print(f"verity {' '.join(argv):14} {best_of(argv, args.runs):8.3f}")
    methods = [m for m in args.methods.split(",") if m]
    if not methods:
        return
    results = {}
    for method in methods:
        results[method] = (
            run_child(method, args.delay, True),
            run_child(method, args.delay, False),
        )
    print(f"\nfirst checks in a new process, endpoint delay {args.delay} s; seconds")
    print(f"{'':26}" + "".join(f"{m:>20}" for m in methods))
    for row, label in ROWS:
        print(f"{label:26}" + "".join(f"{cell(results[m][0], row):>20}" for m in methods))
    print("nothing loaded beforehand:")
    for row, label in LAZY_ROWS:
        print(f"{label:26}" + "".join(f"{cell(results[m][1], row):>20}" for m in methods))


if __name__ == "__main__":
    main()
