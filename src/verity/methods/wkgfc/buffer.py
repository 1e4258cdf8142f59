"""The experience buffer (paper section 4.4): every step of every training episode, in SQLite.

    buffer = ExperienceBuffer(out / "experience.sqlite")
    buffer.add(EpisodeRow(epoch=1, prompt_id="3f2a...", example_id="fever:12", ...,
                          steps=(StepRow(t=1, state=..., action=..., ...), ...)))
    buffer.done(epoch=1, prompt_id="3f2a...")           # example ids already stored
    buffer.episodes(1, "3f2a...", ["fever:12"])         # what a gradient learns from

The paper's buffer holds one tuple per time step, D = {(s_t, a_t, o_t, r_t, critique_t)}:
the ``steps`` table, one row per step with what the policy saw before acting (a compact
state: facts and passages so far and the steps taken), its action, what it observed, the
step's reward and the critic's word on it. The ``episodes`` table holds each episode's
outcome (claim, gold and predicted label, reward, error type, overall critique, whether
the evidence sufficed); ``rewrites`` holds each mini-batch's gradient and rewritten
prompt. Rows are keyed by epoch, the policy prompt's id and the example id, and an
episode is committed with its steps as soon as it is critiqued, so an interrupted run
keeps what it learnt and a rerun reuses it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verity.errors import BadInputError

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
    sufficient INTEGER NOT NULL,
    PRIMARY KEY (epoch, prompt_id, example_id)
);
CREATE TABLE IF NOT EXISTS steps (
    epoch INTEGER NOT NULL,
    prompt_id TEXT NOT NULL,
    example_id TEXT NOT NULL,
    t INTEGER NOT NULL,
    state TEXT NOT NULL,
    action TEXT NOT NULL,
    observation TEXT NOT NULL,
    reward REAL NOT NULL,
    critique TEXT NOT NULL,
    PRIMARY KEY (epoch, prompt_id, example_id, t)
);
CREATE TABLE IF NOT EXISTS rewrites (
    epoch INTEGER NOT NULL,
    batch INTEGER NOT NULL,
    parent TEXT NOT NULL,
    gradient TEXT NOT NULL,
    prompt TEXT NOT NULL,
    left_out INTEGER NOT NULL,
    PRIMARY KEY (epoch, batch, parent)
);
"""


@dataclass(frozen=True)
class StepRow:
    """One time step: (s_t, a_t, o_t, r_t, critique_t)."""

    t: int
    state: str
    action: str
    observation: str
    reward: float
    critique: str


@dataclass(frozen=True)
class EpisodeRow:
    """One training episode's outcome, under the prompt that ran it."""

    epoch: int
    prompt_id: str
    example_id: str
    claim: str
    gold: str
    predicted: str | None
    reward: float
    error_type: str
    critique: str
    sufficient: bool
    steps: tuple[StepRow, ...] = ()


@dataclass(frozen=True)
class RewriteRow:
    """A mini-batch's gradient and the prompt rewritten along it."""

    gradient: str
    prompt: str
    left_out: int  # episodes the gradient prompt could not hold


class ExperienceBuffer:
    """Training episodes and their steps, by epoch, policy prompt and example."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        # WAL with normal syncing survives a killed process (what resuming is for) and
        # spares a sync per episode.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(episodes)")}
        if columns and "sufficient" not in columns:
            self._db.close()
            raise BadInputError(
                f"{path} was written by an older verity optimize; choose another output folder"
            )
        self._db.executescript(SCHEMA)
        self._db.commit()

    def add(self, episode: EpisodeRow) -> None:
        """Store one episode with its steps, in one commit (a rerun replaces them)."""
        key = (episode.epoch, episode.prompt_id, episode.example_id)
        with self._lock, self._db:
            self._db.execute(
                "DELETE FROM steps WHERE epoch = ? AND prompt_id = ? AND example_id = ?", key
            )
            self._db.executemany(
                "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*key, s.t, s.state, s.action, s.observation, s.reward, s.critique)
                 for s in episode.steps],
            )  # fmt: skip
            self._db.execute(
                "INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*key, episode.claim, episode.gold, episode.predicted, episode.reward,
                 episode.error_type, episode.critique, int(episode.sufficient)),
            )  # fmt: skip

    def done(self, epoch: int, prompt_id: str) -> set[str]:
        """Example ids already stored for this epoch and prompt."""
        with self._lock:
            rows = self._db.execute(
                "SELECT example_id FROM episodes WHERE epoch = ? AND prompt_id = ?",
                (epoch, prompt_id),
            ).fetchall()
        return {r[0] for r in rows}

    def episodes(self, epoch: int, prompt_id: str, example_ids: Sequence[str]) -> list[EpisodeRow]:
        """The stored episodes of these examples, in the order given, with their steps."""
        found = []
        with self._lock:
            for example_id in example_ids:
                key = (epoch, prompt_id, example_id)
                row = self._db.execute(
                    "SELECT claim, gold, predicted, reward, error_type, critique, sufficient "
                    "FROM episodes WHERE epoch = ? AND prompt_id = ? AND example_id = ?",
                    key,
                ).fetchone()
                if row is None:
                    continue
                steps = self._db.execute(
                    "SELECT t, state, action, observation, reward, critique FROM steps "
                    "WHERE epoch = ? AND prompt_id = ? AND example_id = ? ORDER BY t",
                    key,
                ).fetchall()
                claim, gold, predicted, reward, error_type, critique, sufficient = row
                found.append(
                    EpisodeRow(
                        epoch, prompt_id, example_id, claim, gold, predicted, reward,
                        error_type, critique, bool(sufficient),
                        tuple(StepRow(*s) for s in steps),
                    )
                )  # fmt: skip
        return found

    def add_rewrite(self, epoch: int, batch: int, parent: str, rewrite: RewriteRow) -> None:
        """Store a mini-batch's rewrite of the prompt with id ``parent``."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO rewrites VALUES (?, ?, ?, ?, ?, ?)",
                (epoch, batch, parent, rewrite.gradient, rewrite.prompt, rewrite.left_out),
            )

    def rewrite(self, epoch: int, batch: int, parent: str) -> RewriteRow | None:
        """The stored rewrite of this mini-batch from this prompt, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT gradient, prompt, left_out FROM rewrites "
                "WHERE epoch = ? AND batch = ? AND parent = ?",
                (epoch, batch, parent),
            ).fetchone()
        return RewriteRow(*row) if row else None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
