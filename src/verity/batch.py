"""Batch checking from JSONL to JSONL, written as results finish, resumable after a crash.

    items, bad = read_claims(Path("claims.jsonl"))
    run_batch(items, method.verify, Path("results.jsonl"), concurrency=2)

Each input line is an object with ``claim`` and optional ``id``, ``date`` (ISO), ``speaker``.
Each output line is the object ``verity check --json`` prints, plus ``id``. An item's key
is its ``id``, else a hash of its claim, date and speaker; a rerun skips every key already
in the output. A line cut short by a crash is dropped on the next run and redone.
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

from pydantic import ValidationError

from verity.domain import Claim, Verdict
from verity.errors import BadInputError


@dataclass(frozen=True)
class BatchItem:
    """One claim of a batch, with the key that identifies it across runs."""

    key: str
    line: int
    claim: Claim


@dataclass(frozen=True)
class BadLine:
    """An input line that cannot be checked, and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class Failure:
    """A claim whose check failed, and the error."""

    item: BatchItem
    error: Exception


def item_key(record: dict[str, Any], claim: Claim) -> str:
    """The record's id, else a stable hash of what identifies the claim."""
    if record.get("id") is not None:
        return str(record["id"])
    basis = json.dumps([claim.text, str(claim.date), claim.speaker], ensure_ascii=False)
    return "sha1:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:16]


def read_claims(path: Path) -> tuple[list[BatchItem], list[BadLine]]:
    """Parse a JSONL file of claims; bad lines are reported, good ones kept."""
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
            claim = Claim(
                text=record.get("claim") or "",
                date=record.get("date"),
                speaker=record.get("speaker"),
            )
        except ValidationError as exc:
            fields = ", ".join(str(e["loc"][0]) for e in exc.errors())
            bad.append(
                BadLine(
                    number,
                    f"invalid {fields}: a non-empty 'claim' is required"
                    " and 'date' must be YYYY-MM-DD",
                )
            )
            continue
        key = item_key(record, claim)
        if key in seen:
            bad.append(BadLine(number, f"duplicate id {key!r}"))
            continue
        seen.add(key)
        items.append(BatchItem(key=key, line=number, claim=claim))
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
    verify: Callable[[Claim], Verdict],
    output: Path,
    *,
    concurrency: int = 1,
    on_result: Callable[[BatchItem, Verdict | None], None] | None = None,
) -> list[Failure]:
    """Check every item not yet in ``output``, appending each result as it finishes.

    An error on one claim is returned as a failure (and appended to
    ``<output>.errors.jsonl``) while the others go on: a long batch is not lost to one
    odd claim. An interrupt stops the run after the checks in flight; a rerun resumes
    after the last written result.
    """
    done = done_keys(output)
    todo = [item for item in items if item.key not in done]
    results = JsonlAppender(output)
    errors = JsonlAppender(output.with_name(output.name + ".errors.jsonl"))
    failures: list[Failure] = []

    def one(item: BatchItem) -> None:
        try:
            verdict = verify(item.claim)
        except Exception as exc:  # noqa: BLE001 - recorded per claim, see the docstring
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
