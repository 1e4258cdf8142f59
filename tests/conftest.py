"""Shared fixtures: an isolated cache per test session, the gate for live tests, the CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import httpx
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--live",
        action="store_true",
        default=False,
        help="run tests marked `live` against real remote APIs (also VERITY_LIVE=1)",
    )


def _live_enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("--live")) or os.environ.get("VERITY_LIVE") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _live_enabled(config):
        return
    skip = pytest.mark.skip(reason="live test: pass --live (or VERITY_LIVE=1) and the API key")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ``VERITY_TEST_RSS=FILE``, append each test's resident memory after it ran.

    For finding what a long run holds on to (bench/suite_memory.py reads the file).
    """
    yield
    target = os.environ.get("VERITY_TEST_RSS")
    if target:
        from verity.bench.memory import resident_mb

        with open(target, "a", encoding="utf-8") as out:
            out.write(f"{resident_mb() or 0:.0f}\t{item.nodeid}\n")


@pytest.fixture
def live_key() -> Callable[[str], str]:
    """Return the value of an API-key variable, skipping the test when it is unset."""

    def get(env_var: str) -> str:
        value = os.environ.get(env_var, "")
        if not value:
            pytest.skip(f"live test needs {env_var}")
        return value

    return get


@pytest.fixture(autouse=True, scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Point every cache at a folder of this test run, unless the caller chose one.

    Indexes and extracted models are reused across tests in a run; a run never reads
    what an earlier run (or the user) left behind.
    """
    if "VERITY_TEST_CACHE_DIR" in os.environ:
        os.environ["VERITY_CACHE_DIR"] = os.environ["VERITY_TEST_CACHE_DIR"]
    else:
        os.environ["VERITY_CACHE_DIR"] = str(tmp_path_factory.mktemp("verity-cache"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``llama_cpp.server`` serving the embedded GGUF on loopback."""
    from verity.llm.local_gguf import embedded_model_path

    port = _free_port()
    # A file, not a pipe: an unread pipe fills up with request logs and blocks the server.
    log = (tmp_path_factory.mktemp("llama-server") / "stderr.log").open("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(embedded_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"llama_cpp.server exited: {log.read()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama_cpp.server did not start within 90 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


CliRun = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> CliRun:
    """Run ``verity ARGV...`` in process: ``code, out, err = cli(["check", "..."])``."""
    from verity.cli import main

    def run(argv: list[str]) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["verity", *argv])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
