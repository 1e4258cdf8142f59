"""Live progress of ``verity check`` on stderr: one line per step, and a status line.

    with shown(err, wanted(flag, err)) as steps, events.listening(steps):
        verdict = method.verify(subject)

Each finished model call, each retrieval and each milestone of the method is one line,
with the seconds since the check began; a model call that is still running shows on a
status line under them (only on a terminal, where it can be redrawn). The lines go to the
console given, which for the command is stderr: stdout carries the verdict (``--json``)
and nothing else. Events come from the check's worker threads, so one lock orders the
lines. Every text an event carries (a claim, a query, a step name) is printed as text,
never read as markup, and cleaned of terminal control sequences first.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

if TYPE_CHECKING:
    from verity.domain import Event

# The tag before each line, and its colour, by the kind of event.
_TAGS = {
    "check.start": ("check", "bold"),
    "check.end": ("done", "bold green"),
    "call.end": ("model", "cyan"),
    "retrieval": ("search", "blue"),
    "milestone": ("step", "magenta"),
}
_WIDTH = max(len(tag) for tag, _ in _TAGS.values())


def wanted(flag: bool | None, stream: IO[str] | None = None) -> bool:
    """Whether to show progress: as ``--progress/--no-progress`` says, else on a terminal.

    ``stream`` is where it would go (stderr by default). Only a real terminal counts, not
    a colour setting: a log file or a pipe gets no progress unless it is asked for.
    """
    if flag is not None:
        return flag
    return _is_terminal(stream if stream is not None else sys.stderr)


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


class StepList:
    """A listener that prints each step of a check on ``console`` as it happens."""

    def __init__(self, console: Console, *, status: bool = False) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._running: Counter[str] = Counter()  # model calls in flight, by step
        self._spinner = Spinner("dots", text=Text("starting"), style="cyan")
        self._live = (
            # Not redirecting stdout: the verdict's JSON must never pass through here.
            Live(
                self._spinner,
                console=console,
                transient=True,
                refresh_per_second=8,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            if status
            else None
        )

    def start(self) -> None:
        """Show the status line (when there is one)."""
        if self._live is not None:
            self._live.start()

    def stop(self) -> None:
        """Remove the status line; the step lines stay."""
        if self._live is not None:
            self._live.stop()

    def __call__(self, event: Event) -> None:
        """Take one event: a line for a finished step, the status line for a started call."""
        with self._lock:
            step = event.step or "model"
            if event.kind == "call.start":
                self._running[step] += 1
            elif event.kind == "call.end" and self._running[step] > 0:
                self._running[step] -= 1
            # The status first: printing redraws it, and it should not show a call
            # that has just ended.
            self._update_status()
            if event.kind in _TAGS:
                self.console.print(self._line(event))

    def _line(self, event: Event) -> Text:
        from verity.render import text  # imports the domain: not at `verity --help`

        tag, style = _TAGS[event.kind]
        if event.kind == "retrieval" and event.error:
            style = "red"
        return Text.assemble(
            (f"{event.at:7.1f}s ", "dim"), (f"{tag:<{_WIDTH}} ", style), text(event.message)
        )

    def _update_status(self) -> None:
        if self._live is None:
            return
        from verity.render import clean

        running = [step for step, n in self._running.items() if n > 0]
        if not running:
            said = Text("working")
        else:
            calls = sum(self._running.values())
            said = Text(f"waiting for {calls} model call(s): ")
            said.append(clean(", ".join(running)))
        self._spinner.update(text=said)


@contextmanager
def shown(console: Console, enabled: bool) -> Iterator[StepList | None]:
    """A `StepList` for the block (None when not ``enabled``); its status line on a terminal."""
    if not enabled:
        yield None
        return
    steps = StepList(console, status=_is_terminal(console.file))
    steps.start()
    try:
        yield steps
    finally:
        steps.stop()
