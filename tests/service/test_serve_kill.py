"""``verity serve`` killed with SIGKILL while checks run and wait, then started again.

Every check ends, and none runs twice: the model endpoint (a loopback OpenAI-compatible
server whose every answer takes a fixed time, `faults.latency`) counts the requests for
each claim, so a check that ran to its end twice would show there. Also: stopped with
SIGTERM while a client follows a check's events, the server exits without waiting for
the stream, and the interrupted check runs again at the next start.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from faults.latency import LatencyEndpoint

pytestmark = pytest.mark.integration

VERITY = str(Path(sys.executable).with_name("verity"))
# Generous: each wait ends on an event (a status seen, a process gone); the limit only
# ends a run that hangs for good.
OUTER_LIMIT = 120.0
CLAIM = re.compile(r"Claim number (\d+)\.")


class CountingEndpoint(LatencyEndpoint):
    """The latency endpoint, counting the requests for each numbered claim as they arrive."""

    def __init__(self, delay: float) -> None:
        super().__init__(delay=delay)
        self.asked: Counter[int] = Counter()
        self.arrived = threading.Event()
        self._counting = threading.Lock()

    def reply(self, request):
        text = " ".join(str(m.get("content", "")) for m in request.get("messages") or [])
        found = CLAIM.search(text)
        if found:
            with self._counting:
                self.asked[int(found.group(1))] += 1
            self.arrived.set()
        return super().reply(request)  # after the delay


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A ``verity serve`` subprocess on a free loopback port."""

    def __init__(self, tmp_path: Path, endpoint: str, *, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = tmp_path / "verity.toml"
        config.write_text("[model]\ncache = false\n", encoding="utf-8")  # every run asks
        env = {
            **os.environ,
            "VERITY_CACHE_DIR": str(tmp_path / "cache"),
            "VERITY_CONFIG": str(config),
        }
        self.log = (tmp_path / f"serve-{self.port}.log").open("w+")
        self.proc = subprocess.Popen(
            [VERITY, "serve", "--port", str(self.port), "--workers", str(workers),
             "--db", f"sqlite:///{tmp_path / 'jobs.sqlite'}", "--method", "direct",
             "--model", "openai:m", "--base-url", endpoint],
            env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def wait_ready(self) -> None:
        deadline = time.monotonic() + OUTER_LIMIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"verity serve exited: {self.output()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"verity serve never got ready: {self.output()}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=OUTER_LIMIT)
        self.log.close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def statuses(server: Server) -> dict[str, dict]:
    jobs = httpx.get(f"{server.url}/v1/checks?limit=100", timeout=10).json()["items"]
    return {job["id"]: job for job in jobs}


def wait_for(server: Server, done, what: str) -> dict[str, dict]:
    deadline = time.monotonic() + OUTER_LIMIT
    while time.monotonic() < deadline:
        seen = statuses(server)
        if done(seen):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}: {statuses(server)}")


def test_killed_with_checks_running_and_queued_every_check_ends_once(
    tmp_path: Path, servers: list[Server]
) -> None:
    with CountingEndpoint(delay=5.0) as endpoint:
        first = Server(tmp_path, endpoint.base_url, workers=2)
        servers.append(first)
        first.wait_ready()
        ids = {}
        for n in range(5):
            answer = httpx.post(
                f"{first.url}/v1/checks", json={"claim": f"Claim number {n}."}, timeout=10
            )
            assert answer.status_code == 202, answer.text
            ids[answer.json()["id"]] = n
        # Two checks are waiting on the model (5 s an answer), three are queued.
        seen = wait_for(
            first,
            lambda s: (
                [j["status"] for j in s.values()].count("running") == 2
                and sum(endpoint.asked.values()) == 2
            ),
            "two checks running with their model calls sent",
        )
        running = {ids[i] for i, job in seen.items() if job["status"] == "running"}
        assert [j["status"] for j in seen.values()].count("queued") == 3
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=OUTER_LIMIT)

        endpoint.delay = 0.05  # the rest need not be slow
        second = Server(tmp_path, endpoint.base_url, workers=2)
        servers.append(second)
        second.wait_ready()
        ended = wait_for(
            second,
            lambda s: all(job["status"] == "done" for job in s.values()),
            "every check done",
        )
    assert set(ended) == set(ids)
    for job_id, n in ids.items():
        job = httpx.get(f"{second.url}/v1/checks/{job_id}", timeout=10).json()
        assert job["verdict"]["claim"] == f"Claim number {n}."
        # A check killed mid-run ran twice to get its one verdict; a queued one ran once.
        expected_runs = 2 if n in running else 1
        assert job["runs"] == expected_runs, (n, job["runs"])
        # One call a run, and the grounding call of the run that finished.
        assert endpoint.asked[n] == expected_runs + 1, (n, endpoint.asked)
        kinds = [
            line.removeprefix("event: ")
            for line in httpx.get(
                f"{second.url}/v1/checks/{job_id}/events", timeout=OUTER_LIMIT
            ).text.splitlines()
            if line.startswith("event: ")
        ]
        # One run's events: one start, one end, then the stream's own end.
        assert kinds.count("check.start") == 1 and kinds.count("check.end") == 1
        assert kinds[-1] == "end"


def test_stopped_while_a_client_follows_a_check_the_server_exits_and_reruns_it(
    tmp_path: Path, servers: list[Server]
) -> None:
    with CountingEndpoint(delay=3.0) as endpoint:
        first = Server(tmp_path, endpoint.base_url, workers=1)
        servers.append(first)
        first.wait_ready()
        job = httpx.post(
            f"{first.url}/v1/checks", json={"claim": "Claim number 7."}, timeout=10
        ).json()
        lines: list[str] = []
        with httpx.stream(
            "GET", f"{first.url}/v1/checks/{job['id']}/events", timeout=OUTER_LIMIT
        ) as stream:
            for line in stream.iter_lines():
                lines.append(line)
                if line == "event: call.start":
                    # The check waits on the model; the client keeps its stream open.
                    assert endpoint.arrived.wait(OUTER_LIMIT)
                    first.proc.send_signal(signal.SIGTERM)
            # The stream ended with the server, with no `end` event: the check had not.
        assert "event: end" not in lines
        # uvicorn shuts down, then ends by the signal it caught, as a process should.
        assert first.proc.wait(timeout=OUTER_LIMIT) in (0, -signal.SIGTERM)
        said = first.output()
        assert "Application shutdown complete" in said and "runs again next start" in said

        endpoint.delay = 0.05
        second = Server(tmp_path, endpoint.base_url, workers=1)
        servers.append(second)
        second.wait_ready()
        done = httpx.post(
            f"{second.url}/v1/checks?wait=60", json={"claim": "Claim number 8."}, timeout=90
        ).json()
        assert done["status"] == "done"
        again = httpx.get(f"{second.url}/v1/checks/{job['id']}", timeout=10).json()
    assert again["status"] == "done" and again["runs"] == 2
    assert json.dumps(again["verdict"]).count("Claim number 7.") >= 1
