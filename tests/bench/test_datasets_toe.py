"""The datasets ToE needs: LIAR train, LIAR-New with ToE's 3-way labels, AdvFact by name.

Expected sizes and label counts are computed here from the raw files with the csv and json
modules, and the label maps are spelled out by hand.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.bench.datasets import dataset_names, load_dataset
from verity.bench.loaders.liar import majority_baseline
from verity.domain import Claim, Label
from verity.errors import BadInputError, DatasetError, UnknownNameError

ROOT = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()
needs_data = pytest.mark.skipif(
    not ROOT.is_dir(),
    reason=f"benchmark data not found at {ROOT}; set VERITY_DATA_DIR to the datasets folder",
)

S, R, C = "SUPPORTED", "REFUTED", "CONFLICTING"
# ToE §IV-A, by hand: pants-fire, false, barely-true -> false; half-true -> uncertain;
# mostly-true, true -> true.
TOE = {
    "pants-fire": R,
    "false": R,
    "barely-true": R,
    "half-true": C,
    "mostly-true": S,
    "true": S,
}


def _tsv(rel: str) -> list[list[str]]:
    text = (ROOT / rel).read_text(encoding="utf-8")
    return [r for r in csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE) if r]


def _jsonl(rel: str) -> list[Any]:
    lines = (ROOT / rel).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_new_names_are_listed() -> None:
    names = dataset_names()
    for name in ("liar-train", "liar-new-3way", "toe-fig5", "advfact"):
        assert name in names
    assert len(names) == len(set(names))


# -- LIAR train ---------------------------------------------------------------------------


@needs_data
def test_liar_train_size_ids_and_labels_match_the_raw_file() -> None:
    rows = _tsv("LIAR/train.tsv")
    split = load_dataset("liar-train")
    assert len(split.examples) == len(rows) == 10_269
    assert [e.id for e in split.examples] == [r[0].removesuffix(".json") for r in rows]
    assert Counter(e.label.value for e in split.examples) == Counter(TOE[r[1]] for r in rows)
    # The six raw counts, added up by hand from the file's own labels.
    raw = Counter(r[1] for r in rows)
    assert Counter(e.label.value for e in split.examples) == {
        S: raw["mostly-true"] + raw["true"],
        R: raw["pants-fire"] + raw["false"] + raw["barely-true"],
        C: raw["half-true"],
    }
    assert split.label_map == TOE
    assert split.labels == (Label.SUPPORTED, Label.REFUTED, Label.CONFLICTING)
    assert [p.name for p in split.files] == ["train.tsv"]
    assert split.name == "liar-train" and "§IV-A" in split.paper


@needs_data
def test_liar_train_keeps_the_metadata_columns() -> None:
    rows = {r[0].removesuffix(".json"): r for r in _tsv("LIAR/train.tsv")}
    example = load_dataset("liar-train").examples[0]
    row = rows[example.id]
    assert isinstance(example.subject, Claim)
    assert example.subject.text == row[2] and example.subject.speaker == row[4]
    assert example.meta["label"] == row[1]
    assert example.meta["subjects"] == row[3].split(",")
    assert example.meta["context"] == row[13]


# -- LIAR-New, 3-way ----------------------------------------------------------------------


@needs_data
def test_liar_new_3way_counts_and_map() -> None:
    rows = _jsonl("LIAR-New/LIAR-New.jsonl")
    split = load_dataset("liar-new-3way")
    assert [e.id for e in split.examples] == [str(r["example_id"]) for r in rows]
    counts = Counter(e.label.value for e in split.examples)
    assert counts == Counter(TOE[r["label"]] for r in rows)
    assert counts == {S: 147, R: 1_663, C: 147}
    assert split.label_map == TOE
    half = [e for e in split.examples if e.meta["label"] == "half-true"]
    assert half and all(e.label is Label.CONFLICTING for e in half)
    # The binary liar-new reads the same file with another map: the same claims.
    assert [e.id for e in load_dataset("liar-new").examples] == [e.id for e in split.examples]
    first = split.examples[0]
    assert isinstance(first.subject, Claim) and first.subject.date == dt.date(2021, 10, 10)


@needs_data
def test_liar_new_3way_says_what_it_is_and_gives_the_majority_baseline() -> None:
    split = load_dataset("liar-new-3way")
    rows = _jsonl("LIAR-New/LIAR-New.jsonl")
    false = sum(1 for r in rows if TOE[r["label"]] == R)
    share = false / len(rows)
    assert round(share, 4) == 0.8498  # 1,663 / 1,957
    assert f"accuracy {share:.3f} ({false:,} / {len(rows):,})" in split.description
    assert "always REFUTED" in split.description
    assert "85%" in split.description
    assert "never as ToE's PolitiFact" in split.description
    cutoff = dt.date(2021, 10, 1)  # GPT-4's training data ends in September 2021
    dates = [dt.datetime.strptime(r["date"].strip(), "%B %d, %Y").date() for r in rows]
    older = sum(1 for d in dates if d < cutoff)
    assert older == 27
    assert f"all but {older} after September 2021" in split.description


def _example(i: int, label: Label) -> Example:
    return Example(id=str(i), subject=Claim(text=f"claim {i}"), label=label)


def test_majority_baseline_by_hand() -> None:
    examples = [
        _example(0, Label.REFUTED),
        _example(1, Label.SUPPORTED),
        _example(2, Label.REFUTED),
    ]
    assert majority_baseline(examples) == (Label.REFUTED, 2, pytest.approx(2 / 3))
    assert majority_baseline(examples[1:2]) == (Label.SUPPORTED, 1, 1.0)
    with pytest.raises(ValueError):
        majority_baseline([])


# -- AdvFact by name ----------------------------------------------------------------------


@pytest.fixture
def advfact_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, Path | None]]:
    """A stand-in AdvFact loader module that records its arguments."""
    calls: list[tuple[Path, Path | None]] = []

    def load_advfact(root: Path, folder: Path | None) -> DatasetSplit:
        calls.append((root, folder))
        return DatasetSplit(
            name="advfact", examples=(), labels=(Label.REFUTED,), files=(), checksum="0",
            description="fake", label_map={},
        )  # fmt: skip

    module = types.ModuleType("verity.bench.loaders.advfact")
    module.load_advfact = load_advfact  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verity.bench.loaders.advfact", module)
    return calls


def test_advfact_alone_is_the_shipped_set(
    advfact_calls: list[tuple[Path, Path | None]], tmp_path: Path
) -> None:
    assert load_dataset("advfact", data_dir=tmp_path).name == "advfact"
    assert advfact_calls == [(tmp_path.resolve(), None)]


def test_advfact_needs_no_data_folder(
    advfact_calls: list[tuple[Path, Path | None]], tmp_path: Path
) -> None:
    load_dataset("advfact:adv", data_dir=tmp_path / "missing")
    assert advfact_calls == [(tmp_path / "missing", Path("adv"))]


def test_advfact_with_a_folder(
    advfact_calls: list[tuple[Path, Path | None]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_dataset("advfact:runs/adv-1", data_dir=tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    load_dataset("advfact:~/adv", data_dir=tmp_path)
    assert [folder for _, folder in advfact_calls] == [Path("runs/adv-1"), tmp_path / "adv"]


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("advfact:", BadInputError, "give the folder after the colon"),
        ("advfact:  ", BadInputError, "give the folder after the colon"),
        ("liar:somewhere", BadInputError, "only advfact takes a ':' argument"),
        ("toe-fig5:x", BadInputError, "only advfact takes a ':' argument"),
        ("nope:somewhere", UnknownNameError, "unknown dataset 'nope:somewhere'"),
        ("advfacts", UnknownNameError, "unknown dataset"),
    ],
)
def test_only_advfact_takes_an_argument(
    advfact_calls: list[tuple[Path, Path | None]],
    tmp_path: Path,
    name: str,
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        load_dataset(name, data_dir=tmp_path)
    assert advfact_calls == []


def test_advfact_takes_no_hops(advfact_calls: list[tuple[Path, Path | None]]) -> None:
    with pytest.raises(BadInputError, match="only to hover"):
        load_dataset("advfact", hops=2)


def test_a_missing_advfact_module_is_a_dataset_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # None in sys.modules makes the import fail, as when the module is not installed.
    monkeypatch.setitem(sys.modules, "verity.bench.loaders.advfact", None)
    with pytest.raises(DatasetError, match="AdvFact loader is not available"):
        load_dataset("advfact", data_dir=tmp_path)
