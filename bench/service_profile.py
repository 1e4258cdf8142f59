"""Where the server's CPU goes per request: cProfile in every thread of a live server.

    .venv/bin/python bench/service_profile.py [--requests 128] [--clients 32] [--top 30]

The set-up of `bench/service.py` (the real app under uvicorn in its own process, a
loopback endpoint answering after ``--delay`` seconds in another, the clients here):
after a warm-up (the method built, threads started), every thread of the server is
profiled by its own CPU time (`service.ThreadProfiles`) while ``--requests`` waited
``direct`` checks are sent from ``--clients`` at once. Prints the server's CPU per
request without the profiler, then the profiled functions by own time (``tottime``)
and by cumulative time, and the profile's seconds per request. cProfile slows what
it watches, pure-Python calls most: read the shares, not the seconds.

Besides the functions, two tables: the profiled CPU by kind of thread (the event loop,
the workers, the request threads), and by area (the HTTP server, pydantic, the OpenAI
SDK, the job store, ...), where a built-in's or a standard-library helper's own time
counts in the areas of its callers. cProfile loses track of some frames that enclose a
check's event loop (the worker's `_run`, the executor): their cumulative times are
missing, while the work inside them is counted.

``--save PATH`` keeps the merged profile (pstats' format) for `python -m pstats`, and
beside it one file per kind of thread (``PATH.MainThread``, ``PATH.verity-worker``).
"""

from __future__ import annotations

import argparse
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from service import child, run_endpoint, server, waited

# Where a file's own time goes, by the first pattern its path holds (verity's modules
# by their folder; the libraries by name). Checked in order.
AREAS = (
    ("verity/service/jobs.py", "job store (sqlite, JSON of jobs)"),
    ("verity/service/", "service (routes, pool, executor, events)"),
    ("verity/", "the check (method, model client, grounding, events)"),
    ("/uvicorn/", "HTTP server (uvicorn; h11 counts where it is called)"),
    ("/starlette/", "ASGI app (Starlette, FastAPI)"),
    ("/fastapi/", "ASGI app (Starlette, FastAPI)"),
    ("/pydantic", "pydantic"),
    ("/openai/", "OpenAI SDK"),
    ("/httpx/", "HTTP client (httpx, httpcore)"),
    ("/httpcore/", "HTTP client (httpx, httpcore)"),
    ("/anyio/", "event loops and threads"),
    ("/asyncio/", "event loops and threads"),
    ("/concurrent/", "event loops and threads"),
    ("threading.py", "event loops and threads"),
    ("selectors.py", "event loops and threads"),
    ("/json/", "JSON (standard library)"),
    ("/logging/", "logging"),
    ("/spacy/", "spaCy (grounding's sentences)"),
)


def area_of(path: str) -> str | None:
    """The area of a function's file; None for a built-in or a helper of the standard
    library (typing, copy, re, ...): the areas of its callers count then."""
    for pattern, area in AREAS:
        if pattern in path:
            return area
    return None


def by_area(stats: pstats.Stats) -> dict[str, float]:
    """Own time summed by area; a built-in's or a helper's time goes to its callers' areas."""
    raw = stats.stats  # type: ignore[attr-defined]
    shares: dict[Any, dict[str, float]] = {}

    def share(func: Any, seen: frozenset[Any]) -> dict[str, float]:
        if func in shares:
            return shares[func]
        area = area_of(func[0])
        if area is not None:
            return {area: 1.0}
        callers = raw[func][4] if func in raw else {}
        weights = {c: entry[2] for c, entry in callers.items() if c not in seen}
        total = sum(weights.values())
        if not total:
            return {"other": 1.0}
        found: dict[str, float] = {}
        for caller, weight in weights.items():
            for where, part in share(caller, seen | {func}).items():
                found[where] = found.get(where, 0.0) + part * weight / total
        shares[func] = found
        return found

    found: dict[str, float] = {}
    for func, (_, _, own, _, _) in raw.items():
        for area, part in share(func, frozenset()).items():
            found[area] = found.get(area, 0.0) + own * part
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--save", type=Path, default=None)
    args = parser.parse_args()
    with child(run_endpoint, args.delay) as endpoint, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        queue = 10 * args.requests
        # First without the profiler: its hooks slow every thread from the start.
        with server(endpoint.url, folder, args.workers, queue) as live:
            waited(live.url, args.clients, args.clients * 2, "warm")
            cpu = live.ask("cpu")
            waited(live.url, args.clients, args.requests, "plain")
            plain = (live.ask("cpu") - cpu) / args.requests
        with server(endpoint.url, folder, args.workers, queue, profiled=True) as live:
            waited(live.url, args.clients, args.clients * 2, "warm")
            live.ask("profile-start")
            cpu = live.ask("cpu")
            seconds, _ = waited(live.url, args.clients, args.requests, "profiled")
            profiled = (live.ask("cpu") - cpu) / args.requests
            path = str(args.save or folder / "service.prof")
            kinds = live.ask("profile-stop", path)
            stats = pstats.Stats(path)
    print(
        f"{args.requests} waited checks from {args.clients} clients, model latency "
        f"{args.delay} s\nserver CPU per request: {1000 * plain:.1f} ms without the "
        f"profiler, {1000 * profiled:.1f} ms with it; "
        f"{args.requests / seconds:.1f} requests/s under the profiler\n"
    )
    print("| thread | threads | ms per request (profiled) |")
    print("|---|---:|---:|")
    for kind, (count, spent) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"| {kind} | {count} | {1000 * spent / args.requests:.2f} |")
    print()
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"profiled CPU: {1000 * total / args.requests:.1f} ms per request, by area:\n")
    print("| area | share of the profiled CPU | ms per request (profiled) |")
    print("|---|---:|---:|")
    for area, seconds in sorted(by_area(stats).items(), key=lambda kv: -kv[1]):
        print(f"| {area} | {seconds / total:.1%} | {1000 * seconds / args.requests:.2f} |")
    print()
    stats.strip_dirs()
    for order in ("tottime", "cumulative"):
        print(f"== by {order} ==")
        stats.sort_stats(order).print_stats(args.top)


if __name__ == "__main__":
    main()
