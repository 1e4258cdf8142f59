"""Batch checking from JSONL to JSONL, written as results finish, resumable after a crash.

    items, bad = read_items(Path("inputs.jsonl"))
    run_batch(items, method.verify, Path("results.jsonl"), concurrency=2)

Each input line is a JSON object, a claim or an article, with an optional ``id``:

    {"id": "c1", "claim": "Paris is in France.", "date": "2020-01-01", "speaker": "Ann"}
    {"id": "a1", "title": "...", "text": "...", "url": "https://...", "date": "2020-01-01"}

A line with a ``claim`` key is a claim (``date`` YYYY-MM-DD and ``speaker`` optional); a
line with ``text`` and no ``claim`` is an article (``title``, ``url`` and ``date``
optional). Other keys are ignored. Each output line is the object ``verity check --json``
prints, plus ``id``. An item's key is its ``id``, else a hash of what identifies the
claim or article; a rerun skips every key already in the output. A line cut short by a
crash is dropped on the next run and redone.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verity.domain import Article, Claim, Verdict
from verity.errors import BadInputError
from verity.inputs import subject_from_record


@dataclass(frozen=True)
class BatchItem:
    """One claim or article of a batch, with the key that identifies it across runs."""

    key: str
    line: int
    subject: Claim | Article


@dataclass(frozen=True)
class BadLine:
    """An input line that cannot be checked, and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class Failure:
    """A claim or article whose check failed, and the error."""

    item: BatchItem
    error: Exception


def item_key(record: dict[str, Any], subject: Claim | Article) -> str:
    """The record's id, else a stable hash of what identifies the claim or article."""
    if record.get("id") is not None:
        return str(record["id"])
    if isinstance(subject, Claim):
        fields = [subject.text, str(subject.date), subject.speaker]
    else:
        fields = ["article", subject.title, subject.text, subject.url, str(subject.date)]
    basis = json.dumps(fields, ensure_ascii=False)
    return "sha1:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:16]


def read_items(path: Path) -> tuple[list[BatchItem], list[BadLine]]:
    """Parse a JSONL file of claims and articles; bad lines are reported, good ones kept."""
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise BadInputError(f"cannot read input file {path}: {exc.strerror or exc}") from exc
    items: list[BatchItem] = []
    bad: list[BadLine] = []
    seen: set[str] = set()
    # Decoded line by line: one bad byte costs its line, not the file.
    for number, raw_bytes in enumerate(blob.splitlines(), start=1):
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(BadLine(number, "not valid UTF-8"))
            continue
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            bad.append(BadLine(number, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            bad.append(BadLine(number, "not a JSON object"))
            continue
        try:
            subject = subject_from_record(record)
        except BadInputError as exc:
            bad.append(BadLine(number, str(exc)))
            continue
        key = item_key(record, subject)
        if key in seen:
            bad.append(BadLine(number, f"duplicate id {key!r}"))
            continue
        seen.add(key)
        items.append(BatchItem(key=key, line=number, subject=subject))
    return items, bad


def _drop_partial_tail(path: Path) -> None:
    # A crash mid-write leaves a last line without its newline; it is redone, not kept.
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return
        fh.truncate(data.rfind(b"\n") + 1)


def done_keys(path: Path) -> set[str]:
    """Keys of every complete result already in an output file."""
    _check_writable(path)
    _drop_partial_tail(path)
    keys: set[str] = set()
    if not path.exists():
        return keys
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read output file {path} to resume it: {exc}") from exc
    for raw in text.splitlines():
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "id" in record:
            keys.add(str(record["id"]))
    return keys


class JsonlAppender:
    """Appends one JSON object per line, flushed to disk before returning."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict[str, Any]) -> None:
        """Append and fsync one record."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def run_batch(
    items: Iterable[BatchItem],
    verify: Callable[[Claim | Article], Verdict],
    output: Path,
    *,
    concurrency: int = 1,
    on_result: Callable[[BatchItem, Verdict | None], None] | None = None,
) -> list[Failure]:
    """Check every item not yet in ``output``, appending each result as it finishes.

    An error on one item is returned as a failure (and appended to
    ``<output>.errors.jsonl``) while the others go on: a long batch is not lost to one
    odd claim or article. An interrupt stops the run after the checks in flight; a rerun resumes
    after the last written result.
    """
    done = done_keys(output)
    todo = [item for item in items if item.key not in done]
    results = JsonlAppender(output)
    errors = JsonlAppender(output.with_name(output.name + ".errors.jsonl"))
    failures: list[Failure] = []

    def one(item: BatchItem) -> None:
        try:
            verdict = verify(item.subject)
        except Exception as exc:  # noqa: BLE001 - recorded per item, see the docstring
            failures.append(Failure(item, exc))
            errors.write(
                {"id": item.key, "line": item.line, "error": str(exc), "type": type(exc).__name__}
            )
            if on_result:
                on_result(item, None)
            return
        results.write({"id": item.key, **verdict.to_json_dict()})
        if on_result:
            on_result(item, verdict)

    if concurrency <= 1:
        for item in todo:
            one(item)
    else:
        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            for future in as_completed([pool.submit(one, item) for item in todo]):
                future.result()
        finally:
            # On an interrupt, drop the queued checks instead of running them all first.
            pool.shutdown(wait=True, cancel_futures=True)
    return failures


def _check_writable(output: Path) -> None:
    if output.is_dir():
        raise BadInputError(f"--output {output} is a folder; give a file name")
    if not output.parent.is_dir():
        raise BadInputError(f"--output {output}: folder {output.parent} does not exist")
