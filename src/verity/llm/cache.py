"""On-disk cache of model answers, keyed on everything that determines an answer.

    cache = ResponseCache(path)
    key = cache_key(backend.identity(), messages, params, schema)
    hit = cache.get(key)

The key covers backend, model, endpoint, messages, generation parameters and schema, so a
change to any of them is a miss. Answers are stored whatever the temperature: a rerun of a
benchmark then reproduces the first run exactly, which is what researchers ask of it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verity.domain import Message
from verity.llm.base import GenParams, RawCompletion


def cache_key(
    identity: dict[str, Any],
    messages: Sequence[Message],
    params: GenParams,
    schema: dict[str, Any] | None,
) -> str:
    """A stable hash of one request."""
    payload = {
        "identity": identity,
        "messages": [m.model_dump() for m in messages],
        "params": params.model_dump(),
        "schema": schema,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A SQLite table of answers, safe to share between threads and processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS answers ("
                " key TEXT PRIMARY KEY, completion TEXT NOT NULL, created REAL NOT NULL)"
            )
            conn.commit()
            self._conn = conn
        return self._conn

    def get(self, key: str) -> RawCompletion | None:
        """The stored answer for this key, or None."""
        with self._lock:
            row = (
                self._db()
                .execute("SELECT completion FROM answers WHERE key = ?", (key,))
                .fetchone()
            )
        return RawCompletion.model_validate_json(row[0]) if row else None

    def put(self, key: str, completion: RawCompletion) -> None:
        """Store an answer (the last write for a key wins)."""
        with self._lock:
            db = self._db()
            db.execute(
                "INSERT OR REPLACE INTO answers (key, completion, created) VALUES (?, ?, ?)",
                (key, completion.model_dump_json(), time.time()),
            )
            db.commit()

    def close(self) -> None:
        """Close the connection; the cache reopens on next use."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
