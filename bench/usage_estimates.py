"""Measure each method's usage per example, for `verity bench/reproduce --estimate`.

Runs the shipped recipes at a small sample on the embedded model, with a cache folder of
its own (no answer comes from an earlier run, every stand-in index is built afresh), then
writes the usage every run recorded (`verity.bench.estimate`) to the shipped figures,
src/verity/bench/estimates.json. Run it on an otherwise idle machine; it prints each
recipe's wall time and, at the end, a table of the figures it wrote.

    .venv/bin/python bench/usage_estimates.py                       # every recipe (long)
    .venv/bin/python bench/usage_estimates.py --recipes zofia-t3 --sample 1 --no-write
    .venv/bin/python bench/usage_estimates.py --ship-only        # ship an earlier run's figures
    .venv/bin/python bench/usage_estimates.py --ship-only --work DIR --only defgen \\
        --how "verity bench --sample 2 on each dataset and setting shipped before"

``--only`` replaces the shipped records of the methods it names with those measured in
``--work`` (by any runs: recipes, or `verity bench` with ``VERITY_CACHE_DIR=DIR/cache``)
and keeps every other shipped record; ``--how`` says how they were measured, for the
file's protocol line. It is for a method whose calls changed while the others did not.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "src" / "verity" / "bench" / "estimates.json"
VERITY = Path(sys.executable).with_name("verity")
# WKGFC spends minutes a claim on the embedded model: one claim per column there.
SAMPLES = {"wkgfc-t1": 1, "wkgfc-t3": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--recipes", nargs="*", default=None)
    parser.add_argument("--sample", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/verity-usage-estimates"))
    parser.add_argument("--no-write", action="store_true", help="measure, do not ship")
    parser.add_argument(
        "--ship-only", action="store_true", help="ship the figures already in --work, run nothing"
    )
    parser.add_argument("--only", action="append", default=[], help="replace these methods only")
    parser.add_argument("--how", default="", help="--only: how the new records were measured")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from verity.bench.recipes.schema import recipe_names

    recipes = args.recipes or recipe_names()
    cache = args.work / "cache"
    env = {
        **os.environ,
        "VERITY_CACHE_DIR": str(cache),
        "VERITY_DATA_DIR": os.environ.get("VERITY_DATA_DIR", str(ROOT.parent / "shared/datasets")),
        "VERITY_KG_FILE": os.environ.get(
            "VERITY_KG_FILE", str(ROOT.parent / "shared/kg/wikidata_subset.nt.gz")
        ),
    }
    walls = {}
    for recipe in [] if args.ship_only else recipes:
        sample = SAMPLES.get(recipe, args.sample)
        started = time.perf_counter()
        done = subprocess.run(
            [str(VERITY), "reproduce", recipe, "--sample", str(sample), "--repeats", "1",
             "--out", str(args.work / recipe)],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        walls[recipe] = time.perf_counter() - started
        print(f"{recipe}: --sample {sample}, exit {done.returncode}, {walls[recipe]:.0f} s")
        if done.returncode not in (0, 6):
            print(done.stderr[-2000:])
    records = json.loads((cache / "estimates" / "usage.json").read_text())["records"]
    if args.only:
        shipped = _replace(list(records.values()), args.only, args.how)
    else:
        shipped = _ship(list(records.values()), recipes, args.sample)
    _show(shipped["records"])
    if not args.no_write:
        SHIPPED.write_text(_one_record_a_line(shipped), encoding="utf-8")
        print(f"wrote {SHIPPED.relative_to(ROOT)}: {len(shipped['records'])} records")


def _ship(records: list[dict], recipes: list[str], sample: int) -> dict:
    # Merge records of the same method, dataset and setting (variants' runs, seeds).
    merged: dict[tuple[str, str, str], dict] = {}
    for record in records:
        key = (record["method"], record["dataset"], record["setting"])
        if key not in merged:
            merged[key] = {**record, "model": "local"}
            continue
        for name in ("calls", "prompt_tokens", "completion_tokens"):
            a, b = merged[key][name], record[name]
            merged[key][name] = [a[0] + b[0], a[1] + b[1], a[2] + b[2], min(a[3], b[3]),
                                 max(a[4], b[4])]  # fmt: skip
    return {
        "measured": dt.date.today().isoformat(),
        "model": "local: the embedded SmolLM2-135M-Instruct",
        "protocol": (
            f"verity reproduce RECIPE --sample {sample} --repeats 1 (wkgfc-t1 and wkgfc-t3 "
            f"--sample 1) for {', '.join(recipes)}, on a fresh cache; bench/usage_estimates.py"
        ),
        "records": sorted(merged.values(), key=lambda r: (r["method"], r["dataset"], r["setting"])),
    }


def _replace(records: list[dict], methods: list[str], how: str) -> dict:
    """The shipped file with ``methods``' records measured again, every other kept."""
    old = json.loads(SHIPPED.read_text(encoding="utf-8"))
    new = _ship([r for r in records if r["method"] in methods], [], 0)["records"]
    if not new:
        raise SystemExit(f"no records of {methods} in the work folder's usage")
    kept = [r for r in old["records"] if r["method"] not in methods]
    protocol = f"{old['protocol']}; {', '.join(methods)} measured again on "
    protocol += f"{dt.date.today().isoformat()}: {how or 'see bench/usage_estimates.py'}"
    return {
        **old,
        "protocol": protocol,
        "records": sorted(kept + new, key=lambda r: (r["method"], r["dataset"], r["setting"])),
    }


def _one_record_a_line(shipped: dict) -> str:
    """The shipped file: its header, then one record a line, so that a diff reads well."""
    head = {k: v for k, v in shipped.items() if k != "records"}
    lines = [json.dumps(r) for r in shipped["records"]]
    body = ",\n  ".join(lines)
    return json.dumps(head, indent=1)[:-2] + f',\n "records": [\n  {body}\n ]\n}}\n'


def _show(records: list[dict]) -> None:
    print(f"{'method':24} {'dataset':14} {'setting':7} {'n':>3} {'calls':>7} {'prompt':>9} "
          f"{'completion':>10}")  # fmt: skip
    for r in records:
        n = r["calls"][0]
        print(
            f"{r['method']:24} {r['dataset']:14} {r['setting']:7} {n:3d} "
            f"{r['calls'][1] / n:7.1f} {r['prompt_tokens'][1] / n:9.0f} "
            f"{r['completion_tokens'][1] / n:10.0f}"
        )


if __name__ == "__main__":
    main()
