"""The service's own throughput, latency and back-pressure, against a fixed model latency.

    .venv/bin/python bench/service.py [--delay 0.25] [--rounds 8] [--workers 32]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds and does no work, so what is measured is verity: the HTTP
layer, the job store, the worker pool and a ``direct`` check (its call, then the
grounding call on its explanation, as the service checks by default). The real app
(`verity.service.app.create_app`) runs under uvicorn on 127.0.0.1.

Three processes, so that nothing measured shares the server's interpreter (and its
GIL): the server, the endpoint, and this one, which sends the requests.

1. ``POST /v1/checks?wait=60`` with ``method=direct`` from 1, 8 and 32 clients at once,
   each client sending ``--rounds`` distinct claims one after the other (at least
   ``--requests`` in all at a level, for a steady figure at one client): requests per
   second, p50 and p95 latency, the throughput ratio to one client (the ideal ratio is
   the number of clients, up to the workers), and the CPU milliseconds per request of
   the server, the endpoint and the clients. Before the first level, one round from 32
   clients warms the server up (the method built, each worker's event loop made), so
   each level measures the server running, not starting.
2. Back-pressure: a burst of ``--burst`` submissions without waiting to a server with
   2 workers and a queue of 8: the share refused with 429, beside the share that the
   bound alone predicts, and whether each refusal carried ``Retry-After``.

Every loop is bounded; all traffic stays on loopback. Where the server's CPU goes is
`bench/service_profile.py`; the engine comparison (threads against Ray, examples per
second at 1, 4 and 16 in flight) is `bench/engines.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import re
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint

# A child that does not answer within this many seconds is taken as hung.
CHILD_SECONDS = 60.0
LEVELS = (1, 8, 32)


# -- the child processes -------------------------------------------------------------------


def run_endpoint(conn: Connection, delay: float) -> None:
    """Child: the loopback endpoint; sends its URL, then answers commands until ``stop``."""
    from faults.latency import LatencyEndpoint

    with LatencyEndpoint(delay=delay) as endpoint:
        conn.send(endpoint.base_url)
        serve_commands(conn, {"count": lambda: endpoint.count})


def run_server(
    conn: Connection, base_url: str, db: str, workers: int, queue: int, profiled: bool
) -> None:
    """Child: the app under uvicorn; sends its URL, then answers commands until ``stop``.

    With ``profiled``, every thread of the server can be profiled (`ThreadProfiles`),
    from ``profile-start`` to ``profile-stop PATH``.
    """
    import uvicorn

    from verity.service.app import create_app
    from verity.service.middleware import header_deadline

    profiles = ThreadProfiles() if profiled else None
    service = service_for(base_url, db, workers, queue)
    port = free_port()
    # As `verity serve` runs it (its HTTP protocol with the header deadline), but quiet.
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(service),
            host="127.0.0.1",
            port=port,
            http=header_deadline(10.0),
            log_level="warning",
            server_header=False,
        )
    )

    def started() -> bool:
        for _ in range(int(CHILD_SECONDS / 0.05)):
            if server.started:
                return True
            time.sleep(0.05)
        return False

    def stop() -> None:
        service.begin_shutdown()
        server.should_exit = True

    commands: dict[str, Callable[..., Any]] = {"started": started, "stop": stop}
    if profiles is not None:
        commands["profile-start"] = profiles.start
        commands["profile-stop"] = profiles.stop
    # The commands' thread starts before profiling is installed: it is never profiled.
    threading.Thread(target=serve_commands, args=(conn, commands), daemon=True).start()
    conn.send(f"http://127.0.0.1:{port}")
    if profiles is not None:
        profiles.install()
    try:
        server.run()
    finally:
        service.stop()
        service.store.close()


def service_for(base_url: str, db: str, workers: int, queue: int) -> Any:
    """A server's parts on a fresh job store, checking with ``direct`` against the endpoint."""
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.core import Service, ServiceSettings
    from verity.service.jobs import JobStore

    defaults = Settings(
        method="direct",
        model=ModelSettings(spec="openai:m", base_url=base_url, cache=False),
        sources=(),
    )
    return Service(
        ServiceSettings(defaults=defaults, workers=workers, queue_size=queue),
        store=JobStore(db),
    )


def serve_commands(conn: Connection, commands: dict[str, Callable[..., Any]]) -> None:
    """Answer ``(name, *args)`` from the parent with ``commands[name](*args)``; ``cpu`` is
    this process's CPU seconds so far; ends after ``stop``."""
    while True:
        try:
            name, *args = conn.recv()
        except EOFError:  # the parent has gone
            name, args = "stop", []
        if name == "cpu":
            conn.send(time.process_time())
            continue
        answer = commands[name](*args) if name in commands else None
        with contextlib.suppress(OSError):
            conn.send(answer)
        if name == "stop":
            return


class ThreadProfiles:
    """cProfile in every thread of this process, counting CPU time, between start and stop.

    cProfile profiles the thread that enables it only, and a server's work is spread
    over its event loop, the request threads and the workers. `install` sets a hook in
    every thread (this one, and each one started later) that, once `start` was called,
    turns on a profiler of that thread's own CPU time (``time.thread_time``: time spent
    waiting for the GIL or the network is not counted). `stop` merges them. Until
    `start`, the hook itself slows every call of every thread: measure the CPU of a
    server that is not profiled on a server started without it.
    """

    def __init__(self) -> None:
        self._on = False
        self._profiles: list[Any] = []
        self._lock = threading.Lock()

    def install(self) -> None:
        """Hook this thread and every thread started after."""
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)

    def start(self) -> None:
        """Each hooked thread starts its profiler at its next call."""
        self._on = True

    def stop(self, path: str) -> dict[str, tuple[int, float]]:
        """Merge the threads' profiles into ``path`` (pstats' format), and those of each
        kind of thread (its name without numbers) into ``path.KIND``; per kind, how many
        threads there were and their profiled seconds."""
        import pstats

        self._on = False
        with self._lock:
            found = list(self._profiles)
        merged = pstats.Stats()
        kinds: dict[str, tuple[int, float]] = {}
        each: dict[str, pstats.Stats] = {}
        for name, profile in found:
            # Read in place (the GIL holds the thread still): disabling a profiler works
            # only from its own thread, and the server goes on.
            profile.snapshot_stats()
            seconds = sum(entry[2] for entry in profile.stats.values())
            kind = re.sub(r"[-_ ]?\d+", "", name.split(" (")[0])
            count, total = kinds.get(kind, (0, 0.0))
            kinds[kind] = (count + 1, total + seconds)
            merged.add(_Snapshot(profile.stats))
            each.setdefault(kind, pstats.Stats()).add(_Snapshot(profile.stats))
        merged.dump_stats(path)
        for kind, stats in each.items():  # one file per kind of thread beside it
            stats.dump_stats(f"{path}.{kind.replace(' ', '-')}")
        return kinds

    def _hook(self, frame: Any, event: str, arg: Any) -> None:
        if not self._on:
            return
        import cProfile

        profile = cProfile.Profile(time.thread_time)
        with self._lock:
            self._profiles.append((threading.current_thread().name, profile))
        profile.enable()  # replaces this hook in this thread


class _Snapshot:
    """A profile's stats as `pstats.Stats.add` reads them."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        pass


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the parent ------------------------------------------------------------------------------


class Child:
    """A child process started with ``target(conn, *args)``; ``ask`` sends it a command."""

    def __init__(self, conn: Connection, process: Any, url: str) -> None:
        self.conn, self.process, self.url = conn, process, url

    def ask(self, *command: Any) -> Any:
        """Send ``(name, *args)`` and return the answer."""
        self.conn.send(command)
        if not self.conn.poll(CHILD_SECONDS):
            raise RuntimeError(f"the child did not answer {command[0]!r}")
        return self.conn.recv()


@contextlib.contextmanager
def child(target: Callable[..., None], *args: Any) -> Iterator[Child]:
    """Run ``target`` in a fresh interpreter (spawned, not forked); stop it on the way out."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=target, args=(theirs, *args), daemon=True)
    process.start()
    try:
        if not ours.poll(CHILD_SECONDS * 2):  # an import of the app takes a few seconds
            raise RuntimeError(f"{target.__name__} did not start")
        yield Child(ours, process, ours.recv())
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            Child(ours, process, "").ask("stop")
        process.join(CHILD_SECONDS)
        if process.is_alive():
            process.kill()
            process.join(5)


@contextlib.contextmanager
def server(
    endpoint: str, folder: Path, workers: int, queue: int, *, profiled: bool = False
) -> Iterator[Child]:
    """A server in its own process on a fresh job store, started."""
    db = str(folder / f"jobs-{workers}-{queue}-{time.monotonic_ns()}.sqlite")
    with child(run_server, endpoint, db, workers, queue, profiled) as running:
        if not running.ask("started"):
            raise RuntimeError("uvicorn did not start")
        yield running


def waited(url: str, clients: int, requests: int, tag: str) -> tuple[float, list[float]]:
    """Seconds for ``requests`` waited checks from ``clients`` at once, and each latency."""
    latencies: list[float] = []

    def one_client(n: int) -> None:
        with contextlib.closing(connection(url)) as http:
            for i in range(n, requests, clients):
                body = {"claim": f"Claim {tag}-{i} about a bridge.", "method": "direct"}
                started = time.perf_counter()
                status, _, text = post(http, "/v1/checks?wait=60", body)
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    raise RuntimeError(f"request {i}: {status} {text[:200]}")

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for done in [pool.submit(one_client, n) for n in range(clients)]:
            done.result()
    return time.perf_counter() - started, latencies


def connection(url: str) -> http.client.HTTPConnection:
    """A connection to the server, kept open from one request to the next.

    The standard library's client, not httpx: on a machine of two cores the clients'
    own CPU is taken from the server's, and this one spends a fraction of httpx's.
    """
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=120)


def post(
    http: http.client.HTTPConnection, path: str, body: dict[str, Any]
) -> tuple[int, dict[str, str], str]:
    """POST ``body`` as JSON: the status, the headers (lower-case names) and the text."""
    payload = json.dumps(body).encode()
    http.request("POST", path, payload, {"Content-Type": "application/json"})
    answer = http.getresponse()
    text = answer.read().decode()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, text


def cpu_now(server: Child, endpoint: Child) -> tuple[float, float, float]:
    """CPU seconds so far of the server, the endpoint and this process (the clients)."""
    return server.ask("cpu"), endpoint.ask("cpu"), time.process_time()


def burst(url: str, count: int) -> tuple[int, int, bool]:
    """Submit ``count`` checks at once without waiting: accepted, refused, Retry-After on all."""

    def one(i: int) -> tuple[int, dict[str, str]]:
        with contextlib.closing(connection(url)) as http:
            status, headers, _ = post(
                http, "/v1/checks", {"claim": f"Burst claim {i}.", "method": "direct"}
            )
            return status, headers

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, range(count)))
    refused = [headers for status, headers in answers if status == 429]
    accepted = sum(status == 202 for status, _ in answers)
    return accepted, len(refused), all("retry-after" in headers for headers in refused)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--burst", type=int, default=64)
    args = parser.parse_args()
    print(f"model latency {args.delay} s per call; {args.workers} workers; direct, no cache\n")
    with child(run_endpoint, args.delay) as endpoint, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = []
        most = max(args.requests, max(LEVELS) * args.rounds)
        with server(endpoint.url, folder, args.workers, queue=most) as live:
            waited(live.url, max(LEVELS), max(LEVELS), "warm")
            for clients in LEVELS:
                count = max(args.requests, clients * args.rounds)
                before = cpu_now(live, endpoint)
                calls = endpoint.ask("count")
                seconds, lat = waited(live.url, clients, count, f"c{clients}")
                after = cpu_now(live, endpoint)
                cpu = [(b - a) / count for a, b in zip(before, after, strict=True)]
                calls = (endpoint.ask("count") - calls) / count
                rows.append((clients, count / seconds, lat, cpu, calls))
        base = rows[0][1]
        print(
            "| clients | requests/s | p50 (s) | p95 (s) | ratio to 1 | ideal "
            "| CPU ms/request: server | endpoint | clients |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for clients, rate, lat, cpu, _ in rows:
            p50 = statistics.median(lat)
            p95 = statistics.quantiles(lat, n=20)[-1]
            ideal = min(clients, args.workers)
            ratio = rate / base
            print(
                f"| {clients} | {rate:.2f} | {p50:.3f} | {p95:.3f} | {ratio:.2f} | {ideal} "
                f"| {' | '.join(f'{1000 * c:.1f}' for c in cpu)} |"
            )
        calls = rows[0][4]
        print(
            f"\nmodel calls per check: {calls:.2f}; per-request overhead over their "
            f"{calls * args.delay:.2f} s at 1 client: "
            f"{statistics.median(rows[0][2]) - calls * args.delay:.3f} s (p50)"
        )

        workers, queue = 2, 8
        with server(endpoint.url, folder, workers, queue) as live:
            accepted, refused, retry_after = burst(live.url, args.burst)
        bound = max(0, args.burst - workers - queue) / max(1, args.burst)
        print(
            f"\nburst of {args.burst} submissions, {workers} workers, queue {queue}: "
            f"{accepted} accepted, {refused} refused with 429 ({refused / max(1, args.burst):.0%}; "
            f"the bound alone: at least {bound:.0%}); Retry-After on every 429: {retry_after}"
        )


if __name__ == "__main__":
    main()
