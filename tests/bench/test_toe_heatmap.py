"""ToE's action heatmap (Fig. 5): shares worked out by hand, the plot, the report's part."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from matplotlib.image import imread

from verity.bench.datasets import load_dataset
from verity.bench.fig5 import CATEGORIES
from verity.bench.heatmap import (
    ACTIONS,
    UNCATEGORISED,
    ActionSummary,
    action_shares,
    action_table,
    heatmap_png,
    summarize_actions,
)
from verity.bench.metrics import compute_metrics
from verity.bench.report import write_report
from verity.bench.results import MethodResult
from verity.bench.runner import BenchConfig, prepare
from verity.bench.store import ResultRow
from verity.domain import Claim, Evidence, Label, Trace, Verdict
from verity.errors import BadInputError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
S, R = Label.SUPPORTED, Label.REFUTED


def row(example_id: str, counts: Any = None, **extra: Any) -> ResultRow:
    if counts is not None:
        extra["action_counts"] = counts
    return ResultRow(
        example_id=example_id, gold="SUPPORTED", pred="SUPPORTED", confidence=0.5,
        error=None, error_type=None, usage={}, extra=extra, verdict=None,
    )  # fmt: skip


def failed(example_id: str) -> ResultRow:
    return ResultRow(
        example_id=example_id, gold="REFUTED", pred=None, confidence=None, error="boom",
        error_type="RuntimeError", usage={}, extra={}, verdict=None,
    )  # fmt: skip


def hand_rows() -> list[ResultRow]:
    # Two scientific claims of different lengths: pooled, arXiv is 6 of 8 actions (0.75);
    # a mean of per-claim shares would give (1/2 + 5/6) / 2 = 0.667 instead.
    return [
        row("s1", {"web": 1, "arxiv": 1}, dataset_category="scientific"),
        row("s2", {"arxiv": 5, "stop": 1}, dataset_category="scientific"),
        row("p1", {"factcheck": 3, "stop": 1}, dataset_category="political"),
        failed("p2"),  # no counts: not a claim of the heatmap
    ]


def test_shares_are_each_categorys_actions_pooled_over_its_claims() -> None:
    shares = action_shares(hand_rows())

    assert shares["scientific"] == {
        "web": 1 / 8, "counter": 0.0, "arxiv": 6 / 8, "wiki": 0.0, "social": 0.0,
        "factcheck": 0.0, "reddit": 0.0, "stop": 1 / 8,
    }  # fmt: skip
    assert shares["political"]["factcheck"] == 0.75
    assert shares["political"]["stop"] == 0.25
    for category in ("scientific", "political"):
        assert list(shares[category]) == list(ACTIONS)
        assert sum(shares[category].values()) == pytest.approx(1.0)


def test_categories_with_no_rows_are_listed_empty_in_the_papers_order() -> None:
    shares = action_shares(hand_rows())
    assert list(shares) == list(CATEGORIES)
    assert shares["health"] == shares["historical"] == shares["celebrity"] == {}
    assert shares["other"] == {}

    # No row counted anything: every Fig. 5 category, none with shares.
    assert action_shares([failed("x"), row("y", extra_key=1)]) == {c: {} for c in CATEGORIES}
    assert summarize_actions([failed("x")]) is None
    # Claims that took no action at all give no shares either (not a division by zero).
    summary = summarize_actions([row("z", {"stop": 0}, dataset_category="health")])
    assert summary is not None
    assert summary.claims["health"] == 1
    assert summary.shares()["health"] == {}


def test_other_categories_follow_the_six_and_uncategorised_comes_last() -> None:
    rows = [
        row("a", {"web": 1}, dataset_category="Sports"),  # case folded
        row("b", {"wiki": 1}, dataset_category="finance"),
        row("c", {"stop": 1}),  # no category where the others have one
    ]
    summary = summarize_actions(rows)
    assert summary is not None
    assert list(summary.counts) == [*CATEGORIES, "finance", "sports", UNCATEGORISED]
    assert summary.grouped_by == "dataset"
    assert summary.shares()[UNCATEGORISED]["stop"] == 1.0


def test_without_a_dataset_category_claims_group_by_the_methods_own() -> None:
    rows = [
        row("a", {"arxiv": 2, "stop": 2}, method_category="Scientific"),
        row("b", {"factcheck": 1}, method_category="political"),
    ]
    summary = summarize_actions(rows)
    assert summary is not None
    assert summary.grouped_by == "method"
    assert summary.shares()["scientific"]["arxiv"] == 0.5
    assert summary.claims == {**dict.fromkeys(CATEGORIES, 0), "scientific": 1, "political": 1}
    assert sum(summary.compared.values()) == 0  # nothing to agree with


def test_agreement_counts_claims_whose_method_category_matches_the_datasets() -> None:
    rows = [
        row("a", {"web": 1}, dataset_category="health", method_category="Health"),
        row("b", {"web": 1}, dataset_category="health", method_category="scientific"),
        row("c", {"web": 1}, dataset_category="political", method_category="political"),
        row("d", {"web": 1}, dataset_category="political"),  # the method named none
    ]
    summary = summarize_actions(rows)
    assert summary is not None
    assert (summary.agreed["health"], summary.compared["health"]) == (1, 2)
    assert (summary.agreed["political"], summary.compared["political"]) == (1, 1)
    header, *cells = table(action_table(summary))
    by_category = {line[0]: dict(zip(header, line, strict=True)) for line in cells}
    assert by_category["health"]["method's category agrees"] == "1/2"
    assert by_category["other"]["method's category agrees"] == "-"


def test_masked_actions_are_collected_and_other_actions_get_columns() -> None:
    rows = [
        row("a", {"web": 1, "bluesky": 2}, dataset_category="other", masked_actions=["reddit"]),
        row("b", {"web": 1}, dataset_category="other", masked_actions=["social", "reddit"]),
    ]
    summary = summarize_actions(rows)
    assert summary is not None
    assert summary.actions == (*ACTIONS, "bluesky")
    assert summary.masked == ("social", "reddit")  # in the agent's action order
    assert summary.shares()["other"]["bluesky"] == 0.5
    header = table(action_table(summary))[0]
    assert "reddit (masked)" in header and "social (masked)" in header
    assert "web (masked)" not in header


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"action_counts": ["web"]}, "not a mapping"),
        ({"action_counts": {"web": -1}}, "not a whole number"),
        ({"action_counts": {"web": True}}, "not a whole number"),
        ({"action_counts": {"web": 1.5}}, "not a whole number"),
        ({"action_counts": {"": 1}}, "not a name"),
        ({"action_counts": {"web": 1}, "dataset_category": 3}, "not a name"),
        ({"action_counts": {"web": 1}, "masked_actions": "reddit"}, "not a list"),
        ({"action_counts": {f"tool{i}": 1 for i in range(60)}}, "at most 64"),
    ],
)
def test_malformed_counts_are_a_clear_error(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        summarize_actions([row("bad", **extra)])


def test_summary_round_trips_through_its_dict() -> None:
    summary = summarize_actions(
        [*hand_rows(), row("h", {"wiki": 2}, dataset_category="health", method_category="x")]
    )
    assert summary is not None
    again = ActionSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again == summary


# The plot


def test_the_heatmap_is_a_png_of_the_right_size() -> None:
    shares = action_shares(hand_rows())
    png = heatmap_png(shares, "toe $x$ (no mathtext)", claims={"scientific": 2})
    assert png.startswith(PNG_SIGNATURE)
    image = imread(io.BytesIO(png), format="png")
    assert image.shape[0] >= 350 and image.shape[1] >= 600  # 6 x 8 cells, at 100 dpi

    with pytest.raises(BadInputError, match="at least one category"):
        heatmap_png({}, "nothing")


def test_labels_from_data_are_drawn_as_text_not_mathtext() -> None:
    # Each of these is a mathtext error (ValueError at drawing time) unless mathtext is
    # off for labels that come from data.
    png = heatmap_png({"$x^$": {"web": 1.0}}, "$\\nosuch$ title", masked=["$\\nosuch$"])
    assert png.startswith(PNG_SIGNATURE)


# The report


def result(name: str, actions: ActionSummary | None) -> MethodResult:
    gold = [S, R, S, R]
    return MethodResult(
        name=name,
        metrics=compute_metrics(gold, [S, R, R, R], (S, R), bootstrap=50),
        usage_per_claim={"llm_calls": 3.0},
        actions=actions,
    )


def table(lines: Sequence[str]) -> list[list[str]]:
    """Cells of a Markdown table's rows without the alignment row; escaped pipes kept."""
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        cells = line.strip().removeprefix("|").removesuffix("|").replace("\\|", "\0")
        rows.append([cell.strip().replace("\0", "\\|") for cell in cells.split("|")])
    return [rows[0], *rows[2:]]


def section(markdown: str) -> list[str]:
    lines = markdown.splitlines()
    start = lines.index("### Actions per claim category")
    return lines[start:]


def test_the_report_draws_the_heatmap_only_for_results_with_counts(tmp_path: Path) -> None:
    summary = summarize_actions(hand_rows())
    results = {"toe [guarded]": result("toe [guarded]", summary), "direct": result("direct", None)}
    write_report(tmp_path, dataset="toe-fig5", setting="open", results=results, manifest={})

    png = tmp_path / "actions_toe_guarded.png"
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    assert not (tmp_path / "actions_direct.png").exists()
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert markdown.count("### Actions per claim category") == 1
    assert "![actions per claim category](actions_toe_guarded.png)" in markdown
    # The part sits in its method's own section, before the next method's section.
    assert (
        markdown.index("## toe [guarded]")
        < markdown.index("### Actions")
        < markdown.index("## direct")
    )

    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert "actions" not in data["methods"]["direct"]
    stored = MethodResult.from_dict("toe [guarded]", data["methods"]["toe [guarded]"])
    assert stored == results["toe [guarded]"]


def test_no_counts_no_heatmap(tmp_path: Path) -> None:
    write_report(
        tmp_path, dataset="liar", setting="open", results={"direct": result("direct", None)},
        manifest={},
    )  # fmt: skip
    assert not list(tmp_path.glob("actions_*.png"))
    assert "Actions per claim category" not in (tmp_path / "report.md").read_text()


def test_category_names_from_data_are_escaped_in_the_table(tmp_path: Path) -> None:
    rows = [row("a", {"web": 1, "stop": 1}, dataset_category="left|right\n| injected | row")]
    summary = summarize_actions(rows)
    write_report(
        tmp_path, dataset="toe-fig5", setting="open", results={"toe": result("toe", summary)},
        manifest={},
    )  # fmt: skip
    lines = section((tmp_path / "report.md").read_text(encoding="utf-8"))
    start = next(i for i, line in enumerate(lines) if line.startswith("| category |"))
    header, *cells = table(lines[start:])
    assert all(len(line) == len(header) for line in cells)  # no cell broke out of its row
    assert cells[-1][:3] == ["left\\|right \\| injected \\| row", "1", "2"]
    assert cells[-1][header.index("web")] == "50.0"


def test_masked_actions_are_named_above_the_table(tmp_path: Path) -> None:
    masked = summarize_actions([row("a", {"web": 1}, masked_actions=["reddit", "social"])])
    plain = summarize_actions([row("a", {"web": 1})])
    for name, summary in (("masked", masked), ("plain", plain)):
        write_report(
            tmp_path / name, dataset="d", setting="open", results={"toe": result("toe", summary)},
            manifest={},
        )  # fmt: skip
    said = "\n".join(section((tmp_path / "masked" / "report.md").read_text()))
    assert "**Unavailable in this run (masked):** social, reddit." in said
    assert "masked" not in "\n".join(section((tmp_path / "plain" / "report.md").read_text()))


# The runner carries the trace's counts and the dataset's category into the report


class TracedMethod:
    """A method whose verdicts carry a ToE-shaped trace; the model is not the point here."""

    # A registered name: the runner looks the class up for demonstrations to leave out.
    name: ClassVar[str] = "direct"
    accepts: ClassVar[tuple[type[Claim], ...]] = (Claim,)

    def __init__(self, trace: dict[str, Any]) -> None:
        self.trace = trace

    def verify(self, subject: Claim, *, evidence: Sequence[Evidence] | None = None) -> Verdict:
        return Verdict(label=S, method="toe", subject=subject, trace=Trace(**self.trace))

    async def averify(
        self, subject: Claim, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        return self.verify(subject, evidence=evidence)

    def to_dict(self) -> dict[str, Any]:
        return {"name": "traced", "trace": self.trace}


def run_fig5(out: Path, trace: dict[str, Any]) -> tuple[dict[str, MethodResult], list[ResultRow]]:
    config = BenchConfig(
        dataset="toe-fig5", methods=("direct",), out=out, setting="closed", sample=None
    )
    run = prepare(
        config, load=load_dataset, build=lambda name, sources: TracedMethod(trace),
        sources=lambda split: [],
    )  # fmt: skip
    try:
        results = run.run()
        rows = list(run.store.rows(run.run_id, "direct"))
    finally:
        run.close()
    return results, rows


def test_a_run_on_the_fig5_set_reports_actions_per_dataset_category(tmp_path: Path) -> None:
    trace = {
        "action_counts": {"wiki": 1, "stop": 1},
        "category": "Political",
        "masked_actions": ["reddit", "social"],
    }
    results, rows = run_fig5(tmp_path, trace)

    assert len(rows) == 30
    first = next(r for r in rows if r.example_id == "health-1")
    assert first.extra["action_counts"] == {"wiki": 1, "stop": 1}
    assert first.extra["masked_actions"] == ["reddit", "social"]
    assert first.extra["method_category"] == "Political"
    assert first.extra["dataset_category"] == "health"

    summary = results["direct"].actions
    assert summary is not None
    assert summary.claims == dict.fromkeys(CATEGORIES, 5)
    assert summary.shares()["health"]["wiki"] == 0.5
    assert sum(summary.agreed.values()) == 5  # only the political claims agree

    assert (tmp_path / "actions_direct.png").read_bytes().startswith(PNG_SIGNATURE)
    said = "\n".join(section((tmp_path / "report.md").read_text(encoding="utf-8")))
    assert "matched the dataset's on 5 of 30 claims (16.7%)" in said
    assert "| health | 5 | 10 | 0.0 | 0.0 | 0.0 | 50.0 |" in said
    assert "Unavailable in this run (masked)" in said


def test_a_run_whose_traces_count_no_actions_has_no_heatmap(tmp_path: Path) -> None:
    results, rows = run_fig5(tmp_path, {"iterations_used": 1})
    assert results["direct"].actions is None
    assert "action_counts" not in rows[0].extra
    assert rows[0].extra["dataset_category"] in CATEGORIES
    assert not list(tmp_path.glob("actions_*.png"))
    assert "Actions per claim category" not in (tmp_path / "report.md").read_text()


def test_a_variant_that_is_not_the_papers_is_named_in_the_header(tmp_path: Path) -> None:
    from verity.bench.report import _variant_rows

    rows = _variant_rows(
        {
            "toe": {"variant_kind": "paper"},
            "toe/rule-agg": {"variant_kind": "component variant (verity's, not a paper ablation)"},
            "direct": {"method": "direct"},
            "toe/x|y": {"variant_kind": "paper ablation (Table III)"},
        }
    )
    assert rows == [
        "| variant | toe/rule-agg: component variant (verity's, not a paper ablation) |",
        "| variant | toe/x\\|y: paper ablation (Table III) |",
    ]
