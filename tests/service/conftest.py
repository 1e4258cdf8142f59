"""Fixtures of the service tests: a scripted fake executor, services, a client, a live server.

    def test_x(api):                         # TestClient over create_app(service), started
        api.post("/v1/checks", json={"claim": "..."})

    def test_y(live_server):                 # uvicorn on a free loopback port, in a thread
        httpx.get(f"{live_server.url}/v1/checks")
        live_server.executor.open()         # the fake's checks wait for this (when gated)

`ScriptedExecutor` is a fake: it emits a few events and returns a fixed verdict, for
testing the service's control flow. Tests of real checks use `LocalExecutor` against a
loopback OpenAI-compatible endpoint (`faults.latency.LatencyEndpoint`).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from verity import events
from verity.domain import Article, Claim, Evidence, Label, Verdict

OUTER_LIMIT = 60.0  # only ends a test that hangs for good
# The names the tests' servers answer for: the loopback ones, and the TestClient's own.
TEST_HOSTS = ("localhost", "127.0.0.1", "::1", "testserver")


class ScriptedExecutor:
    """A fake executor: ``steps`` milestones between the check's start and end, then a verdict.

    With ``gated=True`` each milestone waits until the test allows it: ``allow(n)`` lets
    ``n`` more steps through (of any check), ``open()`` all of them from then on, so a
    test can hold a check in the running state. ``fail_with`` makes every check raise.
    """

    def __init__(self, steps: int = 2, *, gated: bool = False, label: str = "SUPPORTED"):
        self.steps, self.label = steps, label
        self._allowed = 0 if gated else None  # None: no gate
        self._turn = threading.Condition()
        self.fail_with: Exception | None = None
        self.requests: list[Any] = []
        self.entered = threading.Semaphore(0)  # released as each check starts

    def allow(self, steps: int = 1) -> None:
        with self._turn:
            if self._allowed is not None:
                self._allowed += steps
            self._turn.notify_all()

    def open(self) -> None:
        with self._turn:
            self._allowed = None
            self._turn.notify_all()

    def _step(self) -> None:
        with self._turn:
            if not self._turn.wait_for(
                lambda: self._allowed is None or self._allowed > 0, OUTER_LIMIT
            ):
                raise TimeoutError("the test never let the check go on")
            if self._allowed is not None:
                self._allowed -= 1

    def __call__(self, request: Any, listener: Callable[[Any], None]) -> Verdict:
        self.requests.append(request)
        self.entered.release()
        if self.fail_with is not None:
            raise self.fail_with
        subject = request.subject() or Article(text="The fetched page.", url=request.url)
        with events.listening(listener) as sink:
            events.check_started("fake", "a subject")
            for n in range(self.steps):
                self._step()
                sink.emit("milestone", f"step {n + 1} of {self.steps}", name="fake.step")
            label = self.label if isinstance(subject, Claim) else "REAL"
            events.check_ended("fake", label, 0.01)
        return Verdict(
            label=Label(label),
            confidence=0.8,
            explanation="[1] says so.",
            evidence=(
                Evidence(
                    text="The Eiffel Tower is in Paris.",
                    title="Eiffel Tower",
                    source="offline-wiki",
                    url="https://en.wikipedia.org/wiki/Eiffel_Tower",
                ),
            ),
            method="fake",
            subject=subject,
        )


_stores = itertools.count()


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Build a `Service` on a fresh store in tmp_path; every one built is stopped after."""
    from verity.service.core import Service, ServiceSettings
    from verity.service.jobs import JobStore

    built: list[Any] = []

    def make(executor: Any = None, *, keys: Any = None, limiter: Any = None, **settings: Any):
        # FastAPI's TestClient sends Host: testserver; a live server is on 127.0.0.1.
        settings.setdefault("allowed_hosts", TEST_HOSTS)
        store = JobStore(tmp_path / f"jobs-{next(_stores)}.sqlite")
        service = Service(
            ServiceSettings(**settings),
            store=store,
            executor=executor if executor is not None else ScriptedExecutor(),
            keys=keys,
            limiter=limiter,
        )
        built.append(service)
        return service

    yield make
    for service in built:
        service.stop()
        service.store.close()


@pytest.fixture
def fake_executor() -> ScriptedExecutor:
    return ScriptedExecutor()


@pytest.fixture
def scripted() -> type[ScriptedExecutor]:
    """The fake executor's class, for a test that needs one of its own (gated, say)."""
    return ScriptedExecutor


@pytest.fixture
def api(make_service: Callable[..., Any], fake_executor: ScriptedExecutor) -> Iterator[Any]:
    """A TestClient over an app whose checks the scripted fake runs."""
    from fastapi.testclient import TestClient

    from verity.service.app import create_app

    with TestClient(create_app(make_service(fake_executor))) as client:
        yield client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    """A running server: its base URL, its service, and the executor behind it."""

    url: str
    service: Any
    executor: Any


@contextlib.contextmanager
def run_live(service: Any, *, header_timeout: float | None = None) -> Iterator[str]:
    """Serve ``service`` with uvicorn on a free loopback port in a thread; yield its URL.

    With ``header_timeout``, uvicorn is configured as `verity serve` configures it
    (`verity.cli.serve.server_config`: its header deadline included).
    """
    import uvicorn

    from verity.cli.serve import server_config
    from verity.service.app import create_app

    port = free_port()
    if header_timeout is None:
        config = uvicorn.Config(
            create_app(service),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
    else:
        config = server_config(uvicorn, create_app(service), "127.0.0.1", port, header_timeout)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        ready = threading.Event()
        for _ in range(int(OUTER_LIMIT / 0.05)):
            if server.started:
                ready.set()
                break
            if not thread.is_alive():
                break
            ready.wait(0.05)
        if not ready.is_set():
            raise RuntimeError("uvicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        service.begin_shutdown()  # open event streams end, so the shutdown does not wait
        server.should_exit = True
        thread.join(OUTER_LIMIT)


@pytest.fixture
def serve_live() -> Callable[[Any], contextlib.AbstractContextManager[str]]:
    """`run_live`, for a test that serves a service of its own: ``with serve_live(s) as url``."""
    return run_live


@pytest.fixture
def live_server(make_service: Callable[..., Any]) -> Iterator[LiveServer]:
    """The real app on a free loopback port, its checks run by a gated scripted fake.

    The fake's checks hold at each step until ``live_server.executor.allow()`` (one
    step) or ``.open()`` (every step from then on).
    """
    executor = ScriptedExecutor(steps=3, gated=True)
    service = make_service(executor)
    with run_live(service) as url:
        yield LiveServer(url=url, service=service, executor=executor)
