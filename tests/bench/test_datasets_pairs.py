"""Pair datasets (one claim, one evidence sentence, the sentence's label) against the real files.

Counts and labels are computed here from the raw JSON lines, independently of the loader;
the label map is spelled out by hand from Climate-FEVER's README.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verity.bench.datasets import dataset_names, load_dataset
from verity.domain import Claim, Label

ROOT = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(),
    reason=f"benchmark data not found at {ROOT}; set VERITY_DATA_DIR to the datasets folder",
)

# Climate-FEVER's per-sentence labels (Diggelmann et al. 2020) as verity's labels.
SENTENCE_LABELS = {
    "SUPPORTS": "SUPPORTED",
    "REFUTES": "REFUTED",
    "NOT_ENOUGH_INFO": "NOT_ENOUGH_INFO",
}


def _climate_rows() -> list[dict[str, Any]]:
    text = (ROOT / "Climate-FEVER" / "climate-fever.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_climate_fever_evidence_is_one_pair_per_annotated_sentence() -> None:
    rows = _climate_rows()
    raw = [
        (
            f"{row['claim_id']}:{n}",
            row["claim"],
            ev["evidence"],
            SENTENCE_LABELS[ev["evidence_label"]],
        )
        for row in rows
        for n, ev in enumerate(row["evidences"])
    ]
    split = load_dataset("climate-fever-evidence")
    # 1,535 claims with five sentences each (the data's README: 7,675 evidence sentences).
    assert len(split.examples) == len(raw) == 7_675 == 5 * 1_535
    assert [e.id for e in split.examples] == [r[0] for r in raw]
    assert len({e.id for e in split.examples}) == 7_675
    # A claim is kept without the spaces around it (`verity.domain.Claim`).
    assert [e.subject.text for e in split.examples] == [r[1].strip() for r in raw]
    assert all(isinstance(e.subject, Claim) and len(e.gold) == 1 for e in split.examples)
    assert [e.gold[0].text for e in split.examples] == [r[2] for r in raw]
    assert Counter(e.label.value for e in split.examples) == Counter(r[3] for r in raw)
    assert split.labels == (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO)
    assert split.label_map == SENTENCE_LABELS
    assert split.prediction_map == {}
    assert split.has_gold and "7,675 examples" in split.description


def test_a_pair_keeps_the_sentence_label_not_the_claim_label() -> None:
    split = load_dataset("climate-fever-evidence")
    by_id = {e.id: e for e in split.examples}
    # Claim 0 is SUPPORTS; its first sentence is NOT_ENOUGH_INFO, its second SUPPORTS.
    first, second = by_id["0:0"], by_id["0:1"]
    assert first.meta == {"label": "NOT_ENOUGH_INFO", "claim_id": "0", "claim_label": "SUPPORTS"}
    assert first.label is Label.NOT_ENOUGH_INFO and second.label is Label.SUPPORTED
    assert second.gold[0].id == "Global warming:14" and second.gold[0].title == "Global warming"
    assert second.gold[0].source == "climate-fever-evidence"


def test_the_pair_sets_are_registered_by_name() -> None:
    names = dataset_names()
    assert "climate-fever-evidence" in names and "fever-symmetric" in names
    assert len(names) == len(set(names))


def test_fever_symmetric_is_already_a_pair_set() -> None:
    raw = [
        json.loads(line)
        for line in (ROOT / "FEVER" / "fever_symmetric_dev.jsonl").read_text().splitlines()
        if line.strip()
    ]
    split = load_dataset("fever-symmetric")
    assert len(split.examples) == len(raw) == 708
    assert all(len(e.gold) == 1 for e in split.examples)
    expected = Counter({"SUPPORTS": "SUPPORTED", "REFUTES": "REFUTED"}[r["label"]] for r in raw)
    assert Counter(e.label.value for e in split.examples) == expected
    assert Label.NOT_ENOUGH_INFO not in split.labels
