"""Per-example benchmark results in SQLite, written as they finish, safe to resume.

    store = ResultStore(out_dir / "results.sqlite")
    store.put(run_id, "local", record)          # committed before it returns
    store.done(run_id, "local")                 # ids already there: a rerun skips them

Each row is committed on its own in WAL mode, so a process killed at any moment (even by
SIGKILL) leaves every finished example in the store and no half-written one. The primary
key (run, method, example) makes a duplicate impossible.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ResultRow:
    """One method's outcome on one example."""

    example_id: str
    gold: str
    pred: str | None
    confidence: float | None
    error: str | None
    error_type: str | None
    usage: dict[str, Any]
    extra: dict[str, Any]
    verdict: dict[str, Any] | None


class ResultStore:
    """The results of every run in one output folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS runs (
                run_id TEXT PRIMARY KEY, manifest TEXT NOT NULL, created REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS results (
                run_id TEXT NOT NULL, method TEXT NOT NULL, example_id TEXT NOT NULL,
                gold TEXT NOT NULL, pred TEXT, confidence REAL,
                error TEXT, error_type TEXT, usage TEXT NOT NULL, extra TEXT NOT NULL,
                verdict TEXT, created REAL NOT NULL,
                PRIMARY KEY (run_id, method, example_id));
            """
        )
        self._db.commit()

    def save_run(self, run_id: str, manifest: dict[str, Any]) -> None:
        """Record a run's manifest (the first one stays: a rerun is the same run)."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO runs (run_id, manifest, created) VALUES (?, ?, ?)",
                (run_id, json.dumps(manifest, default=str), time.time()),
            )
            self._db.commit()

    def put(self, run_id: str, method: str, row: ResultRow) -> bool:
        """Store one result; False when it was already there (nothing is overwritten)."""
        with self._lock:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO results (run_id, method, example_id, gold, pred, "
                "confidence, error, error_type, usage, extra, verdict, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, method, row.example_id, row.gold, row.pred, row.confidence,
                    row.error, row.error_type, json.dumps(row.usage), json.dumps(row.extra),
                    json.dumps(row.verdict) if row.verdict is not None else None, time.time(),
                ),
            )  # fmt: skip
            self._db.commit()
            return cursor.rowcount == 1

    def done(self, run_id: str, method: str) -> set[str]:
        """Example ids with a stored result for this run and method."""
        with self._lock:
            rows = self._db.execute(
                "SELECT example_id FROM results WHERE run_id = ? AND method = ?",
                (run_id, method),
            ).fetchall()
        return {r[0] for r in rows}

    def forget_errors(self, run_id: str, method: str) -> int:
        """Delete this method's failed examples so that the next run retries them."""
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM results WHERE run_id = ? AND method = ? AND error IS NOT NULL",
                (run_id, method),
            )
            self._db.commit()
            return cursor.rowcount

    def rows(self, run_id: str, method: str) -> Iterator[ResultRow]:
        """Every stored result of a run and method."""
        with self._lock:
            found = self._db.execute(
                "SELECT example_id, gold, pred, confidence, error, error_type, usage, extra, "
                "verdict FROM results WHERE run_id = ? AND method = ? ORDER BY created",
                (run_id, method),
            ).fetchall()
        for r in found:
            yield ResultRow(
                example_id=r[0], gold=r[1], pred=r[2], confidence=r[3], error=r[4],
                error_type=r[5], usage=json.loads(r[6]), extra=json.loads(r[7]),
                verdict=json.loads(r[8]) if r[8] else None,
            )  # fmt: skip

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
