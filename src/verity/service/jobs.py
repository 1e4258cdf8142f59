"""The job store: every check the service was asked for, its progress events and its verdict.

    store = JobStore.from_url("sqlite:///jobs.sqlite")      # or JobStore(cache_path(...))
    job = store.create(request, method="rag", key=None)      # queued
    job = store.start(job.id)                               # running, runs == 1
    store.add_event(job.id, job.runs, event)                 # False once it is not running
    store.finish(job.id, job.runs, verdict.to_json_dict())   # done, exactly once
    store.report(job.id)                                    # a document's Markdown report
    store.recover()                                         # after a crash: ids to run again

The store is one SQLite file in WAL mode, and each change of state is its own committed
transaction, so a process killed at any moment (``kill -9`` included) leaves every job in
the last state it reached. Synchronous mode NORMAL loses nothing when the process dies; it
may lose the last transactions only if the machine itself loses power.

A job finishes once: `finish`, `fail` and `add_event` change a job only while it is
running *the same run* (``runs`` counts the times it was started), so a worker whose job
was cancelled, or taken back when the server stopped, cannot overwrite what happened
since. A job started again begins its event list afresh.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from verity.domain import Event
from verity.errors import ConfigError
from verity.jsonl import json_text
from verity.paths import cache_path
from verity.service.errors import JobError
from verity.service.records import (
    CANCELLED,
    FINAL,
    Job,
    JobSummary,
    Status,
    StoredEvent,
)
from verity.service.requests import CheckRequest

__all__ = [
    "CANCELLED",
    "FINAL",
    "Job",
    "JobStore",
    "JobSummary",
    "Status",
    "StoredEvent",
    "store_path_from_url",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    method TEXT,
    summary TEXT NOT NULL,
    request TEXT NOT NULL,
    verdict TEXT,
    label TEXT,
    error TEXT,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    runs INTEGER NOT NULL DEFAULT 0,
    key TEXT,
    partial TEXT,
    report TEXT
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status);
CREATE INDEX IF NOT EXISTS jobs_key ON jobs (key);
CREATE TABLE IF NOT EXISTS events (
    job TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (job, seq)
) WITHOUT ROWID;
"""
_SUMMARY_COLUMNS = (
    "id, status, method, summary, label, error, created, started, finished, runs, key"
)


def store_path_from_url(url: str) -> str:
    """The file a ``sqlite:///PATH`` URL names (``sqlite:////abs/path`` for an absolute one)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ConfigError(
            f"--db takes a URL sqlite:///PATH (sqlite:////absolute/path), not {url!r}"
        )
    return url[len(prefix) :]


class JobStore:
    """Jobs and their events in one SQLite file; safe to use from many threads."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = str(path if path is not None else cache_path("service.sqlite"))
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
            if "partial" not in columns:  # a store made before failed jobs kept their work
                self._db.execute("ALTER TABLE jobs ADD COLUMN partial TEXT")
            if "report" not in columns:  # a store made before documents kept their report
                self._db.execute("ALTER TABLE jobs ADD COLUMN report TEXT")
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the job store {self.path}: {exc}") from exc

    @classmethod
    def from_url(cls, url: str | None) -> JobStore:
        """The store a ``--db`` URL names; None is the default file in the cache folder."""
        return cls(None if url is None else store_path_from_url(url))

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- creating and reading ------------------------------------------------------------

    def create(
        self, request: CheckRequest, *, method: str | None = None, key: str | None = None
    ) -> Job:
        """Store a new queued job for this request and return it."""
        job_id = uuid.uuid4().hex
        with self._lock:
            self._db.execute(
                "INSERT INTO jobs (id, status, method, summary, request, created, key) "
                "VALUES (?, 'queued', ?, ?, ?, ?, ?)",
                (
                    job_id,
                    method,
                    request.summary(),
                    request.model_dump_json(exclude_defaults=True, by_alias=True),
                    time.time(),
                    key,
                ),
            )
        job = self.get(job_id)
        assert job is not None  # just written, under our own connection
        return job

    def get(self, job_id: str, *, key: str | None = None) -> Job | None:
        """The job with this id (only if it belongs to ``key``, when one is given)."""
        sql = f"SELECT {_SUMMARY_COLUMNS}, request, verdict, partial FROM jobs WHERE id = ?"
        args: tuple[Any, ...] = (job_id,)
        if key is not None:
            sql, args = sql + " AND key = ?", (job_id, key)
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        if row is None:
            return None
        summary = _summary(row[:11])
        return Job(
            **summary.model_dump(),
            request=json.loads(row[11]),
            verdict=json.loads(row[12]) if row[12] is not None else None,
            partial=json.loads(row[13]) if row[13] is not None else None,
        )

    def history(
        self, *, limit: int = 20, offset: int = 0, key: str | None = None
    ) -> list[JobSummary]:
        """Jobs newest first (only ``key``'s own, when a key is given)."""
        where, args = ("WHERE key = ?", [key]) if key is not None else ("", [])
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_SUMMARY_COLUMNS} FROM jobs {where} ORDER BY rowid DESC LIMIT ? OFFSET ?",
                (*args, limit, offset),
            ).fetchall()
        return [_summary(row) for row in rows]

    def count(self, *, key: str | None = None) -> int:
        """How many jobs there are (``key``'s own, when a key is given)."""
        where, args = ("WHERE key = ?", (key,)) if key is not None else ("", ())
        with self._lock:
            (found,) = self._db.execute(f"SELECT COUNT(*) FROM jobs {where}", args).fetchone()
        return int(found)

    def counts(self) -> dict[str, int]:
        """How many jobs are in each status."""
        with self._lock:
            rows = self._db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
            found = {str(status): int(n) for status, n in rows}
        return {status: found.get(status, 0) for status in (*("queued", "running"), *FINAL)}

    def events(self, job_id: str, after_seq: int = 0) -> list[StoredEvent]:
        """The job's events after ``after_seq``, in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, kind, body FROM events WHERE job = ? AND seq > ? ORDER BY seq",
                (job_id, after_seq),
            ).fetchall()
        return [StoredEvent(int(seq), str(kind), str(body)) for seq, kind, body in rows]

    # -- changes of state ---------------------------------------------------------------

    def start(self, job_id: str) -> Job | None:
        """Mark a queued job running and count the run; None if it is not queued any more."""
        with self._lock, self._transaction():
            changed = self._db.execute(
                "UPDATE jobs SET status = 'running', runs = runs + 1, started = ? "
                "WHERE id = ? AND status = 'queued'",
                (time.time(), job_id),
            ).rowcount
            if changed:
                # A run starts its events afresh: the last run's were cut short by a crash.
                self._db.execute("DELETE FROM events WHERE job = ?", (job_id,))
        return self.get(job_id) if changed else None

    def add_event(self, job_id: str, run: int, event: Event) -> bool:
        """Store an event of a running job; False if that run is no longer running."""
        body = json_text(event.model_dump(mode="json", exclude_none=True))
        with self._lock:
            cursor = self._db.execute(
                "INSERT OR REPLACE INTO events (job, seq, kind, body) "
                "SELECT ?, ?, ?, ? WHERE EXISTS "
                "(SELECT 1 FROM jobs WHERE id = ? AND runs = ? AND status = 'running')",
                (job_id, event.seq, event.kind, body, job_id, run),
            )
            return cursor.rowcount > 0

    def finish(
        self, job_id: str, run: int, verdict: dict[str, Any], report: str | None = None
    ) -> bool:
        """Record the verdict of a running job's run; False if that run had been stopped.

        ``report`` is a document's Markdown report, kept beside its result.
        """
        label = verdict.get("label")
        return self._end(
            job_id,
            run,
            "status = 'done', verdict = ?, label = ?, error = NULL, report = ?",
            (json_text(verdict), label if isinstance(label, str) else None, report),
        )

    def report(self, job_id: str, *, key: str | None = None) -> str | None:
        """A done document job's Markdown report (None: no such job, or none kept)."""
        sql, args = "SELECT report FROM jobs WHERE id = ?", [job_id]
        if key is not None:
            sql, args = sql + " AND key = ?", [job_id, key]
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def fail(
        self, job_id: str, run: int, error: JobError, partial: dict[str, Any] | None = None
    ) -> bool:
        """Record why a running job's run failed, and what it had done (``partial``).

        False if that run had been stopped.
        """
        stored = json_text(partial) if partial is not None else None
        return self._end(
            job_id,
            run,
            "status = 'failed', error = ?, partial = ?",
            (error.model_dump_json(), stored),
        )

    def requeue(self, job_id: str, run: int) -> bool:
        """Put a running job back in the queue (the server is stopping before it is done)."""
        with self._lock:
            return (
                self._db.execute(
                    "UPDATE jobs SET status = 'queued' WHERE id = ? AND runs = ? "
                    "AND status = 'running'",
                    (job_id, run),
                ).rowcount
                > 0
            )

    def cancel(self, job_id: str, *, key: str | None = None) -> Job | None:
        """Cancel a queued or running job; the job as it is now (None: no such job).

        A running job is marked cancelled at once; its worker notices at its next event.
        """
        with self._lock:
            self._db.execute(
                "UPDATE jobs SET status = 'cancelled', finished = ?, error = ? "
                "WHERE id = ? AND status IN ('queued', 'running')"
                + (" AND key = ?" if key is not None else ""),
                (time.time(), CANCELLED.model_dump_json(), job_id)
                + ((key,) if key is not None else ()),
            )
        return self.get(job_id, key=key)

    def recover(self) -> list[str]:
        """After a crash: running jobs are queued again; every queued id, oldest first."""
        with self._lock, self._transaction():
            self._db.execute("UPDATE jobs SET status = 'queued' WHERE status = 'running'")
            rows = self._db.execute(
                "SELECT id FROM jobs WHERE status = 'queued' ORDER BY rowid"
            ).fetchall()
        return [str(job_id) for (job_id,) in rows]

    def _end(self, job_id: str, run: int, assignments: str, args: tuple[Any, ...]) -> bool:
        with self._lock:
            return (
                self._db.execute(
                    f"UPDATE jobs SET {assignments}, finished = ? "
                    "WHERE id = ? AND runs = ? AND status = 'running'",
                    (*args, time.time(), job_id, run),
                ).rowcount
                > 0
            )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")


def _time(value: float | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromtimestamp(value, tz=dt.UTC)


def _summary(row: tuple[Any, ...]) -> JobSummary:
    job_id, status, method, summary, label, error, created, started, finished, runs, key = row
    return JobSummary(
        id=job_id,
        status=status,
        method=method,
        summary=summary,
        label=label,
        error=JobError.model_validate_json(error) if error else None,
        created=_time(created) or dt.datetime.fromtimestamp(0, tz=dt.UTC),
        started=_time(started),
        finished=_time(finished),
        runs=runs,
        key=key,
    )
