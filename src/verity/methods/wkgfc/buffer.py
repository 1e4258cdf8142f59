"""The experience buffer: every training episode, its critique and reward, in SQLite.

    buffer = ExperienceBuffer(out / "experience.sqlite")
    buffer.add(epoch=0, prompt_id="p0", example_id="fever:12", ...)
    buffer.critiques(epoch=0, prompt_id="p0")     # what the next rewrite learns from

Rows are committed one by one, so an interrupted optimisation keeps what it learnt.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    epoch INTEGER NOT NULL,
    prompt_id TEXT NOT NULL,
    example_id TEXT NOT NULL,
    claim TEXT NOT NULL,
    gold TEXT NOT NULL,
    predicted TEXT,
    reward REAL NOT NULL,
    error_type TEXT NOT NULL,
    critique TEXT NOT NULL,
    episode TEXT NOT NULL,
    PRIMARY KEY (epoch, prompt_id, example_id)
)
"""


class ExperienceBuffer:
    """Training episodes by epoch and policy prompt."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute(SCHEMA)
        self._db.commit()

    def add(
        self,
        *,
        epoch: int,
        prompt_id: str,
        example_id: str,
        claim: str,
        gold: str,
        predicted: str | None,
        reward: float,
        error_type: str,
        critique: str,
        episode: dict[str, Any],
    ) -> None:
        """Store one episode (a rerun of the same episode replaces it)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (epoch, prompt_id, example_id, claim, gold, predicted, reward, error_type,
                 critique, json.dumps(episode, default=str)),
            )  # fmt: skip
            self._db.commit()

    def done(self, epoch: int, prompt_id: str) -> set[str]:
        """Example ids already stored for this epoch and prompt."""
        with self._lock:
            rows = self._db.execute(
                "SELECT example_id FROM episodes WHERE epoch = ? AND prompt_id = ?",
                (epoch, prompt_id),
            ).fetchall()
        return {r[0] for r in rows}

    def critiques(self, epoch: int, prompt_id: str) -> list[dict[str, Any]]:
        """Claim, gold, prediction, reward, error type and critique of each episode."""
        with self._lock:
            rows = self._db.execute(
                "SELECT claim, gold, predicted, reward, error_type, critique FROM episodes "
                "WHERE epoch = ? AND prompt_id = ? ORDER BY example_id",
                (epoch, prompt_id),
            ).fetchall()
        keys = ("claim", "gold", "predicted", "reward", "error_type", "critique")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
