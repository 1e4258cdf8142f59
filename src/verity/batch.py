"""Batch checking from JSONL to JSONL, written as results finish, resumable after a crash.

    items, bad = read_items(Path("inputs.jsonl"))
    with ResultFile(Path("results.jsonl"), source=Path("inputs.jsonl")) as output:
        run_batch(items, method.verify, output, concurrency=2)

    # On a Ray cluster: the work as a recipe each worker builds its methods from.
    checks = Checks(partial(verifier_for, settings, {Claim: "rag"}, 16))
    with engine_for("ray") as engine, ResultFile(...) as output:
        run_batch(items, checks, output, concurrency=16, engine=engine)

Each input line is a JSON object, a claim or an article, with an optional ``id``:

    {"id": "c1", "claim": "Paris is in France.", "date": "2020-01-01", "speaker": "Ann"}
    {"id": "a1", "title": "...", "text": "...", "url": "https://...", "date": "2020-01-01"}

A line with a ``claim`` key is a claim (``date`` YYYY-MM-DD and ``speaker`` optional); a
line with ``text`` and no ``claim`` is an article (``title``, ``url`` and ``date``
optional); a line with ``document`` is a whole text checked claim by claim
(``{"id": "d1", "document": "...", "title": "...", "url": "...", "date": "..."}``).
Other keys are ignored. Each output line is the object ``verity check --json`` prints,
plus ``id``. A document's line is not done while some of its claims failed
(``"complete": false``): a rerun checks it again and appends its new line, the last line
of an id being the one that holds. An item's key is its ``id``, else a hash of what identifies the
claim or article; a rerun skips every key already in the output.

The output file is the user's data, so it is handled with care:

* It is opened, checked and locked before any model is loaded, so a mistake costs nothing.
* verity resumes only from a file it wrote: every complete line must be a verity result
  (`is_result`). A file holding anything else is refused, never truncated or appended to.
* The output may not be the input file, and must be a regular file (a pipe or a device
  would block or swallow results).
* A lock (``<output>.lock``) refuses a second batch on the same output while one runs.
* A last line cut short by a crash is one of verity's own torn writes: it is dropped and
  redone. Each result is written in one call and flushed to disk before the next.
* Failures go to ``<output>.errors.jsonl``; when a run ends, that file keeps only the
  failures still standing (a claim that succeeded on a retry is taken out).

Budgets (`verity.llm.budget`): each item is checked within ``budget``; the whole run
within ``run_budget``. An item over its own budget fails like any other (the errors file
says so, with what it spent, and a rerun tries it again); once the run's budget is spent
the run stops taking items, those in flight end at their next model call, and the result
says why (`BatchResult.stopped`): a rerun with a larger budget goes on where it stopped.

Whatever the engine (`verity.engines`), results are written here, in the driver, as
they arrive: a Ray worker only checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from verity.documents.types import DocumentVerdict
from verity.domain import Article, Claim, Usage, Verdict
from verity.engines import Engine, portable_error
from verity.errors import BadInputError, BudgetExceededError
from verity.extraction.types import Document
from verity.inputs import document_from_record, open_regular_file, subject_from_record
from verity.jsonl import json_line
from verity.limits import Limits, check_subject_size
from verity.llm.budget import Budget, Spend, spending

if TYPE_CHECKING:
    from verity.config import Settings
    from verity.methods.base import Method

#: Characters of an error message kept in ``<output>.errors.jsonl``.
MAX_ERROR_CHARS = 2_000

# What a batch checks, and what each check gives.
Subject = Claim | Article | Document
Result = Verdict | DocumentVerdict


@dataclass(frozen=True)
class BatchItem:
    """One claim, article or document of a batch, with the key that identifies it across runs."""

    key: str
    line: int
    subject: Subject


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


def item_key(record: dict[str, Any], subject: Subject) -> str:
    """The record's id, else a stable hash of what identifies the claim or article."""
    if record.get("id") is not None:
        return str(record["id"])
    if isinstance(subject, Claim):
        fields = [subject.text, str(subject.date), subject.speaker]
    elif isinstance(subject, Document):
        fields = ["document", subject.title, subject.text, subject.url, str(subject.date)]
    else:
        fields = ["article", subject.title, subject.text, subject.url, str(subject.date)]
    basis = json.dumps(fields, ensure_ascii=False)
    return "sha1:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:16]


def read_items(path: Path, limits: Limits | None = None) -> tuple[list[BatchItem], list[BadLine]]:
    """Parse a JSONL file of claims and articles; bad lines are reported, good ones kept.

    The file is read a line at a time, so a line longer than the limits allow
    (`Limits.line_bytes`) costs that line only, never the memory to hold it.
    """
    limits = limits or Limits()
    items: list[BatchItem] = []
    bad: list[BadLine] = []
    seen: set[str] = set()
    with open_regular_file(path, "input file") as fh:
        for number, raw in _lines(fh, limits.line_bytes()):
            if raw is None:
                bad.append(BadLine(number, f"longer than {limits.line_bytes():,} bytes"))
                continue
            outcome = _item(number, raw, limits, seen)
            if isinstance(outcome, BadLine):
                bad.append(outcome)
            elif outcome is not None:
                items.append(outcome)
    return items, bad


def _lines(fh: IO[bytes], max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """Numbered lines; None for a line over ``max_bytes``, whose rest is skipped unread."""
    number = 0
    while raw := fh.readline(max_bytes + 1):
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield number, None
            continue
        yield number, raw


def _item(number: int, raw: bytes, limits: Limits, seen: set[str]) -> BatchItem | BadLine | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadLine(number, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
    if not text.strip():
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(number, f"not valid JSON ({exc.msg}, column {exc.colno})")
    except RecursionError:
        return BadLine(number, "not valid JSON (nested too deeply)")
    if not isinstance(record, dict):
        return BadLine(number, "not a JSON object")
    try:
        subject: Subject
        if "document" in record:
            subject = document_from_record(record, limits.article_chars)
        else:
            subject = subject_from_record(record)
            check_subject_size(subject, limits)
    except BadInputError as exc:
        return BadLine(number, str(exc))
    key = item_key(record, subject)
    if key in seen:
        return BadLine(number, f"duplicate id {key!r}")
    seen.add(key)
    return BatchItem(key=key, line=number, subject=subject)


def is_result(record: object) -> bool:
    """Whether a decoded output line is a result verity wrote.

    A claim's or article's is `Verdict.to_json_dict`, a document's
    `DocumentVerdict.to_json_dict`, each with the ``id``.
    """
    if not (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("method"), str)
        and isinstance(record.get("usage"), dict)
    ):
        return False
    if isinstance(record.get("document"), dict):
        return isinstance(record.get("claims"), list) and isinstance(record.get("summary"), dict)
    return isinstance(record.get("label"), str) and isinstance(record.get("trace"), dict)


def is_error_entry(record: object) -> bool:
    """Whether a decoded line of ``<output>.errors.jsonl`` is one verity wrote."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("error"), str)
        and isinstance(record.get("type"), str)
    )


class ResultFile:
    """The output of a batch: checked, locked and appended to; see the module docstring.

    Use it as a context manager; `done` holds the keys already written.

        with ResultFile(Path("results.jsonl"), source=Path("claims.jsonl")) as output:
            output.done                     # keys of earlier runs
            output.write({"id": "c1", ...})
    """

    def __init__(self, path: Path, *, source: Path | None = None) -> None:
        self.path = path
        self.errors_path = path.with_name(path.name + ".errors.jsonl")
        self.source = source
        self.done: set[str] = set()
        self._lock = FileLock(str(path.with_name(path.name + ".lock")), timeout=0)
        self._write_lock = threading.Lock()
        self._results: IO[bytes] | None = None
        self._errors: IO[bytes] | None = None
        self._earlier_errors: list[dict[str, Any]] = []

    def __enter__(self) -> ResultFile:
        self.open()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Check the output, take the lock, read what is done, open for appending."""
        _check_target(self.path, "--output")
        _check_target(self.errors_path, "the errors file")
        if self.source is not None and _same_file(self.path, self.source):
            raise BadInputError(f"--output {self.path} is the input file; give another file")
        try:
            self._lock.acquire()
        except Timeout as exc:
            raise BadInputError(
                f"another verity batch is writing {self.path}; wait for it to finish"
            ) from exc
        except OSError as exc:
            raise BadInputError(f"cannot lock {self.path}: {exc.strerror or exc}") from exc
        try:
            self.done = _read_own(self.path, is_result, "result", keep_torn=False)
            self._earlier_errors = _read_errors(self.errors_path)
            self._results = _append(self.path)
        except BaseException:
            self.close()
            raise

    def write(self, record: dict[str, Any]) -> None:
        """Append one result and flush it to disk."""
        self._put(self._results, record)
        with self._write_lock:
            self.done.add(str(record["id"]))

    def write_error(self, item: BatchItem, error: Exception) -> None:
        """Append one failure and flush it to disk."""
        message = str(error)
        if len(message) > MAX_ERROR_CHARS:  # an error may quote a whole answer or page
            message = message[:MAX_ERROR_CHARS] + " ..."
        entry: dict[str, Any] = {"id": item.key, "line": item.line, "error": message}
        usage = getattr(error, "usage", None)
        if isinstance(usage, Usage):  # what the failed check spent, for the run's bill
            entry["usage"] = usage.model_dump(mode="json")
        with self._write_lock:
            if self._errors is None:  # opened on the first failure: no empty file otherwise
                self._errors = _append(self.errors_path)
        self._put(self._errors, {**entry, "type": type(error).__name__})

    def _put(self, handle: IO[bytes] | None, record: dict[str, Any]) -> None:
        if handle is None:
            raise RuntimeError("ResultFile is not open")
        line = json_line(record).encode("utf-8")
        with self._write_lock:
            # One write per line in append mode: a crash leaves at most one torn last line.
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        """Rewrite the errors file to the failures still standing; release the lock."""
        try:
            for handle in (self._results, self._errors):
                if handle is not None:
                    handle.close()
            if self._results is not None:
                self._compact_errors()
        finally:
            self._results = self._errors = None
            if self._lock.is_locked:
                self._lock.release()

    def _compact_errors(self) -> None:
        current = _read_errors(self.errors_path)
        kept: dict[str, dict[str, Any]] = {}
        for entry in current:
            # An item written since it failed is done; of the rest, the latest failure stays.
            if entry["id"] not in self.done:
                kept[entry["id"]] = entry  # the latest failure of each claim
        if len(kept) == len(current):
            return
        if not kept:
            self.errors_path.unlink(missing_ok=True)
            return
        tmp = self.errors_path.with_name(self.errors_path.name + ".tmp")
        body = "".join(json_line(e) for e in kept.values())
        tmp.write_text(body, encoding="utf-8")
        os.replace(tmp, self.errors_path)


def _check_target(path: Path, what: str) -> None:
    if not path.parent.is_dir():
        raise BadInputError(f"{what} {path}: folder {path.parent} does not exist")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise BadInputError(f"cannot use {what} {path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise BadInputError(f"{what} {path} is a folder; give a file name")
    if not stat.S_ISREG(mode):
        raise BadInputError(f"{what} {path} is not a regular file (a pipe or a device?)")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _read_own(path: Path, own: Callable[[object], bool], what: str, *, keep_torn: bool) -> set[str]:
    """Keys of a file verity wrote; `BadInputError` if any complete line is not its own.

    A last line without its newline that starts like one of verity's lines is a write
    cut short by a crash: it is removed so the item is redone.
    """
    if not path.exists():
        return set()
    with path.open("rb") as fh:
        blob = fh.read()
    keys: set[str] = set()
    lines = blob.split(b"\n")
    tail = lines.pop()  # empty when the file ends with a newline
    for number, raw in enumerate(lines, start=1):
        record = _decode(raw)
        if not own(record):
            raise BadInputError(
                f"{path} exists and its line {number} is not a verity {what}: verity "
                "appends only to files it wrote; choose a new file or move this one away"
            )
        # A document with failed claims is redone by a rerun, as a failed item is.
        if record.get("complete") is not False:
            keys.add(str(record["id"]))
    if tail and not keep_torn:
        if not _torn_write(tail):
            raise BadInputError(
                f"{path} exists and its last line is not a verity {what}: verity "
                "appends only to files it wrote; choose a new file or move this one away"
            )
        with path.open("rb+") as fh:
            fh.truncate(len(blob) - len(tail))
    return keys


# How verity's lines begin: the id, then the method (a result) or the input line number
# (an error entry). A line of an input file begins with an id and a claim or a text.
_ID = re.compile(rb'\{"id": "(?:[^"\\]|\\.)*')
_AFTER_ID = (b'", "method": ', b'", "line": ')


def _torn_write(tail: bytes) -> bool:
    """Whether a last line without its newline is one of verity's writes cut by a crash.

    It is when it does not parse (a complete object is someone's data, never a torn
    write) and begins the way verity's own lines begin, as far as it goes.
    """
    if _decode(tail) is not None:
        return False
    found = _ID.match(tail)
    if found is None:
        return b'{"id": "'.startswith(tail)  # cut before the id's value
    rest = tail[found.end() :]
    return any(rest.startswith(start) or start.startswith(rest) for start in _AFTER_ID)


def _read_errors(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    _read_own(path, is_error_entry, "error entry", keep_torn=False)
    entries = []
    for raw in path.read_bytes().splitlines():
        record = _decode(raw)
        if is_error_entry(record):
            entries.append(record)
    return entries


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None


def _append(path: Path) -> IO[bytes]:
    """Open a regular file for appending; checked on the descriptor, so nothing blocks.

    Non-blocking: opening a pipe with no reader fails at once (ENXIO) instead of waiting,
    even if the path became a pipe after `_check_target` looked at it.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise BadInputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInputError(f"{path} is not a regular file (a pipe or a device?)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


@dataclass(frozen=True)
class Outcome:
    """One item's verdict, or the error that stopped its check."""

    verdict: Result | None = None
    error: Exception | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent from a Ray worker: an error that could not be rebuilt on the driver goes
        # as the nearest kind of error that can (`verity.engines.portable_error`).
        error = portable_error(self.error) if self.error is not None else None
        return (Outcome, (self.verdict, error))


@dataclass(frozen=True)
class Checks:
    """A batch's work for an engine: each item's `Outcome`, its error caught.

    ``verifier`` makes the function that checks one claim or article; it is called once
    per worker, so for Ray it must be picklable (a `functools.partial` of `verifier_for`).
    """

    verifier: Callable[[], Callable[[Subject], Result]]
    # What each item's check may spend (None: no limit).
    budget: Budget | None = None

    def build(self) -> Callable[[BatchItem], Outcome]:
        """The function that checks one item."""
        verify = self.verifier()

        def one(item: BatchItem) -> Outcome:
            # A document's checker bounds each of its claims' checks with the budget (see
            # `verity.cli.document.batch_checker`); the whole text is bounded by the run's.
            limit = None if isinstance(item.subject, Document) else self.budget
            try:
                with spending(limit):
                    return Outcome(verdict=verify(item.subject))
            except Exception as exc:  # noqa: BLE001 - recorded per item, see run_batch
                return Outcome(error=exc)

        return one

    def failed(self, item: BatchItem, error: Exception) -> Outcome:
        """The outcome of an item that could not be checked at all."""
        return Outcome(error=error)


SubjectKind = type[Claim] | type[Article]


def methods_for(settings: Settings, names: dict[SubjectKind, str]) -> dict[SubjectKind, Method]:
    """The method for each kind of subject; claims and articles on one method share it."""
    from verity.api import method_from_settings

    by_name: dict[str, Method] = {}
    for kind, name in names.items():
        if name not in by_name:
            by_name[name] = method_from_settings(settings, kind)
    return {kind: by_name[name] for kind, name in names.items()}


def verifier_for(
    settings: Settings, names: dict[SubjectKind, str], concurrency: int = 1
) -> Callable[[Subject], Result]:
    """A function checking each subject with its kind's method, for ``concurrency`` at once.

    What a worker builds from a batch's settings (`Checks`); the models follow the
    concurrency quietly, the driver having said what caps it.
    """
    from verity.llm.spec import ModelSet

    methods = methods_for(settings, names)
    for method in methods.values():
        models = getattr(method, "models", None)
        if isinstance(models, ModelSet):
            models.follow(concurrency)
    return partial(_verify_with, methods)


def _verify_with(methods: dict[SubjectKind, Method], subject: Subject) -> Result:
    # Document lines never reach a worker: the driver refuses them on other engines.
    if isinstance(subject, Document):
        raise BadInputError("a document line needs --engine thread")
    return methods[type(subject)].verify(subject)


class BatchResult(list[Failure]):
    """The items that failed; ``stopped`` is the run budget's error when it ended the run."""

    stopped: BudgetExceededError | None = None


def run_batch(
    items: Iterable[BatchItem],
    verify: Callable[[Subject], Result] | Checks,
    output: ResultFile,
    *,
    concurrency: int = 1,
    on_result: Callable[[BatchItem, Result | None], None] | None = None,
    engine: Engine | None = None,
    budget: Budget | None = None,
    run_budget: Budget | None = None,
) -> BatchResult:
    """Check every item not yet in ``output``, appending each result as it finishes.

    An error on one item is returned as a failure (and written to the errors file) while
    the others go on: a long batch is not lost to one odd claim or article. An interrupt
    stops the run after the checks in flight; a rerun resumes after the last written
    result. ``engine`` runs the checks (default: threads in this process); an engine
    other than threads needs ``verify`` as `Checks` it can send to its workers. Either
    way, results are written here, one at a time, and ``on_result`` is called likewise.
    ``budget`` bounds each item's check, ``run_budget`` the whole run (module docs).
    """
    from verity.engines.thread import ThreadEngine

    todo = [item for item in items if item.key not in output.done]
    failures = BatchResult()
    work = verify if isinstance(verify, Checks) else Checks(partial(_given, verify))
    if budget is not None:
        work = replace(work, budget=budget)
    runner = engine or ThreadEngine()
    # Counted here, as results arrive, whatever the engine; in this process each call is
    # also admitted by the run's spend (`spending` below), which stops a check on time.
    tally = Spend(run_budget or Budget(), scope="run")

    def record(item: BatchItem, outcome: Outcome) -> None:
        if outcome.verdict is None:
            error = outcome.error or RuntimeError("no verdict and no error")
            failures.append(Failure(item, error))
            output.write_error(item, error)
            if on_result:
                on_result(item, None)
            _stop_if_spent(error, getattr(error, "usage", None))
            return
        record = outcome.verdict.to_json_dict()
        # The method second: how a line cut short by a crash is known as verity's own.
        output.write({"id": item.key, "method": record.pop("method"), **record})
        if on_result:
            on_result(item, outcome.verdict)
        _stop_if_spent(None, outcome.verdict.usage)

    def _stop_if_spent(error: Exception | None, usage: object) -> None:
        recorded[0] += 1
        if isinstance(usage, Usage):
            tally.finished(usage)
        spent = error if isinstance(error, BudgetExceededError) and error.scope == "run" else None
        if recorded[0] >= len(todo):  # nothing left to stop, but say why the last one failed
            failures.stopped = spent or failures.stopped
            return
        if spent is not None:
            raise spent  # the run's budget, met in the check itself: take no more items
        tally.refuse_if_spent()

    recorded = [0]
    limited = run_budget is not None and not run_budget.unlimited
    within = spending(run_budget, scope="run") if limited and runner.local else nullcontext()
    try:
        with within:
            runner.run(work, todo, record, concurrency=concurrency)
    except BudgetExceededError as exc:
        if exc.scope != "run":
            raise
        failures.stopped = exc
    return failures


def _given(verify: Callable[[Subject], Result]) -> Callable[[Subject], Result]:
    return verify
