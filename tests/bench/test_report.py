"""The benchmark report: its JSON shape, its Markdown tables, its plots, its atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread

from verity.bench import report as report_module
from verity.bench.metrics import Outcome, compute_metrics, usage_per_claim
from verity.bench.report import write_report
from verity.bench.results import GroupScore, MethodResult
from verity.domain import Label, Usage
from verity.errors import BadInputError

S, R = Label.SUPPORTED, Label.REFUTED
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MANIFEST: dict[str, Any] = {
    "seed": 13,
    "code_version": "0.1.0+g1234abc",
    "dataset_checksum": "sha256:00ff",
    "methods": {"direct": {"model": "local"}, "local": {"model": "local", "iterations": 3}},
}


def make_results(errors: int = 2) -> dict[str, MethodResult]:
    gold = [S, R] * 20
    direct_pred: list[Label | None] = [S, S] * 20
    local_pred: list[Label | None] = list(gold)
    for i in range(errors):
        local_pred[i] = None
    local_pred[5] = Label.NOT_ENOUGH_INFO  # outside the binary space
    direct = MethodResult(
        name="direct",
        metrics=compute_metrics(gold, direct_pred, (S, R), bootstrap=200),
        usage_per_claim=usage_per_claim([Usage(llm_calls=1, prompt_tokens=320, seconds=0.5)]),
    )
    local = MethodResult(
        name="local",
        metrics=compute_metrics(gold, local_pred, (S, R), bootstrap=200),
        usage_per_claim=usage_per_claim(
            [Usage(llm_calls=9, prompt_tokens=4100, completion_tokens=700, seconds=6.0)]
        ),
        extra={"iterations": 1.35},
    )
    return {"direct": direct, "local": local}


def write(out: Path, results: dict[str, MethodResult] | None = None) -> None:
    write_report(
        out,
        dataset="feverous-s",
        setting="gold",
        results=results if results is not None else make_results(),
        manifest=MANIFEST,
        paper_figures={"local": {"macro_f1": 0.7045}, "direct": {}},
    )


def expected_files(*methods: str) -> set[str]:
    return {"report.json", "report.md", "metrics.png", *(f"confusion_{m}.png" for m in methods)}


def test_report_json_has_the_issue_shape_and_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "run" / "report"  # created on demand
    results = make_results()
    write(out, results)
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))

    assert set(data) == {
        "methods", "warnings", "dataset", "setting", "manifest", "paper_figures",
        "comparisons", "calibration",
    }  # fmt: skip
    assert data["paper_figures"] == {"local": {"macro_f1": 0.7045}}
    # These results keep no per-example outcomes: nothing to compare or calibrate.
    assert (data["comparisons"], data["calibration"]) == ([], {})
    assert data["warnings"] == {}  # no method warned
    assert (data["dataset"], data["setting"]) == ("feverous-s", "gold")
    assert data["manifest"] == MANIFEST
    assert list(data["methods"]) == ["direct", "local"]
    for name, entry in data["methods"].items():
        assert set(entry) == {"metrics", "usage_per_claim", "extra", "groups"}
        assert {"accuracy", "macro_f1", "balanced_accuracy", "n", "errors"} <= set(entry["metrics"])
        assert MethodResult.from_dict(name, entry) == results[name]
    assert data["methods"]["local"]["metrics"]["errors"] == 2
    assert data["methods"]["local"]["extra"] == {"iterations": 1.35}
    assert data["methods"]["local"]["usage_per_claim"]["llm_calls"] == 9.0


def table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``header_start``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return [rows[0], *rows[2:]]  # without the alignment row


def test_report_md_has_header_table_and_paper_column(tmp_path: Path) -> None:
    write(tmp_path)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")

    assert text.startswith("# Benchmark report: feverous-s, gold")
    assert "| sample seed | 13 |" in text
    assert "| code version | 0.1.0+g1234abc |" in text
    assert "| examples | 40 |" in text

    header, *rows = table_rows(text, "| method |")
    assert header[:6] == [
        "method", "n", "accuracy", "accuracy per gold label", "macro-F1 [95% CI]",
        "paper macro-F1",
    ]  # fmt: skip
    by_method = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert by_method["local"]["paper macro-F1"] == "70.5"
    assert by_method["direct"]["paper macro-F1"] == "-"
    assert by_method["direct"]["accuracy"] == "50.0"
    # Accuracy on each gold label's examples: direct says SUPPORTED to all; local gets
    # 19 of 20 SUPPORTED and 18 of 20 REFUTED (see the confusion matrix below).
    assert by_method["direct"]["accuracy per gold label"] == "SUPPORTED 100.0, REFUTED 0.0"
    assert by_method["local"]["accuracy per gold label"] == "SUPPORTED 95.0, REFUTED 90.0"
    assert by_method["local"]["errors"] == "2"
    assert by_method["local"]["LLM calls"] == "9.00"
    assert by_method["local"]["prompt tokens"] == "4,100"
    # Direct always says SUPPORTED: F1 of S = 2*20/(20+40) = 2/3, of R = 0; mean 1/3.
    assert by_method["direct"]["macro-F1 [95% CI]"].startswith("33.3 [")

    assert "## local" in text and "- iterations per claim: 1.35" in text
    per_class = table_rows(text.split("## local", 1)[1], "| class |")
    assert [row[0] for row in per_class] == ["class", "SUPPORTED", "REFUTED"]
    confusion = table_rows(text.split("## local", 1)[1], "| gold \\ predicted |")
    assert confusion[0][1:] == ["SUPPORTED", "REFUTED", "other"]
    # Local: 20 S gold, first (S) fails; 20 R gold, second (R) fails, sixth (R) is NEI.
    assert confusion[1] == ["SUPPORTED", "19", "0", "1"]
    assert confusion[2] == ["REFUTED", "0", "18", "2"]
    assert "![metrics](metrics.png)" in text
    assert "(confusion_local.png)" in text and "(confusion_direct.png)" in text


def test_plots_are_valid_non_trivial_pngs(tmp_path: Path) -> None:
    write(tmp_path)
    for name in ("metrics.png", "confusion_direct.png", "confusion_local.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE), name
        pixels = imread(tmp_path / name)
        assert pixels.shape[0] >= 300 and pixels.shape[1] >= 300, name
        colours = np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)
        assert len(colours) > 20, f"{name} looks blank"


def test_only_the_report_files_remain(tmp_path: Path) -> None:
    write(tmp_path)
    write(tmp_path)  # a second run replaces the files in place
    assert set(os.listdir(tmp_path)) == expected_files("direct", "local")


def test_a_failure_while_rendering_leaves_the_previous_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("plotting crashed")

    monkeypatch.setattr(report_module, "metrics_figure", broken)
    with pytest.raises(RuntimeError, match="plotting crashed"):
        write(tmp_path, make_results(errors=5))
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before


def test_a_failure_while_writing_leaves_whole_files_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path)
    old_json = (tmp_path / "report.json").read_bytes()
    real_replace = os.replace
    calls = []

    def replace_then_crash(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == 3:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_then_crash)
    with pytest.raises(OSError, match="disk full"):
        write(tmp_path, make_results(errors=5))
    monkeypatch.undo()

    # No temporary file is left, and report.json (written last) is still the old one.
    assert set(os.listdir(tmp_path)) == expected_files("direct", "local")
    assert (tmp_path / "report.json").read_bytes() == old_json
    for name in ("metrics.png", "confusion_direct.png", "confusion_local.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE)


def test_method_names_become_safe_file_names_and_table_cells(tmp_path: Path) -> None:
    result = make_results()["local"]
    name = "local (no L-Eval|C-Eval)"
    odd = MethodResult(name=name, metrics=result.metrics, usage_per_claim={})
    write_report(tmp_path, dataset="hover", setting="open", results={name: odd}, manifest={})
    assert set(os.listdir(tmp_path)) == expected_files("local_no_L-Eval_C-Eval")
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| local (no L-Eval\\|C-Eval) |" in text
    assert "| sample seed | - |" in text
    header, row = table_rows(text, "| method |")
    assert dict(zip(header, row, strict=True))["LLM calls"] == "-"


def test_a_run_without_bootstrap_shows_no_interval(tmp_path: Path) -> None:
    gold = [S, R, S, R]
    metrics = compute_metrics(gold, [S, R, R, R], (S, R), bootstrap=0)
    result = MethodResult(name="rag", metrics=metrics, usage_per_claim=usage_per_claim([]))
    write_report(
        tmp_path,
        dataset="fever",
        setting="open",
        results={"rag": result},
        manifest={"path": Path("/data/fever"), "seed": 0},
    )
    header, row = table_rows((tmp_path / "report.md").read_text(encoding="utf-8"), "| method |")
    assert dict(zip(header, row, strict=True))["macro-F1 [95% CI]"] == "73.3"
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["manifest"] == {"path": "/data/fever", "seed": 0}
    assert data["methods"]["rag"]["metrics"]["macro_f1_ci"] is None


@pytest.mark.parametrize(
    ("results", "paper", "message"),
    [
        ({}, None, "at least one"),
        ({"other": make_results()["local"]}, None, "named 'local'"),
        (make_results(), {"local": {"macro_f1": 70.45}}, "0-1 scale"),
    ],
)
def test_bad_arguments_are_rejected_before_writing(
    tmp_path: Path,
    results: dict[str, MethodResult],
    paper: dict[str, dict[str, float]] | None,
    message: str,
) -> None:
    with pytest.raises(BadInputError, match=message):
        write_report(
            tmp_path / "out",
            dataset="liar",
            setting="closed",
            results=results,
            manifest={},
            paper_figures=paper,
        )
    assert not (tmp_path / "out").exists()


def test_colliding_file_names_are_rejected(tmp_path: Path) -> None:
    metrics = make_results()["local"].metrics
    results = {n: MethodResult(name=n, metrics=metrics, usage_per_claim={}) for n in ("a/b", "a b")}
    with pytest.raises(BadInputError, match="collide"):
        write_report(tmp_path, dataset="x", setting="gold", results=results, manifest={})
    assert os.listdir(tmp_path) == []


def test_a_result_with_a_non_number_is_rejected() -> None:
    metrics = make_results()["local"].metrics
    with pytest.raises(BadInputError, match="extra"):
        MethodResult(name="local", metrics=metrics, usage_per_claim={}, extra={"x": float("nan")})


def test_group_scores_round_trip_and_show_in_a_table(tmp_path: Path) -> None:
    metrics = compute_metrics([Label.REFUTED], [Label.REFUTED], (Label.SUPPORTED, Label.REFUTED))
    groups = {
        "all": GroupScore(n=2, accuracy=0.5, cites_poison=0.25),
        "fakegpt": GroupScore(n=1, accuracy=1.0),
        "poisonedrag": GroupScore(n=1, accuracy=0.0, poison_in_text=1),
    }
    result = MethodResult(name="rag", metrics=metrics, usage_per_claim={}, groups=groups)
    assert MethodResult.from_dict("rag", result.to_dict()) == result
    write_report(tmp_path, dataset="advfact", setting="open", results={"rag": result}, manifest={})
    rows = table_rows((tmp_path / "report.md").read_text(encoding="utf-8"), "| method | subset |")
    assert rows[1:] == [
        ["rag", "all", "2", "50.0", "25.0"],
        ["rag", "fakegpt", "1", "100.0", "-"],
        ["rag", "poisonedrag", "1", "0.0", "given in text (1)"],
    ]


# Published figures, paired comparisons and calibration.


def with_outcomes(
    name: str, gold: list[Label], pred: list[Label | None], confidence: list[float | None]
) -> MethodResult:
    examples = tuple(
        Outcome(f"e{i}", gold=g, pred=p, confidence=c)
        for i, (g, p, c) in enumerate(zip(gold, pred, confidence, strict=True))
    )
    return MethodResult(
        name=name,
        metrics=compute_metrics(gold, pred, (S, R), bootstrap=50),
        usage_per_claim={},
        examples=examples,
    )


def compared_results() -> dict[str, MethodResult]:
    gold = [S, R] * 5
    # Both right on e0, e1; only direct on e2; only local on e3..e8; neither on e9.
    direct: list[Label | None] = [S, R, S, S, R, S, R, S, R, S]
    local: list[Label | None] = [S, R, R, R, S, R, S, R, S, S]
    return {
        "direct": with_outcomes("direct", gold, direct, [None] * 10),
        "local": with_outcomes("local", gold, local, [0.9, 0.9, 0.2, 0.2, *[None] * 6]),
    }


def test_paper_figures_stand_beside_the_measured_metric(tmp_path: Path) -> None:
    write_report(
        tmp_path,
        dataset="liar",
        setting="open",
        results=make_results(),
        manifest={},
        paper_figures={
            "local": {"accuracy": 0.712, "balanced_accuracy": 0.5},
            "direct": {"accuracy": 0.4},
            "zofia": {"macro_f1": 0.9},  # no result for it: left out
        },
    )
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    header, *rows = table_rows(text, "| method |")
    assert header[:8] == [
        "method", "n", "accuracy", "paper accuracy", "accuracy per gold label",
        "macro-F1 [95% CI]", "balanced accuracy", "paper balanced accuracy",
    ]  # fmt: skip
    assert "paper macro-F1" not in header  # no method has one
    by_method = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert by_method["local"]["paper accuracy"] == "71.2"
    assert by_method["direct"]["paper accuracy"] == "40.0"
    assert by_method["local"]["paper balanced accuracy"] == "50.0"
    assert by_method["direct"]["paper balanced accuracy"] == "-"
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["paper_figures"] == {
        "local": {"accuracy": 0.712, "balanced_accuracy": 0.5},
        "direct": {"accuracy": 0.4},
    }


def test_no_paper_figure_gives_no_paper_column(tmp_path: Path) -> None:
    write_report(tmp_path, dataset="liar", setting="open", results=make_results(), manifest={})
    header = table_rows((tmp_path / "report.md").read_text(encoding="utf-8"), "| method |")[0]
    assert not [h for h in header if h.startswith("paper")]


def test_an_unknown_paper_metric_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="known metrics: accuracy, macro_f1"):
        write_report(
            tmp_path / "out", dataset="liar", setting="open", results=make_results(),
            manifest={}, paper_figures={"local": {"f1": 0.5}},
        )  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_outcomes_round_trip_through_report_json(tmp_path: Path) -> None:
    results = compared_results()
    write_report(tmp_path, dataset="x", setting="gold", results=results, manifest={"seed": 2})
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    entry = data["methods"]["local"]
    expected = {"id": "e2", "gold": "SUPPORTED", "pred": "REFUTED", "confidence": 0.2}
    assert entry["examples"][2] == expected
    assert entry["examples"][4]["confidence"] is None
    for name, result in results.items():
        assert MethodResult.from_dict(name, data["methods"][name]) == result


def test_the_report_compares_every_two_methods(tmp_path: Path) -> None:
    write_report(
        tmp_path, dataset="x", setting="gold", results=compared_results(), manifest={"seed": 2}
    )
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "resamples of the examples, seed 2" in text
    header, row = table_rows(text, "| first | second |")
    cells = dict(zip(header, row, strict=True))
    assert (cells["first"], cells["second"], cells["n"], cells["b"], cells["c"]) == (
        "direct", "local", "10", "1", "6",
    )  # fmt: skip
    assert cells["McNemar p"] == "0.125"
    # Accuracy 30% against 80%: 50 points down, with its bootstrap interval.
    assert cells["accuracy diff [95% CI]"].startswith("-50.0 [")
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    (comparison,) = data["comparisons"]
    assert (comparison["b"], comparison["c"], comparison["resamples"]) == (1, 6, 1000)
    assert comparison["accuracy"]["interval"][1] < 0  # local is better, clearly enough


def test_the_comparison_seed_comes_from_the_manifest_or_the_caller(tmp_path: Path) -> None:
    def interval(seed_in_manifest: int, seed: int | None) -> list[float]:
        out = tmp_path / f"{seed_in_manifest}-{seed}"
        write_report(
            out, dataset="x", setting="gold", results=compared_results(),
            manifest={"seed": seed_in_manifest}, seed=seed, resamples=200,
        )  # fmt: skip
        data = json.loads((out / "report.json").read_text(encoding="utf-8"))
        return list(data["comparisons"][0]["macro_f1"]["interval"])

    assert interval(2, None) == interval(2, None) == interval(5, 2)
    assert interval(2, None) != interval(3, None)


def test_calibration_section_and_reliability_diagrams(tmp_path: Path) -> None:
    write_report(tmp_path, dataset="x", setting="gold", results=compared_results(), manifest={})
    assert set(os.listdir(tmp_path)) == expected_files("direct", "local") | {
        "reliability_local.png"
    }
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    rows = table_rows(text, "| method | examples with a confidence |")
    # local: e0 (0.9, right), e1 (0.9, right), e2 (0.2, wrong), e3 (0.2, right).
    # ECE = 2/4 * |1 - 0.9| + 2/4 * |1/2 - 0.2| = 0.05 + 0.15
    assert rows[1:] == [["direct", "0", "no confidences"], ["local", "4 of 10", "20.0"]]
    bins = table_rows(text.split("### Calibration of local", 1)[1], "| confidence |")
    assert bins[1] == ["[0.0, 0.1]", "0", "-", "-"]
    assert bins[2] == ["(0.1, 0.2]", "2", "50.0", "20.0"]
    assert bins[9] == ["(0.8, 0.9]", "2", "100.0", "90.0"]
    assert "![reliability diagram of local](reliability_local.png)" in text
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["calibration"]["direct"] is None
    assert data["calibration"]["local"]["ece"] == pytest.approx(0.2)
    assert [b["count"] for b in data["calibration"]["local"]["bins"]] == [
        0,
        2,
        0,
        0,
        0,
        0,
        0,
        0,
        2,
        0,
    ]


def test_results_in_different_label_spaces_are_not_compared(tmp_path: Path) -> None:
    results = compared_results()
    other = results["local"]
    metrics = compute_metrics([S, R], [S, R], (S, R, Label.NOT_ENOUGH_INFO), bootstrap=0)
    results["local"] = MethodResult(
        name="local", metrics=metrics, usage_per_claim={}, examples=other.examples
    )
    with pytest.raises(BadInputError, match="label space"):
        write_report(tmp_path, dataset="x", setting="gold", results=results, manifest={})


def test_names_with_dollar_signs_are_drawn_as_text(tmp_path: Path) -> None:
    results = compared_results()
    odd = {
        name: MethodResult(name=name, metrics=r.metrics, usage_per_claim={}, examples=r.examples)
        for name, r in zip(("a $x^_{$ b", "c$^$"), results.values(), strict=True)
    }
    write_report(tmp_path, dataset="a $_{$ set", setting="gold", results=odd, manifest={})
    for name in os.listdir(tmp_path):
        if name.endswith(".png"):
            assert imread(tmp_path / name).shape[0] >= 300, name


def test_the_header_names_a_variant_and_the_weights_a_method_ran(tmp_path: Path) -> None:
    manifest = MANIFEST | {
        "methods": {
            "direct": {"model": "local", "variant_kind": "paper"},
            "local": {
                "variant_kind": "untrained: heuristic policy, LLM-judge scoring, rule aggregation",
                "weights_used": {
                    "policy": {"path": "runs/w/policy.pt", "sha256": "ab12", "train_ids": 3},
                    "aggnet": {"path": "runs/w/aggnet.pt", "sha256": "cd34", "train_ids": 3},
                },
            },
        }
    }
    write_report(
        tmp_path, dataset="feverous-s", setting="gold", results=make_results(), manifest=manifest
    )
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    header = text.split("\n\n")[1].splitlines()
    assert (
        "| variant | local: untrained: heuristic policy, LLM-judge scoring, rule aggregation |"
        in header
    )
    assert (
        "| weights | local: policy runs/w/policy.pt (sha256 ab12); "
        "aggnet runs/w/aggnet.pt (sha256 cd34) |" in header
    )
    # The paper's own method, and a method without weights, add no row.
    assert not any(line.startswith(("| variant | direct", "| weights | direct")) for line in header)
