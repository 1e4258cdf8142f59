"""What the engine tests send to Ray workers: importable by name there (see conftest.py).

Each crash is a real one (``os._exit``) in the worker process; a marker file counts them,
so that a test knows the worker did die and how often.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verity import events
from verity.domain import Article, Claim, Event, Label, Verdict
from verity.errors import BadInputError, MissingKeyError, SourceUnavailableError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import Method, load_method
from verity.sources.base import Source
from verity.testing import FakeChatModel

# Outer limit of a wait for another process: only a hang reaches it.
PATIENCE = 60.0


def label_by_length(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    """A loopback endpoint's answer: the label follows the prompt's length, so that each
    claim has its own answer; a claim containing BROKEN gets no JSON (a model error)."""
    text = str(messages[-1]["content"]) if messages else ""
    if any("BROKEN" in str(m["content"]) for m in messages):  # the repair request too
        return "no JSON here"
    label = "SUPPORTED" if len(text) % 2 else "REFUTED"
    return {"explanation": f"length {len(text)}", "label": label, "confidence": 0.5}


def crash(marker: Path) -> None:
    """Record a crash in ``marker`` and kill this process on the spot."""
    with marker.open("a") as fh:
        fh.write("crash\n")
    os._exit(1)


def first_time(marker: Path) -> bool:
    """True for exactly one caller across processes: the one that claims the marker."""
    try:
        os.close(os.open(f"{marker}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def crashes(marker: Path) -> int:
    """How many crashes ``marker`` recorded."""
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def crashing_verifier(
    marker: str, crash_on: str, *, always: bool = False
) -> Callable[[Claim | Article], Verdict]:
    """A verify function that kills its worker on ``crash_on`` (once, or every time)."""
    path = Path(marker)

    def verify(subject: Claim | Article) -> Verdict:
        if subject.text == crash_on and (always or first_time(path)):
            crash(path)
        label = Label.SUPPORTED if len(subject.text) % 2 else Label.REFUTED
        return Verdict(label=label, method="crash-test", subject=subject)

    return verify


class CrashOnceBuild:
    """Builds ``direct`` on a scripted fake model that kills its worker the first time
    it sees ``crash_on`` in a prompt (the fake stands in for control flow only)."""

    def __init__(self, marker: str, crash_on: str) -> None:
        self.marker, self.crash_on = Path(marker), crash_on

    def __call__(self, name: str, sources: Sequence[Source]) -> Method:
        def script(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
            text = messages[-1].content
            if self.crash_on in text and first_time(self.marker):
                crash(self.marker)
            label = "SUPPORTED" if len(text) % 2 else "REFUTED"
            return json.dumps({"explanation": "e", "label": label, "confidence": 0.5})

        fake = FakeChatModel(script, model="crash-once-fake")
        return load_method(name, models=ModelSet(ModelClient(fake, cache=None)), sources=sources)


def no_sources(_split: object) -> list[Source]:
    return []


class HandshakeExecutor:
    """An executor for `RayExecutor` tests: its first event must reach the driver (which
    answers by creating a file) before it goes on, so the events are shown to arrive
    while the check runs, not with the verdict."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.pid = os.getpid()

    def __call__(self, request: dict[str, Any], listener: Callable[[Event], None]) -> Verdict:
        claim = Claim(text=request["claim"])
        with events.listening(listener):
            events.check_started("handshake", claim.text)
            if request.get("raise") == "bad-input":
                raise BadInputError("this claim cannot be checked")
            if request.get("raise") == "missing-key":
                raise MissingKeyError("the test service", "TEST_SERVICE_KEY")
            if request.get("crash_once") and first_time(self.folder / "crash"):
                crash(self.folder / "crash")
            seen = self.folder / f"{request['id']}.seen"
            deadline = time.monotonic() + PATIENCE
            while not seen.exists():
                if time.monotonic() > deadline:
                    raise SourceUnavailableError("the driver never saw the first event")
                time.sleep(0.01)
            events.check_ended("handshake", Label.SUPPORTED, 0.0)
        return Verdict(
            label=Label.SUPPORTED, method="handshake", subject=claim, explanation=str(self.pid)
        )


class Doubles:
    """Work for control flow: twice each number."""

    def build(self) -> Callable[[int], int]:
        return lambda n: 2 * n

    def failed(self, item: int, error: Exception) -> str:
        return f"{item}: {error}"
