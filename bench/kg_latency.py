"""Latency of the offline knowledge graph (kg-local): bulk load, open, link, one-hop expansion.

    .venv/bin/python bench/kg_latency.py [--seeds 50] [--file PATH] [--reuse] [--templates]
    .venv/bin/python bench/kg_latency.py --wkgfc 4 [--templates]

Loads the default graph file ($VERITY_KG_FILE, else ../shared/kg/wikidata_subset.nt.gz)
into a fresh temporary store and reports the bulk-load and name-index times, then the
time a new process-like open takes. Seeds are linked from the entity names below (the
first match of each; misses are listed). For every seed it runs the one-hop calls a
WKGFC-style method makes, one query each: neighbours out and in, relations out and in,
follow of "instance of" (P31) out and in from the seed and Q5, and prints p50/p95
latency per call, with the mean number of rows. --reuse opens the store under the verity
cache instead (no load time measured; built there if missing).

--wkgfc N checks N + 1 FEVER claims with WKGFC over kg-local and offline-wiki, as
bench/speed.py does, against a loopback endpoint that answers at once, and prints each
query shape's count, total and largest time over all checks but the first (loads).
--templates runs one-property follows as SPARQL instead of reading them from the store's
indexes (docs/kg.md): the rows are the same, the time is what they cost before.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from verity.kg.base import percentile
from verity.kg.local import LocalGraph
from verity.kg.store import DEFAULT_STORE, kg_file, load_store

ROOT = Path(__file__).resolve().parents[1]

# Subjects of the kind FEVER and LIAR claims are about: people, places, organisations,
# films. The subset is partial, so some are missing; they are listed, not fatal.
NAMES = [
    "Barack Obama", "Tom Hanks", "Donald Trump", "Hillary Clinton", "George W. Bush",
    "Bill Clinton", "Joe Biden", "Angela Merkel", "Vladimir Putin", "Elizabeth II",
    "Albert Einstein", "Marie Curie", "Isaac Newton", "Charles Darwin", "William Shakespeare",
    "Leonardo da Vinci", "Pablo Picasso", "Michael Jackson", "Elvis Presley", "Madonna",
    "Beyoncé", "Taylor Swift", "Steven Spielberg", "Quentin Tarantino", "Meryl Streep",
    "Leonardo DiCaprio", "Brad Pitt", "Angelina Jolie", "Johnny Depp", "Oprah Winfrey",
    "Paris", "London", "New York City", "Tokyo", "Berlin", "Moscow", "Beijing", "Chicago",
    "Los Angeles", "Canada", "Germany", "France", "Japan", "Brazil", "Australia",
    "Microsoft", "Apple Inc.", "Google", "Amazon", "United Nations", "NASA",
    "Harvard University", "Titanic", "The Godfather", "Star Wars", "Avatar",
    "Forrest Gump", "Inception", "The Beatles", "Mount Everest",
]  # fmt: skip
CALLS = (
    ("neighbours out", lambda kg, q: kg.neighbours([q], "out", limit=100)),
    ("neighbours in", lambda kg, q: kg.neighbours([q], "in", limit=100)),
    ("relations out", lambda kg, q: kg.relations([q], "out")),
    ("relations in", lambda kg, q: kg.relations([q], "in")),
    # Beams hold several entities, and a one-property SPARQL follow from two or more
    # seeds scans the whole property: "human" (Q5) is the second seed.
    ("follow out P31", lambda kg, q: kg.follow([q, "Q5"], ["P31"], "out", limit=50)),
    ("follow in P31", lambda kg, q: kg.follow([q, "Q5"], ["P31"], "in", limit=50)),
)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=50, help="how many linked seeds to expand")
    parser.add_argument("--file", type=Path, default=None, help="graph file (default: kg_file())")
    parser.add_argument("--reuse", action="store_true", help="use the cached default store")
    parser.add_argument(
        "--templates", action="store_true", help="run one-property follows as SPARQL"
    )
    parser.add_argument("--wkgfc", type=int, default=0, help="profile N WKGFC checks instead")
    args = parser.parse_args()
    if args.wkgfc:
        wkgfc_shapes(args.wkgfc, templates=args.templates)
        return

    source = kg_file(args.file)
    with tempfile.TemporaryDirectory(prefix="kg-bench-") as tmp:
        if args.reuse:
            root, store = None, DEFAULT_STORE
            print(f"store: the cached default store of {source}")
        else:
            root, store = Path(tmp), "bench"
            start = time.perf_counter()
            info = load_store(source, store, root=root)
            total = time.perf_counter() - start
            print(f"graph: {source} ({info.triples:,} triples, {info.entities:,} labelled items)")
            print(
                f"bulk load {info.load_seconds:.2f} s + name index {info.index_seconds:.2f} s "
                f"= {total:.2f} s in all"
            )

        start = time.perf_counter()
        kg = LocalGraph(store, file=source, root=root)
        kg.warm_up()
        kg.index_reads = not args.templates
        print(f"open ({kg.origin}): {(time.perf_counter() - start) * 1000:.1f} ms")

        seeds, missing, link_seconds = [], [], []
        for name in NAMES:
            start = time.perf_counter()
            found = kg.link(name, k=1)
            link_seconds.append(time.perf_counter() - start)
            if found:
                seeds.append(found[0].qid)
            else:
                missing.append(name)
            if len(seeds) >= args.seeds:
                break
        print(f"linked {len(seeds)} seeds; not found: {', '.join(missing) or 'none'}")
        later = link_seconds[1:]
        print(
            f"link: first {ms(link_seconds[0])} ms (reads the name list), then "
            f"p50 {ms(percentile(later, 50))} ms, p95 {ms(percentile(later, 95))} ms"
        )

        print(f"\n{'call':16} {'n':>4} {'p50 ms':>9} {'p95 ms':>9} {'mean rows':>10}")
        for label, call in CALLS:
            seconds, rows = [], []
            for qid in seeds:
                start = time.perf_counter()
                rows.append(len(call(kg, qid)))
                seconds.append(time.perf_counter() - start)
            print(
                f"{label:16} {len(seconds):4d} {ms(percentile(seconds, 50))} "
                f"{ms(percentile(seconds, 95))} {statistics.fmean(rows):10.1f}"
            )
        sparql = [r.seconds for r in kg.queries.records() if r.kind == "sparql"]
        print(
            f"\nall {len(sparql)} SPARQL queries: p50 {ms(percentile(sparql, 50))} ms, "
            f"p95 {ms(percentile(sparql, 95))} ms"
        )


def wkgfc_shapes(sample: int, *, templates: bool) -> None:
    """Each query shape's count and time over WKGFC checks (bench/speed.py's setup)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))  # the loopback endpoint lives with the tests
    sys.path.insert(0, str(ROOT / "bench"))
    from faults.latency import LatencyEndpoint
    from speed import SETUPS, usual_path
    from verity.api import shared_source
    from verity.bench.datasets import load_dataset
    from verity.bench.runner import BenchConfig, prepare
    from verity.llm.spec import ModelSet, ModelSettings
    from verity.methods.base import load_method

    dataset, sources = SETUPS["wkgfc"]
    with (
        LatencyEndpoint(delay=0.0, answer=usual_path) as endpoint,
        tempfile.TemporaryDirectory() as out,
    ):
        settings = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        models = ModelSet.from_settings(settings)
        config = BenchConfig(
            dataset=dataset, methods=("wkgfc",), out=Path(out), sample=sample + 1, seed=0,
            sources=sources,
        )  # fmt: skip
        run = prepare(
            config,
            load=load_dataset,
            build=lambda name, given: load_method(name, models=models, sources=given),
            sources=lambda split: [shared_source(s) for s in sources],
        )
        method = run.methods["wkgfc"]
        graph = getattr(method, "graph", None)
        if not isinstance(graph, LocalGraph):
            raise SystemExit("wkgfc's graph is not kg-local")
        graph.index_reads = not templates
        first, *rest = run.sample
        method.verify(first.subject)
        mark = graph.queries.mark()
        for example in rest:
            method.verify(example.subject)
        records = graph.queries.records(mark)
        run.close()
    how = "SPARQL templates" if templates else "index reads for one-property follows"
    print(f"wkgfc on {len(rest)} FEVER claims after the first, {how}")
    print(f"{'shape':16} {'queries':>7} {'total ms':>9} {'max ms':>8} {'rows':>6}")
    shapes: dict[str, list[float]] = {}
    rows: dict[str, int] = {}
    for record in records:
        shapes.setdefault(record.template, []).append(record.seconds)
        rows[record.template] = rows.get(record.template, 0) + record.rows
    for shape, seconds in sorted(shapes.items(), key=lambda item: -sum(item[1])):
        print(
            f"{shape:16} {len(seconds):7d} {ms(sum(seconds))} {ms(max(seconds))[1:]} "
            f"{rows[shape]:6d}"
        )
    total = sum(r.seconds for r in records)
    print(f"{'all':16} {len(records):7d} {ms(total)}   per claim {1000 * total / len(rest):.1f} ms")


if __name__ == "__main__":
    main()
