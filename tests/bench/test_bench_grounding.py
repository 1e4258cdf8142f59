"""Grounding in a benchmark run: stored with each result, scored per method beside
accuracy, its checker counted apart (a scripted fake model: control flow only)."""

from __future__ import annotations

import importlib
import json
import sqlite3
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from verity.bench.datasets import load_dataset
from verity.bench.results import GroundingScore, MethodResult
from verity.bench.runner import BenchConfig, Rebuild, method_warnings, prepare
from verity.cli import app
from verity.errors import BadInputError
from verity.llm.budget import Budget, Spend
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.testing import FakeChatModel

DATA = Path("../shared/datasets")
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")

EXPLANATION = "The passage names the place [1]. It gives the date as well [1]."


def _check(statuses: tuple[str, str], argues: str) -> str:
    return json.dumps(
        {
            "sentences": [
                {"n": n, "status": s, "references": ["1"] if s == "supported" else []}
                for n, s in enumerate(statuses, 1)
            ],
            "argues_for_label": argues,
        }
    )


# What the fake checker says of the sample's examples, in the sample's order, and the
# figures worked out by hand from it:
#   1: both sentences supported, argues for the label   -> share 1.0
#   2: one supported, one unsupported, argues against   -> share 0.5, contradicts
#   3: one unsupported, one stating no fact, unclear    -> share 0.0
#   4: no valid answer, twice (the call and its repair) -> the check failed
# grounded = (1.0 + 0.5 + 0.0) / 3 = 0.5 (the failed check has no share);
# contradicts label = 1 of the 3 checks that ran = 1/3;
# checker calls per verdict = (1 + 1 + 1 + 2) / 4 = 1.25, the method's own stay 1.0.
CHECKER_SAYS = [
    [_check(("supported", "supported"), "yes")],
    [_check(("supported", "unsupported"), "no")],
    [_check(("unsupported", "no_claim"), "unclear")],
    ["not json", "still not json"],
]


def _fake(answers: dict[str, list[str]]) -> FakeChatModel:
    """A fake: rag's answer always the same; the checker's by the claim it is asked about."""

    def script(messages, schema):
        asked = "\n".join(m.content for m in messages)  # a repair round asks last
        if schema is None or "argues_for_label" not in json.dumps(schema):
            return json.dumps(
                {"explanation": EXPLANATION, "label": "SUPPORTED", "confidence": 0.5, "cited": [1]}
            )
        (claim,) = [c for c in answers if c in asked]
        return answers[claim].pop(0)

    return FakeChatModel(script, model="fake-bench-grounding")


def _run(tmp_path: Path, grounding: str):
    answers: ClassVar[dict[str, list[str]]] = {}
    fake = _fake(answers)

    def build(name, sources):
        return load_method(name, models=ModelSet(ModelClient(fake)), sources=sources)

    config = BenchConfig(
        dataset="feverous-s", methods=("rag",), out=tmp_path / "out", setting="gold",
        sample=4, seed=3, grounding=grounding,  # type: ignore[arg-type]
    )  # fmt: skip
    run = prepare(config, load=load_dataset, build=build, sources=lambda split: [])
    for example, said in zip(run.sample, CHECKER_SAYS, strict=True):
        answers[example.subject.text[:40]] = list(said)
    return run, fake, build


def _stored(out: Path) -> list[dict]:
    with sqlite3.connect(out / "results.sqlite") as db:
        return [json.loads(e) for (e,) in db.execute("SELECT extra FROM results")]


def test_a_grounded_run_stores_each_check_and_reports_the_figures_worked_by_hand(
    tmp_path: Path,
) -> None:
    run, fake, _ = _run(tmp_path, "on")
    results = run.run()
    spent = run.spent()
    run.close()
    assert len(fake.requests) == 4 + 5  # four rag calls, five checker calls
    extras = _stored(tmp_path / "out")
    shares = sorted(
        (e["grounding"]["grounded_share"] for e in extras), key=lambda x: (x is None, x)
    )
    assert shares == [0.0, 0.5, 1.0, None]
    assert all(e["grounding"]["mode"] == "on" for e in extras)
    assert run.manifest["grounding"] == "on"
    assert spent.llm_calls == 9  # the run's spend counts the checker's calls too

    score = results["rag"].grounding
    assert score is not None
    assert score.checked == 3 and score.errors == 1
    assert score.grounded == pytest.approx(0.5)
    assert score.contradicts_label == pytest.approx(1 / 3)
    assert score.usage_per_verdict["llm_calls"] == pytest.approx(1.25)
    assert results["rag"].usage_per_claim["llm_calls"] == pytest.approx(1.0)

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    stored = report["methods"]["rag"]["grounding"]
    assert stored["grounded"] == pytest.approx(0.5) and stored["checked"] == 3
    assert MethodResult.from_dict("rag", report["methods"]["rag"]).grounding == score
    md = (tmp_path / "out" / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| method | n |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    row = next(line for line in md.splitlines() if line.startswith("| rag | 4 |"))
    values = [c.strip() for c in row.strip("|").split("|")]
    assert values[cells.index("grounded")] == "50.0"
    assert values[cells.index("contradicts label")] == "33.3"
    assert values[cells.index("LLM calls")] == "1.00"  # the method's own calls
    assert "| rag | 3 | 1 | 1.25 |" in md  # the checker's, apart


def test_a_run_without_grounding_makes_no_extra_call_and_shows_no_such_column(
    tmp_path: Path,
) -> None:
    run, fake, _ = _run(tmp_path, "off")
    results = run.run()
    run.close()
    assert len(fake.requests) == 4
    assert all("grounding" not in e for e in _stored(tmp_path / "out"))
    assert results["rag"].grounding is None
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "grounding" not in report["methods"]["rag"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "grounded" not in md and "contradicts label" not in md
    assert run.manifest["grounding"] == "off"


def test_grounding_is_not_in_the_run_id_and_reaches_a_rebuilt_method(tmp_path: Path) -> None:
    on, _, build = _run(tmp_path / "a", "on")
    off, _, _ = _run(tmp_path / "b", "off")
    assert on.run_id == off.run_id  # it never changes a verdict: a run resumes either way
    assert on.methods["rag"].grounding == "on" and off.methods["rag"].grounding == "off"
    # A worker on another engine builds the method again from the run's config.
    again = Rebuild(on.config, "rag", "rag", build, lambda split: [])(on.split)
    assert again.grounding == "on"
    on.close()
    off.close()


def test_the_checkers_calls_count_toward_the_runs_budget(tmp_path: Path) -> None:
    run, _, _ = _run(tmp_path, "on")
    tally = Spend(Budget(), scope="run")  # counted from the stored results alone
    run.run(tally=tally)
    run.close()
    assert tally.calls == 4 + 5


class _NoGroundingStep:
    """A method of the protocol that does not carry the shared grounding step."""

    def warnings(self) -> list[str]:
        return []


def test_a_method_without_the_grounding_step_is_named_when_grounding_is_asked() -> None:
    methods = {"plain": _NoGroundingStep()}
    assert method_warnings(methods, "on") == {
        "plain": ["no grounding step: its explanations are not checked"]
    }
    assert method_warnings(methods, "off") == {}


def test_the_score_of_no_grounded_verdict_is_none() -> None:
    assert GroundingScore.of([]) is None
    only_failed = GroundingScore.of([{"error": "ModelOutputError: x", "usage": {"llm_calls": 2}}])
    assert only_failed is not None and only_failed.checked == 0 and only_failed.errors == 1
    assert only_failed.grounded is None and only_failed.contradicts_label is None


class _FakeBuilder:
    """Stands in for the CLI's method builder: rag on the scripted fake model."""

    answers: ClassVar[dict[str, list[str]]] = {}

    def __init__(self, *args, **kwargs) -> None:
        self.fake = _fake(self.answers)

    def __call__(self, name, given):
        return load_method(name, models=ModelSet(ModelClient(self.fake)), sources=given)


def _cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *grounding: str):
    # The module, not the command function the package exports under the same name.
    monkeypatch.setattr(importlib.import_module("verity.cli.bench"), "MethodBuilder", _FakeBuilder)
    config = BenchConfig(dataset="feverous-s", methods=("rag",), out=tmp_path, setting="gold",
                         sample=4, seed=3)  # fmt: skip
    sample = prepare(config, load=load_dataset, build=_FakeBuilder(), sources=lambda s: []).sample
    _FakeBuilder.answers.clear()
    for example, said in zip(sample, CHECKER_SAYS, strict=True):
        _FakeBuilder.answers[example.subject.text[:40]] = list(said)
    return CliRunner().invoke(
        app,
        ["bench", "--dataset", "feverous-s", "--methods", "rag", "--setting", "gold",
         "--sample", "4", "--seed", "3", "--out", str(tmp_path / "cli"),
         "--data-dir", str(DATA), *grounding],
        env={"COLUMNS": "250"},
    )  # fmt: skip


def test_the_terminal_table_shows_grounding_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = _cli(tmp_path / "on", monkeypatch, "--grounding", "on")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    header = next(line for line in lines if "contradicts" in line)
    row = next(line for line in lines if line.startswith("│ rag"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[-3:] == ["0.500", "0.333", "1.2"]  # 1.25 calls, shown to one place
    assert "grounded" in header and "grounding calls" in header
    assert cells[6] == "1.0"  # the method's own calls per claim

    hidden = _cli(tmp_path / "off", monkeypatch)
    assert hidden.exit_code == 0, hidden.output
    assert "grounded" not in hidden.output and "contradicts" not in hidden.output


class _NoBuilder:
    """A builder that must never be reached: the command stops before any method."""

    def __init__(self, *args, **kwargs) -> None:
        raise AssertionError("a method was about to be built")


def test_an_unknown_grounding_mode_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.import_module("verity.cli.bench"), "MethodBuilder", _NoBuilder)
    refused = CliRunner().invoke(
        app, ["bench", "--dataset", "feverous-s", "--out", str(tmp_path), "--grounding", "yes"]
    )
    assert isinstance(refused.exception, BadInputError)
    assert "--grounding must be off, on or strict" in str(refused.exception)
    with pytest.raises(BadInputError, match="grounding must be one of off, on, strict"):
        BenchConfig(dataset="feverous-s", methods=("rag",), out=tmp_path, grounding="yes")  # type: ignore[arg-type]
