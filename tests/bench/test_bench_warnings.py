"""A method's warnings about its setup: announced before the run, kept in the manifest and
at the top of the report."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, ClassVar

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.bench.report import write_report
from verity.bench.runner import BenchConfig, BenchRun, method_warnings, prepare
from verity.domain import Article, Claim, Label, Verdict
from verity.errors import BadInputError

EMPTY_WEB = (
    "no web source: ZoFia's web quadrant is empty (the paper's w/o Open Web ablation, Table 2)"
)


class FakeQuietMethod:
    """A method without ``warnings()``: it has nothing to say. Answers SUPPORTED."""

    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def verify(self, subject: Claim | Article, *, evidence: Any = None) -> Verdict:
        self.events.append("verify")
        return Verdict(label=Label.SUPPORTED, method="fake", subject=subject)

    def to_dict(self) -> dict[str, Any]:
        return {"method": "fake"}


class FakeWarnedMethod(FakeQuietMethod):
    """A method that warns about its setup, as ZoFia does without a web source."""

    def warnings(self) -> list[str]:
        return [EMPTY_WEB, "  ", "second warning"]


class FakeSilentWarnedMethod(FakeQuietMethod):
    """Has ``warnings()`` but nothing in it."""

    def warnings(self) -> list[str]:
        return []


def split(name: str = "claims") -> DatasetSplit:
    examples = tuple(
        Example(id=str(i), subject=Claim(text=f"Claim number {i}."), label=Label.SUPPORTED)
        for i in range(3)
    )
    return DatasetSplit(
        name=name, examples=examples, labels=(Label.SUPPORTED, Label.REFUTED), files=(),
        checksum="0", description="claims", label_map={},
    )  # fmt: skip


def prepared(tmp_path: Path, events: list[str]) -> BenchRun:
    kinds = {"direct": FakeWarnedMethod, "rag": FakeQuietMethod}
    config = BenchConfig(
        dataset="claims", methods=("direct", "rag"), out=tmp_path, setting="closed", sample=None
    )
    return prepare(
        config,
        load=lambda name, **_: split(name),
        build=lambda name, sources: kinds[name](events),
        sources=lambda s: [],
    )


def test_warnings_are_collected_and_stored_in_the_manifest(tmp_path: Path) -> None:
    run = prepared(tmp_path, [])
    run.close()
    # Blank lines are dropped; a method without warnings() is not listed.
    assert run.warnings == {"direct": [EMPTY_WEB, "second warning"]}
    assert run.warning_lines() == [
        f"warning: direct: {EMPTY_WEB}",
        "warning: direct: second warning",
    ]
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["warnings"] == {"direct": [EMPTY_WEB, "second warning"]}
    methods = {"a": FakeSilentWarnedMethod([]), "b": FakeQuietMethod([])}
    assert method_warnings(methods) == {}


def test_warnings_come_before_the_first_example(tmp_path: Path) -> None:
    events: list[str] = []
    run = prepared(tmp_path, events)
    try:
        run.run(warn=lambda line: events.append(line))
    finally:
        run.close()
    assert events[:2] == [f"warning: direct: {EMPTY_WEB}", "warning: direct: second warning"]
    assert events[2:] == ["verify"] * 6


def test_without_a_printer_they_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = prepared(tmp_path, [])
    with caplog.at_level(logging.WARNING, logger="verity.bench.runner"):
        try:
            run.run()
        finally:
            run.close()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"warning: direct: {EMPTY_WEB}",
        "warning: direct: second warning",
    ]


def test_warnings_reach_the_top_of_report_md_and_report_json(tmp_path: Path) -> None:
    run = prepared(tmp_path, [])
    try:
        run.run(warn=lambda line: None)
    finally:
        run.close()
    lines = (tmp_path / "report.md").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# Benchmark report: claims, closed")
    assert lines[2] == f"> **Warning (direct):** {EMPTY_WEB}"
    assert lines[3] == "> **Warning (direct):** second warning"
    assert lines[4] == "" and lines[5] == "| | |"
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["warnings"] == {"direct": [EMPTY_WEB, "second warning"]}
    assert report["manifest"]["warnings"] == report["warnings"]


def reported(tmp_path: Path) -> dict[str, Any]:
    """Run the warned-about method quietly and return its results."""
    run = prepared(tmp_path, [])
    try:
        run.run(warn=lambda line: None)
        return run.report()
    finally:
        run.close()


def test_a_report_without_warnings_starts_with_its_table(tmp_path: Path) -> None:
    results = reported(tmp_path)
    out = tmp_path / "plain"
    write_report(out, dataset="claims", setting="closed", results=results, manifest={})
    lines = (out / "report.md").read_text(encoding="utf-8").splitlines()
    assert lines[2] == "| | |" and "Warning" not in "\n".join(lines)
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["warnings"] == {}
    with pytest.raises(BadInputError, match="without a result"):
        write_report(
            out, dataset="claims", setting="closed", results=results, manifest={},
            warnings={"zofia": [EMPTY_WEB]},
        )  # fmt: skip


def test_the_stand_in_is_named_in_report_md(tmp_path: Path) -> None:
    results = reported(tmp_path)
    standin = {
        "corpus": "bench-news",
        "documents": 250,
        "excluded": {"dataset_under_test": 0, "same_title": 1, "near_copy": 40},
        "note": "news text standing in for the open web",
    }
    write_report(
        tmp_path / "s", dataset="politifact", setting="open", results=results,
        manifest={"web_standin": standin},
    )  # fmt: skip
    text = (tmp_path / "s" / "report.md").read_text(encoding="utf-8")
    assert (
        "| web stand-in | corpus bench-news: 250 documents kept, excluded: same_title 1, "
        "near_copy 40. news text standing in for the open web |"
    ) in text
