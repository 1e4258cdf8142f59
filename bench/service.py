"""The service's own throughput, latency and back-pressure, against a fixed model latency.

    .venv/bin/python bench/service.py [--delay 0.25] [--requests 64] [--workers 32]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds and does no work, so what is measured is verity: the HTTP
layer, the job store, the worker pool and a ``direct`` check around one model call.
The real app (`verity.service.app.create_app`) runs under uvicorn on 127.0.0.1.

1. ``POST /v1/checks?wait=60`` with ``method=direct`` from 1, 8 and 32 clients at once,
   each sending its share of ``--requests`` distinct claims: requests per second, p50 and
   p95 latency, and the throughput ratio to one client (the ideal ratio is the number of
   clients, up to the workers).
2. Back-pressure: a burst of ``--burst`` submissions without waiting to a server with
   2 workers and a queue of 8: the share refused with 429, beside the share that the
   bound alone predicts, and whether each refusal carried ``Retry-After``.

Every loop is bounded; all traffic stays on loopback. The engine comparison (threads
against Ray, examples per second at 1, 4 and 16 in flight) is `bench/engines.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint

from faults.latency import LatencyEndpoint  # noqa: E402
from verity.config import Settings  # noqa: E402
from verity.llm.spec import ModelSettings  # noqa: E402
from verity.service.app import create_app  # noqa: E402
from verity.service.core import Service, ServiceSettings  # noqa: E402
from verity.service.jobs import JobStore  # noqa: E402


@contextlib.contextmanager
def run_live(service: Service) -> Iterator[str]:
    """The real app under uvicorn on a free loopback port, in a thread; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(600):  # at most 30 s to start
            if server.started or not thread.is_alive():
                break
            time.sleep(0.05)
        if not server.started:
            raise RuntimeError("uvicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        service.begin_shutdown()
        server.should_exit = True
        thread.join(30)


def service_for(endpoint: LatencyEndpoint, folder: Path, workers: int, queue: int) -> Service:
    """A server's parts on a fresh job store, checking with ``direct`` against the endpoint."""
    defaults = Settings(
        method="direct",
        model=ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False),
        sources=(),
    )
    store = JobStore(folder / f"jobs-{workers}-{queue}-{time.monotonic_ns()}.sqlite")
    return Service(
        ServiceSettings(defaults=defaults, workers=workers, queue_size=queue),
        store=store,
    )


def waited(url: str, clients: int, requests: int, tag: str) -> tuple[float, list[float]]:
    """Seconds for ``requests`` waited checks from ``clients`` at once, and each latency."""
    latencies: list[float] = []

    def one_client(n: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            for i in range(n, requests, clients):
                body = {"claim": f"Claim {tag}-{i} about a bridge.", "method": "direct"}
                started = time.perf_counter()
                answer = http.post("/v1/checks", params={"wait": 60}, json=body)
                latencies.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise RuntimeError(f"request {i}: {answer.status_code} {answer.text[:200]}")

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for done in [pool.submit(one_client, n) for n in range(clients)]:
            done.result()
    return time.perf_counter() - started, latencies


def burst(url: str, count: int) -> tuple[int, int, bool]:
    """Submit ``count`` checks at once without waiting: accepted, refused, Retry-After on all."""

    def post(i: int) -> httpx.Response:
        with httpx.Client(base_url=url, timeout=60) as http:
            return http.post("/v1/checks", json={"claim": f"Burst claim {i}.", "method": "direct"})

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(post, range(count)))
    refused = [a for a in answers if a.status_code == 429]
    accepted = sum(a.status_code == 202 for a in answers)
    return accepted, len(refused), all("retry-after" in a.headers for a in refused)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--burst", type=int, default=64)
    args = parser.parse_args()
    print(f"model latency {args.delay} s per call; {args.workers} workers; direct, no cache\n")
    with LatencyEndpoint(delay=args.delay) as endpoint, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        service = service_for(endpoint, folder, args.workers, queue=10 * args.requests)
        with run_live(service) as url:
            waited(url, 1, 2, "warm")  # the first check builds the method and its client
            rows = []
            for clients in (1, 8, 32):
                seconds, lat = waited(url, clients, args.requests, f"c{clients}")
                rows.append((clients, args.requests / seconds, lat))
        service.stop()
        service.store.close()
        base = rows[0][1]
        print("| clients | requests/s | p50 (s) | p95 (s) | ratio to 1 | ideal |")
        print("|---:|---:|---:|---:|---:|---:|")
        for clients, rate, lat in rows:
            p50 = statistics.median(lat)
            p95 = statistics.quantiles(lat, n=20)[-1]
            ideal = min(clients, args.workers)
            ratio = rate / base
            print(f"| {clients} | {rate:.2f} | {p50:.3f} | {p95:.3f} | {ratio:.2f} | {ideal} |")
        print(
            f"\nper-request overhead over the model's {args.delay} s at 1 client: "
            f"{statistics.median(rows[0][2]) - args.delay:.3f} s (p50)"
        )

        workers, queue = 2, 8
        service = service_for(endpoint, folder, workers, queue)
        with run_live(service) as url:
            accepted, refused, retry_after = burst(url, args.burst)
        service.stop()
        service.store.close()
        bound = max(0, args.burst - workers - queue) / args.burst
        print(
            f"\nburst of {args.burst} submissions, {workers} workers, queue {queue}: "
            f"{accepted} accepted, {refused} refused with 429 ({refused / args.burst:.0%}; "
            f"the bound alone: at least {bound:.0%}); Retry-After on every 429: {retry_after}"
        )


if __name__ == "__main__":
    main()
