"""CheckThat! 2024 Task 1 (English check-worthiness) against the real released files.

Sizes and class counts are written out as counted once from the files with the csv module;
the label map is spelled out by hand from the lab's Yes / No.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from verity.bench.base import DatasetSplit
from verity.bench.datasets import dataset_names, load_dataset
from verity.domain import Claim, Label
from verity.errors import DatasetError

ROOT = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()
FOLDER = "CheckThat2024"

pytestmark = pytest.mark.skipif(
    not (ROOT / FOLDER).is_dir(),
    reason=f"CheckThat! 2024 data not found under {ROOT}; set VERITY_DATA_DIR",
)

CW, NOT = Label.CHECK_WORTHY, Label.NOT_CHECK_WORTHY
# name -> (file part, sentences, Yes, No), counted from the released files.
SPLITS = {
    "ct24-checkworthy": ("dev-test", 318, 108, 210),
    "ct24-checkworthy-dev": ("dev", 1_032, 238, 794),
    "ct24-checkworthy-train": ("train", 22_501, 5_413, 17_088),
}


def _file(part: str) -> Path:
    return ROOT / FOLDER / f"CT24_checkworthy_english_{part}.tsv"


@pytest.mark.parametrize("name", list(SPLITS))
def test_sizes_class_counts_and_label_space(name: str) -> None:
    part, size, yes, no = SPLITS[name]
    split = load_dataset(name)
    assert split.name == name
    assert len(split.examples) == size
    assert Counter(e.label for e in split.examples) == {CW: yes, NOT: no}
    assert Counter(e.meta["label"] for e in split.examples) == {"Yes": yes, "No": no}
    assert split.labels == (CW, NOT)
    assert split.label_map == {"Yes": "CHECK_WORTHY", "No": "NOT_CHECK_WORTHY"}
    assert split.prediction_map == {}
    assert not split.has_gold
    # The lab scores the F1 of the check-worthy class alone.
    assert split.positive is CW
    assert all(isinstance(e.subject, Claim) and e.gold == () for e in split.examples)
    assert split.files == (_file(part),)
    assert split.checksum == hashlib.sha256(_file(part).read_bytes()).hexdigest()
    assert f"{size:,} examples (CHECK_WORTHY {yes:,}, NOT_CHECK_WORTHY {no:,})" in (
        split.description
    )
    # The figures the lab published are on its test set, which is not among these files.
    assert "gold-labelled test set (341 sentences) is not included" in split.description


def test_calling_every_sentence_check_worthy_scores_the_positive_floor() -> None:
    from verity.bench.metrics import compute_metrics

    split = load_dataset("ct24-checkworthy")
    assert split.positive is not None
    scored = compute_metrics([e.label for e in split.examples], [CW] * 318, split.labels)
    # Precision 108/318, recall 1: F1 = 2 x 108 / (318 + 108) = 216 / 426.
    assert scored.per_class[split.positive].f1 == pytest.approx(216 / 426)


def test_rows_keep_the_files_ids_and_order() -> None:
    split = load_dataset("ct24-checkworthy")
    # The first two and the last data rows of the dev-test file.
    assert [e.id for e in split.examples[:2]] == ["37436", "37440"]
    first = split.examples[0]
    assert first.subject.text == "He's been a professor for a long time at a great school."
    assert first.label is NOT and first.meta == {"label": "No"}
    dev = load_dataset("ct24-checkworthy-dev")
    second = dev.examples[1]
    assert (second.id, second.label) == ("80", CW)
    assert second.subject.text == "We're consuming 50 percent of the world's cocaine."


def test_a_quoted_field_is_read_with_csv_quoting() -> None:
    dev = {e.id: e for e in load_dataset("ct24-checkworthy-dev").examples}
    # In the file: "You know, I saw a movie - ""Crocodile Dundee.""" (CSV doubled quotes).
    assert dev["26"].subject.text == 'You know, I saw a movie - "Crocodile Dundee."'
    assert dev["26"].label is NOT


def test_the_names_are_registered_in_documentation_order() -> None:
    names = dataset_names()
    at = names.index("ct24-checkworthy")
    assert names[at : at + 3] == [
        "ct24-checkworthy", "ct24-checkworthy-dev", "ct24-checkworthy-train"
    ]  # fmt: skip
    assert names[at - 1] == "summeval"


def _copy(tmp_path: Path, part: str = "dev-test") -> Path:
    target = tmp_path / FOLDER / f"CT24_checkworthy_english_{part}.tsv"
    target.parent.mkdir(parents=True)
    shutil.copyfile(_file(part), target)  # content only: the originals are read-only
    return target


def _edit_line(path: Path, index: int, line: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[index] = line
    path.write_text("\n".join(lines), encoding="utf-8")


def test_an_unknown_label_names_the_file_the_line_and_the_label(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _edit_line(copy, 2, "37440\tThere's no way they would give it up.\tMaybe")
    with pytest.raises(DatasetError) as info:
        load_dataset("ct24-checkworthy", data_dir=tmp_path)
    message = str(info.value)
    assert str(copy) in message and "line 3" in message and "'Maybe'" in message


def test_a_missing_column_names_the_file_and_the_line(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _edit_line(copy, 4, "37470\tNo label on this row.")
    with pytest.raises(DatasetError) as info:
        load_dataset("ct24-checkworthy", data_dir=tmp_path)
    message = str(info.value)
    assert str(copy) in message and "line 5" in message and "found 2" in message


def test_a_header_without_the_label_column_is_refused(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _edit_line(copy, 0, "Sentence_id\tText\tlabel")
    with pytest.raises(DatasetError, match=r"line 1: expected the header .*class_label"):
        load_dataset("ct24-checkworthy", data_dir=tmp_path)


def test_an_empty_id_names_the_line(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _edit_line(copy, 1, "\tHe's been a professor for a long time at a great school.\tNo")
    with pytest.raises(DatasetError, match=r"line 2: empty Sentence_id"):
        load_dataset("ct24-checkworthy", data_dir=tmp_path)


def test_a_positive_class_outside_the_label_space_is_refused() -> None:
    with pytest.raises(DatasetError, match="positive class CHECK_WORTHY is not among"):
        DatasetSplit(
            name="made-up",
            examples=(),
            labels=(Label.SUPPORTED, Label.REFUTED),
            files=(),
            checksum="",
            description="",
            label_map={},
            positive=CW,
        )
