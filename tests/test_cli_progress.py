"""``verity check`` shows each step on stderr while it runs, and stdout keeps the verdict.

The model is a loopback OpenAI-compatible endpoint (`faults`) that answers every request
with a valid verdict: what is tested is where the progress goes and how it is printed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from faults import FaultServer, model
from verity import events
from verity.cli import progress
from verity.domain import Event

VERITY = str(Path(sys.executable).with_name("verity"))
CLAIM = "The Eiffel Tower is in Paris."
# Generous: only a run that hangs for good reaches it.
OUTER_LIMIT = 300


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray verity.toml
    for var in ("VERITY_METHOD", "VERITY_MODEL", "VERITY_BASE_URL", "VERITY_SOURCES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("VERITY_CONFIG", raising=False)


@pytest.fixture
def endpoint() -> Iterator[str]:
    with FaultServer(default=model.answer()) as server:
        yield f"{server.url}/v1"


def argv(endpoint: str, claim: str = CLAIM, *extra: str) -> list[str]:
    # The check's own steps; the grounding step's progress is tested with grounding.
    return ["check", claim, "--method", "direct", "--model", "openai:m", "--base-url", endpoint,
            "--json", "--grounding", "off", *extra]  # fmt: skip


def step_lines(err: str) -> list[str]:
    """The progress lines of a stderr text: each starts with the seconds since the start."""
    return [line for line in err.splitlines() if line.strip().split(" ", 1)[0].endswith("s")]


def test_progress_goes_to_stderr_and_stdout_stays_one_json_object(cli, endpoint) -> None:
    code, out, err = cli(argv(endpoint, CLAIM, "--progress"))
    assert code == 0, err
    record = json.loads(out)  # fails on any progress line in stdout
    assert record["label"] == "SUPPORTED" and out.count("\n") == 1
    lines = step_lines(err)
    tags = [line.split()[1] for line in lines]
    assert tags == ["check", "model", "done"]
    assert "direct.judge answered" in lines[1] and "SUPPORTED" in lines[2]


def test_without_a_terminal_or_progress_nothing_is_shown(cli, endpoint) -> None:
    code, out, err = cli(argv(endpoint))
    assert code == 0 and json.loads(out)["label"] == "SUPPORTED"
    assert err == ""


def test_on_a_terminal_progress_is_shown_unless_turned_off(
    cli, endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "_is_terminal", lambda stream: True)
    code, out, err = cli(argv(endpoint))
    assert code == 0 and json.loads(out)["label"] == "SUPPORTED"
    assert [line.split()[1] for line in step_lines(err)] == ["check", "model", "done"]
    code, out, err = cli(argv(endpoint, CLAIM, "--no-progress"))
    assert code == 0 and json.loads(out)["label"] == "SUPPORTED"
    assert step_lines(err) == []


def test_a_claim_with_markup_is_printed_as_typed(cli, endpoint) -> None:
    claim = "The [bold red]x[/] tower is [link=https://evil.example]here[/link]."
    code, out, err = cli(argv(endpoint, claim, "--progress"))
    assert code == 0, err
    assert json.loads(out)["claim"] == claim
    (start,) = [line for line in step_lines(err) if line.split()[1] == "check"]
    assert claim in start


def test_the_installed_command_keeps_stdout_for_the_verdict(tmp_path: Path, endpoint) -> None:
    env = {**os.environ, "VERITY_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run(
        [VERITY, *argv(endpoint, CLAIM, "--progress")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=OUTER_LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["label"] == "SUPPORTED" and done.stdout.count("\n") == 1
    assert "direct.judge answered" in done.stderr
    assert "\x1b" not in done.stderr  # a pipe gets plain lines, no status line to redraw


def _event(seq: int, kind: str, message: str, **fields: object) -> Event:
    return Event.model_validate({"seq": seq, "kind": kind, "at": 0.5, "message": message, **fields})


def test_step_text_is_never_markup_nor_a_terminal_command() -> None:
    buffer = io.StringIO()
    steps = progress.StepList(Console(file=buffer, width=300, emoji=False, highlight=False))
    steps(_event(1, "milestone", "found [bold]x[/bold] :warning: \x1b]0;pwned\x07ok", name="a.b"))
    steps(_event(2, "retrieval", "web: '[/]', failed: down", source="web", error="down"))
    shown = buffer.getvalue().splitlines()
    assert shown[0].endswith("step   found [bold]x[/bold] :warning: ok")
    assert shown[1].endswith("search web: '[/]', failed: down")


def test_a_started_call_is_on_the_status_line_not_in_the_list() -> None:
    buffer = io.StringIO()
    steps = progress.StepList(Console(file=buffer, width=300), status=True)
    steps(_event(1, "call.start", "[red]judge: asking the model", step="[red]judge"))
    assert steps._spinner.text.plain == "waiting for 1 model call(s): [red]judge"
    assert buffer.getvalue() == ""  # never started: nothing drawn
    steps(_event(2, "call.end", "[red]judge answered", step="[red]judge"))
    assert steps._spinner.text.plain == "working"
    assert buffer.getvalue().splitlines() == ["    0.5s model  [red]judge answered"]


def test_events_from_many_threads_give_whole_lines_and_a_settled_status() -> None:
    buffer = io.StringIO()
    steps = progress.StepList(Console(file=buffer, width=300), status=True)
    per_thread, threads = 50, 8

    def work(n: int) -> None:
        for i in range(per_thread):
            sink.emit("call.start", "asking", step="demo.ask")
            sink.emit("milestone", f"thread {n} step {i} " + "x" * 100, name="demo.step")
            sink.emit("call.end", "demo.ask answered " + "y" * 100, step="demo.ask")

    with events.listening(steps) as sink:
        assert sink is not None
        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=OUTER_LIMIT)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2 * per_thread * threads
    assert all(line.endswith(("x" * 100, "y" * 100)) for line in lines)
    assert steps._spinner.text.plain == "working"  # every call that started has ended
