"""A dataset scored by one class's F1 (CheckThat!'s check-worthy class): the report's
Markdown and JSON and the terminal table show it beside accuracy and macro-F1.

The expected figures are worked out by hand on small made-up sets; the method in the
terminal test is a fake (control flow only).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from verity.bench.metrics import compute_metrics
from verity.bench.report import write_report
from verity.bench.report_positive import positive_of
from verity.bench.results import MethodResult
from verity.cli import app
from verity.domain import Claim, Evidence, Label, Verdict
from verity.errors import BadInputError

CW, NOT = Label.CHECK_WORTHY, Label.NOT_CHECK_WORTHY

# Nine made-up sentences, gold and predicted:
#   gold CW:  CW, CW, CW, NOT        -> 3 true positives, 1 false negative
#   gold NOT: NOT x 5                -> no false positive, 5 true negatives
# CHECK_WORTHY: precision 3/3, recall 3/4, F1 2 x 3 / (2 x 3 + 0 + 1) = 6/7 = 0.857
# NOT_CHECK_WORTHY: precision 5/6, recall 5/5, F1 2 x 5 / (2 x 5 + 1 + 0) = 10/11 = 0.909
# accuracy 8/9 = 0.889; macro-F1 (6/7 + 10/11) / 2 = 0.883
GOLD = [CW, CW, CW, CW, NOT, NOT, NOT, NOT, NOT]
PRED: list[Label | None] = [CW, CW, CW, NOT, NOT, NOT, NOT, NOT, NOT]


def _result(name: str) -> MethodResult:
    return MethodResult(
        name=name, metrics=compute_metrics(GOLD, PRED, (CW, NOT)), usage_per_claim={}
    )


def _rows(markdown: str) -> dict[str, dict[str, str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("| method |")]
    start = markdown.splitlines().index(lines[0])
    table = []
    for line in markdown.splitlines()[start:]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip("|").split(" | ")])
    header, rows = table[0], table[2:]
    return {row[0]: dict(zip(header, row, strict=True)) for row in rows}


def test_the_report_shows_the_positive_class_f1_beside_macro_f1(tmp_path: Path) -> None:
    manifest: dict[str, Any] = {"seed": 0, "dataset": {"positive": "CHECK_WORTHY"}}
    write_report(tmp_path, dataset="ct24-checkworthy", setting="closed",
                 results={"fake": _result("fake")}, manifest=manifest)  # fmt: skip
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    header = next(line for line in md.splitlines() if line.startswith("| method |"))
    cells = [c.strip() for c in header.strip("|").split(" | ")]
    # Its own column, right after macro-F1.
    assert cells[cells.index("macro-F1 [95% CI]") + 1] == "F1 (CHECK_WORTHY)"
    row = _rows(md)["fake"]
    assert row["F1 (CHECK_WORTHY)"] == "85.7"
    assert row["accuracy"] == "88.9" and row["macro-F1 [95% CI]"].startswith("88.3 [")
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["positive"]["label"] == "CHECK_WORTHY"
    assert data["positive"]["f1"]["fake"] == pytest.approx(6 / 7)
    assert data["manifest"]["dataset"]["positive"] == "CHECK_WORTHY"


def test_without_a_positive_class_the_report_has_no_such_column(tmp_path: Path) -> None:
    manifest: dict[str, Any] = {"dataset": {"positive": None}}
    write_report(tmp_path, dataset="made-up", setting="closed",
                 results={"fake": _result("fake")}, manifest=manifest)  # fmt: skip
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "F1 (" not in md
    assert "positive" not in json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))


def test_a_manifest_naming_no_label_is_refused() -> None:
    assert positive_of({"seed": 0}) is None
    assert positive_of({"dataset": {"positive": "NOT_CHECK_WORTHY"}}) is NOT
    with pytest.raises(BadInputError, match="'WORTHY' is not a label"):
        positive_of({"dataset": {"positive": "WORTHY"}})


# -- the terminal table ---------------------------------------------------------------------

# Eight made-up sentences in the lab's file format; the fake calls a sentence check-worthy
# when it holds a digit.
#   gold Yes: digit, digit, digit, none  -> 3 true positives, 1 false negative
#   gold No:  digit, digit, none, none   -> 2 false positives, 2 true negatives
# CHECK_WORTHY: precision 3/5, recall 3/4, F1 2 x 3 / (2 x 3 + 2 + 1) = 6/9 = 0.667
# NOT_CHECK_WORTHY: F1 2 x 2 / (2 x 2 + 1 + 2) = 4/7 = 0.571; macro-F1 (6/9 + 4/7) / 2
# = 0.619; accuracy 5/8 = 0.625
SENTENCES = [
    ("1", "Unemployment fell to 4 percent last year.", "Yes"),
    ("2", "Crime rose 12 percent in 2019.", "Yes"),
    ("3", "We created 200,000 jobs.", "Yes"),
    ("4", "The deficit doubled under his watch.", "Yes"),
    ("5", "We cut taxes 3 times.", "No"),
    ("6", "I was born in 1946.", "No"),
    ("7", '"I love this country, ""truly""."', "No"),
    ("8", "Good evening.", "No"),
]


class FakeDigitJudge:
    """A fake method: check-worthy when the sentence holds a digit."""

    name: ClassVar[str] = "direct"
    accepts: ClassVar[tuple[type[Claim], ...]] = (Claim,)

    def verify(self, subject: Claim, *, evidence: Sequence[Evidence] | None = None) -> Verdict:
        worthy = any(ch.isdigit() for ch in subject.text)
        return Verdict(label=CW if worthy else NOT, method=self.name, subject=subject)

    async def averify(
        self, subject: Claim, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        return self.verify(subject, evidence=evidence)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "fake": True}


class _FakeBuilder:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __call__(self, name: str, given: object) -> FakeDigitJudge:
        return FakeDigitJudge()


def test_the_terminal_table_shows_the_positive_class_f1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "data" / "CheckThat2024"
    folder.mkdir(parents=True)
    rows = ["Sentence_id\tText\tclass_label", *("\t".join(r) for r in SENTENCES)]
    (folder / "CT24_checkworthy_english_dev-test.tsv").write_text("\n".join(rows), "utf-8")
    monkeypatch.setattr(importlib.import_module("verity.cli.bench"), "MethodBuilder", _FakeBuilder)
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    shown = CliRunner().invoke(
        app,
        ["bench", "--dataset", "ct24-checkworthy", "--methods", "direct", "--setting",
         "closed", "--sample", "0", "--out", str(tmp_path / "out"),
         "--data-dir", str(tmp_path / "data")],
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    header = next(line for line in lines if "macro-F1" in line and "method" in line)
    titles = [c.strip() for c in header.strip("│┃").replace("┃", "│").split("│")]
    row = next(line for line in lines if line.startswith("│ direct"))
    cells = dict(zip(titles, [c.strip() for c in row.strip("│").split("│")], strict=True))
    assert cells["n"] == "8"
    assert cells["F1 (CHECK_WORTHY)"] == "0.667"
    assert (cells["accuracy"], cells["macro-F1"]) == ("0.625", "0.619")
    # The run's own report carries it too: the manifest names the class.
    manifest = json.loads(next((tmp_path / "out").rglob("manifest.json")).read_text())
    assert manifest["dataset"]["positive"] == "CHECK_WORTHY"
    report = next((tmp_path / "out").rglob("report.md")).read_text()
    assert "F1 (CHECK_WORTHY)" in report
