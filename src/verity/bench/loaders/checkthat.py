"""CheckThat! 2024 Task 1, English: which sentences of US presidential debates to check.

    split = load_ct24_checkworthy(Path("../shared/datasets"))   # the lab's dev-test file
    split.examples[0].subject.text, split.examples[0].label     # a sentence, CHECK_WORTHY or not
    split.positive                                              # Label.CHECK_WORTHY

The lab (Hasanain et al. 2024, built from ClaimBuster, Arslan et al. 2020) releases three
labelled English files, one sentence a row: ``Sentence_id``, ``Text`` and ``class_label``
(``Yes`` or ``No``). They are tab-separated, but a field holding a double quote is quoted
the CSV way (``"He said ""no""."``), so they are read with the csv module's quoting and not
taken literally. The lab scores a system by the F1 of the check-worthy class alone, which
each split names as its ``positive`` class.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.common import DataReader, at_row, build_split, label_names, map_label
from verity.domain import CHECKWORTHY_LABELS, Claim, Label
from verity.errors import DatasetError

FOLDER = "CheckThat2024"
COLUMNS = ("Sentence_id", "Text", "class_label")
# The lab's two labels: Yes, the sentence holds a claim worth fact-checking; No, it does not.
CT24_LABELS = {"Yes": Label.CHECK_WORTHY, "No": Label.NOT_CHECK_WORTHY}
PAPER = (
    "CheckThat! 2024 Task 1 (Hasanain et al. 2024), English check-worthiness; "
    "the lab's measure is the F1 of the check-worthy class"
)
# The lab's gold-labelled test file (341 sentences, the count the data folder's README
# gives for it) is not among the released files read here; the lab's figures are on it.
NOTE = "The lab's gold-labelled test set (341 sentences) is not included."


def load_ct24_checkworthy(root: Path) -> DatasetSplit:
    """The English dev-test file: 318 sentences."""
    return _load(root, "dev-test", "ct24-checkworthy")


def load_ct24_checkworthy_dev(root: Path) -> DatasetSplit:
    """The English dev file: 1,032 sentences."""
    return _load(root, "dev", "ct24-checkworthy-dev")


def load_ct24_checkworthy_train(root: Path) -> DatasetSplit:
    """The English train file: 22,501 sentences."""
    return _load(root, "train", "ct24-checkworthy-train")


def _load(root: Path, part: str, name: str) -> DatasetSplit:
    reader = DataReader(root, FOLDER)
    file = f"CT24_checkworthy_english_{part}.tsv"
    path = reader.path(file)
    examples: list[Example] = []
    for line, (sentence_id, text, raw) in _rows(reader, file):
        with at_row(path, f"line {line}"):
            if not sentence_id.strip():
                raise ValueError("empty Sentence_id")
            examples.append(
                Example(
                    id=sentence_id.strip(),
                    subject=Claim(text=text),
                    label=map_label(CT24_LABELS, raw),
                    meta={"label": raw},
                )
            )
    split = build_split(
        reader,
        name=name,
        title=f"CheckThat! 2024 Task 1 English {part}",
        examples=examples,
        labels=CHECKWORTHY_LABELS,
        label_map=label_names(CT24_LABELS),
        paper=PAPER,
        notes=(NOTE,),
    )
    # The lab's official measure of Task 1 (Hasanain et al. 2024) is the F1 of the Yes class.
    return replace(split, positive=Label.CHECK_WORTHY)


def _rows(reader: DataReader, file: str) -> list[tuple[int, tuple[str, str, str]]]:
    """The rows after the header, each with the line its record ends on."""
    path = reader.path(file)
    rows = csv.reader(io.StringIO(reader.text(file), newline=""), delimiter="\t", strict=True)
    found: list[tuple[int, tuple[str, str, str]]] = []
    try:
        header = next(rows, None)
        if header is None or tuple(header) != COLUMNS:
            raise DatasetError(
                f"{path}: line 1: expected the header {' / '.join(COLUMNS)}, found {header!r}"
            )
        for fields in rows:
            if not fields:
                continue
            if len(fields) != len(COLUMNS):
                raise DatasetError(
                    f"{path}: line {rows.line_num}: expected {len(COLUMNS)} tab-separated "
                    f"columns, found {len(fields)}"
                )
            found.append((rows.line_num, (fields[0], fields[1], fields[2])))
    except csv.Error as exc:
        raise DatasetError(f"{path}: line {rows.line_num}: {exc}") from exc
    return found
