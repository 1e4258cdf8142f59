"""What every dataset loader shares: reading, row errors, label maps, the split itself.

A loader opens its folder with a `DataReader`, which remembers the bytes of every file it
reads so that the split's checksum pins exactly the data that was used. Each record is
parsed inside `at_row`, which turns a missing field, a wrong type, an unknown label or an
invalid domain object into a `DatasetError` naming the file and the line or item.

    reader = DataReader(root, "LIAR")
    for line, fields in reader.tsv("test.tsv", columns=14):
        with at_row(reader.path("test.tsv"), f"line {line}"):
            label = map_label(LIAR_LABELS, fields[1])
    split = build_split(reader, name="liar", title="LIAR test", examples=..., ...)
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from verity.bench.base import DatasetSplit, Example
from verity.domain import Label
from verity.errors import DatasetError

DATA_DIR_HINT = (
    "point verity at the folder of datasets with the environment variable VERITY_DATA_DIR "
    "or the data_dir argument"
)

DATA_DIR_ENV = "VERITY_DATA_DIR"
DEFAULT_DATA_DIR = Path("..", "shared", "datasets")


def data_dir(explicit: Path | None = None) -> Path:
    """The folder holding the datasets; `DatasetError` naming the full path if it is missing.

    data_dir()                      # $VERITY_DATA_DIR, else ../shared/datasets
    data_dir(Path("/data/bench"))
    """
    if explicit is not None:
        chosen, origin = Path(explicit), "the data_dir argument"
    elif os.environ.get(DATA_DIR_ENV):
        chosen, origin = Path(os.environ[DATA_DIR_ENV]), f"${DATA_DIR_ENV}"
    else:
        chosen, origin = DEFAULT_DATA_DIR, "the default, relative to the current directory"
    folder = (Path.cwd() / chosen.expanduser()).resolve()
    if not folder.is_dir():
        raise DatasetError(f"dataset folder not found: {folder} (from {origin}); {DATA_DIR_HINT}")
    return folder


# On a binary claim dataset the negative class is "not supported": a verdict of not enough
# information or of conflicting evidence does not support the claim either.
BINARY_PREDICTIONS: dict[Label, Label] = {
    Label.NOT_ENOUGH_INFO: Label.REFUTED,
    Label.CONFLICTING: Label.REFUTED,
}


class DataReader:
    """Reads one dataset's files under the data folder and remembers what it read.

    reader = DataReader(Path("../shared/datasets"), "HOVER")
    rows = reader.json("hover_dev_release_v1.1.json")
    reader.checksum()  # SHA-256 over the bytes of every file read, sorted by path
    """

    def __init__(self, root: Path, folder: str) -> None:
        self.root = root
        self.folder = root / folder
        self._read: dict[Path, bytes] = {}

    def path(self, name: str) -> Path:
        """The full path of a file of this dataset; `DatasetError` when it is missing."""
        path = (self.folder / name).resolve()
        if not path.is_file():
            raise DatasetError(f"dataset file not found: {path}; {DATA_DIR_HINT}")
        return path

    def read_bytes(self, name: str) -> bytes:
        """The raw bytes of a file, recorded for the checksum."""
        path = self.path(name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DatasetError(f"cannot read dataset file {path}: {exc}") from exc
        self._read[path] = data
        return data

    def text(self, name: str) -> str:
        """A file decoded as UTF-8 (a leading byte-order mark is dropped)."""
        data = self.read_bytes(name)
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{self.path(name)}: not UTF-8 text ({exc})") from exc

    def json(self, name: str) -> Any:
        """A whole-file JSON document."""
        text = self.text(name)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{self.path(name)}: malformed JSON ({exc})") from exc

    def jsonl(self, name: str) -> list[tuple[int, Any]]:
        """One JSON value a line, with its 1-based line number; blank lines are skipped."""
        path = self.path(name)
        rows: list[tuple[int, Any]] = []
        for number, line in enumerate(self.text(name).splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}: line {number}: malformed JSON ({exc})") from exc
        return rows

    def tsv(self, name: str, *, columns: int) -> list[tuple[int, list[str]]]:
        """Tab-separated rows taken literally (no quote handling), each with its line number.

        A row with another number of columns than ``columns`` is a `DatasetError`.
        """
        path = self.path(name)
        rows: list[tuple[int, list[str]]] = []
        reader = csv.reader(
            io.StringIO(self.text(name), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE
        )
        for fields in reader:
            if not fields:
                continue
            if len(fields) != columns:
                raise DatasetError(
                    f"{path}: line {reader.line_num}: expected {columns} tab-separated "
                    f"columns, found {len(fields)}"
                )
            rows.append((reader.line_num, fields))
        return rows

    def csv_rows(self, name: str, *, fields: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
        """Comma-separated rows with a header naming at least ``fields``, with line numbers.

        The line number is where the record ends (a quoted field may span lines).
        """
        path = self.path(name)
        reader = csv.DictReader(io.StringIO(self.text(name), newline=""))
        missing = [f for f in fields if f not in (reader.fieldnames or ())]
        if missing:
            raise DatasetError(f"{path}: header lacks column(s) {', '.join(missing)}")
        rows: list[tuple[int, dict[str, str]]] = []
        try:
            for row in reader:
                if None in row or any(row[f] is None for f in fields):
                    raise DatasetError(f"{path}: line {reader.line_num}: wrong number of columns")
                rows.append((reader.line_num, row))
        except csv.Error as exc:
            raise DatasetError(f"{path}: line {reader.line_num}: {exc}") from exc
        return rows

    def digest(self, name: str) -> str:
        """SHA-256 of one file already read."""
        return hashlib.sha256(self._read[self.path(name)]).hexdigest()

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file read so far, sorted by path."""
        return tuple(sorted(self._read, key=lambda p: p.as_posix()))

    def checksum(self) -> str:
        """SHA-256 over the bytes of the files read, concatenated in path order.

        Equal to ``cat FILE... | sha256sum`` over `files`; it does not depend on where the
        data folder lives.
        """
        digest = hashlib.sha256()
        for path in self.files:
            digest.update(self._read[path])
        return digest.hexdigest()


@contextmanager
def at_row(path: Path, where: str) -> Iterator[None]:
    """Turn a malformed record into a `DatasetError` naming the file and ``where``.

    with at_row(path, "line 12"):
        text = str_field(obj, "claim")
    """
    try:
        yield
    except DatasetError:
        raise
    # A missing key, a wrong type or a failed domain validation (pydantic's ValidationError
    # is a ValueError) all mean the record does not have the documented shape.
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise DatasetError(f"{path}: {where}: {reason}") from exc


def str_field(obj: Mapping[str, Any], key: str, *, optional: bool = False) -> str:
    """A string field of a JSON record; with ``optional``, null or absent becomes ``""``."""
    value = obj.get(key) if optional else obj[key]
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def int_field(obj: Mapping[str, Any], key: str) -> int:
    """An integer field of a JSON record (a boolean is not an integer here)."""
    value = obj[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"field {key!r} must be an integer, got {type(value).__name__}")
    return value


def list_field(obj: Mapping[str, Any], key: str) -> list[Any]:
    """A list field of a JSON record."""
    value = obj[key]
    if not isinstance(value, list):
        raise TypeError(f"field {key!r} must be a list, got {type(value).__name__}")
    return value


def as_records(value: Any, path: Path) -> list[Any]:
    """A JSON document that must be a list of records."""
    if not isinstance(value, list):
        raise DatasetError(f"{path}: expected a JSON list, got {type(value).__name__}")
    return value


def map_label(label_map: Mapping[str, Label], raw: object) -> Label:
    """The canonical label of a dataset label; an unknown label is a `ValueError`."""
    try:
        return label_map[str(raw)]
    except KeyError:
        known = ", ".join(sorted(label_map))
        raise ValueError(f"unknown label {raw!r}; expected one of {known}") from None


def parse_date(text: str, fmt: str) -> dt.date:
    """A date in the dataset's own format (``strptime`` syntax)."""
    return dt.datetime.strptime(text.strip(), fmt).date()


def label_names(label_map: Mapping[str, Label]) -> dict[str, str]:
    """The label map as stored on a split: dataset label -> canonical label name."""
    return {raw: label.value for raw, label in label_map.items()}


def build_split(
    reader: DataReader,
    *,
    name: str,
    title: str,
    examples: Iterable[Example],
    labels: tuple[Label, ...],
    label_map: dict[str, str],
    paper: str,
    notes: Sequence[str] = (),
    prediction_map: dict[Label, Label] | None = None,
    corpus: Path | None = None,
    has_gold: bool = False,
) -> DatasetSplit:
    """Check ids and labels, count the classes and assemble the `DatasetSplit`.

    The description reads ``TITLE: N examples (LABEL n, ...). NOTES``, so every row that
    a loader left out is said where the split is shown.
    """
    items = tuple(examples)
    duplicates = [i for i, n in Counter(e.id for e in items).items() if n > 1]
    if duplicates:
        raise DatasetError(f"{name}: duplicate example ids, e.g. {duplicates[:3]}")
    outside = {e.label for e in items} - set(labels)
    if outside:
        raise DatasetError(f"{name}: labels {sorted(outside)} are outside the label space")
    counts = Counter(e.label for e in items)
    spread = ", ".join(f"{label.value} {counts[label]:,}" for label in labels)
    description = " ".join([f"{title}: {len(items):,} examples ({spread}).", *notes])
    return DatasetSplit(
        name=name,
        examples=items,
        labels=labels,
        files=reader.files,
        checksum=reader.checksum(),
        description=description,
        label_map=label_map,
        prediction_map=dict(prediction_map or {}),
        corpus=corpus,
        has_gold=has_gold,
        paper=paper,
    )


def write_atomic(target: Path, text: str, what: str) -> None:
    """Write ``text`` to ``target`` in one step; `DatasetError` naming ``what`` on failure.

    Written beside the target and renamed, so a reader never sees half a file.
    """
    tmp: str | None = None
    try:
        handle, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise DatasetError(f"cannot write {what} to {target}: {exc}") from exc
