"""Loaded embedded models are freed before the interpreter tears down (fakes, no model)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest


class FakeLoadedModel:
    """A fake loaded model: records whether it was closed, and whether while in use."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.closed_unlocked: bool | None = None

    def close(self) -> None:
        self.closed_unlocked = not self.lock.locked()


def test_every_loaded_model_is_closed_and_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    from verity.llm import local_gguf

    lock = threading.Lock()
    fake = FakeLoadedModel(lock)
    monkeypatch.setattr(local_gguf, "_loaded", {("fake.gguf", 512): (fake, lock)})
    local_gguf.close_all()
    assert fake.closed_unlocked is False  # closed while holding its lock: no call in flight
    assert local_gguf._loaded == {}


def test_models_are_closed_when_the_interpreter_exits(tmp_path: Path) -> None:
    marker = tmp_path / "closed"
    script = (
        "import threading\n"
        "from verity.llm import local_gguf\n"
        "class FakeModel:\n"
        "    def close(self):\n"
        f"        open({str(marker)!r}, 'w').write('yes')\n"
        "local_gguf._loaded[('fake.gguf', 512)] = (FakeModel(), threading.Lock())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "yes"
