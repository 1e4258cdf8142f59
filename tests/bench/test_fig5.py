"""ToE's Fig. 5 set: the shipped draw, its rules and provenance, and its loader.

Provenance is checked against the raw files, read here with the csv and json modules.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verity.bench.datasets import load_dataset
from verity.bench.fig5 import (
    CATEGORIES,
    DATA_FILE,
    Candidate,
    candidate_pools,
    draw,
    draw_fig5,
    fever_category,
    load_toe_fig5,
    main,
)
from verity.domain import Claim, Label
from verity.errors import DatasetError

ROOT = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()
needs_data = pytest.mark.skipif(
    not ROOT.is_dir(),
    reason=f"benchmark data not found at {ROOT}; set VERITY_DATA_DIR to the datasets folder",
)


def shipped() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA_FILE.read_text(encoding="utf-8").splitlines()]


# -- the shipped file ---------------------------------------------------------------------


def test_shape_six_categories_of_two_true_two_false_one_uncertain() -> None:
    lines = shipped()
    assert len(lines) == 30
    assert [line["id"] for line in lines] == [f"{c}-{n}" for c in CATEGORIES for n in range(1, 6)]
    for category in CATEGORIES:
        labels = [line["label"] for line in lines if line["category"] == category]
        uncertain = "CONFLICTING" if category == "political" else "NOT_ENOUGH_INFO"
        assert Counter(labels) == {"SUPPORTED": 2, "REFUTED": 2, uncertain: 1}, category
    assert len({line["claim"] for line in lines}) == 30
    for line in lines:
        assert set(line["provenance"]) == {"dataset", "file", "id", "original_label", "rule"}
        assert line["provenance"]["rule"].startswith(line["category"] + ":")


@needs_data
def test_the_shipped_file_is_what_seed_0_draws(tmp_path: Path) -> None:
    assert draw_fig5(ROOT, 0) == shipped()
    out = tmp_path / "fig5.jsonl"
    assert main(["--data-dir", str(ROOT), "--seed", "0", "--out", str(out)]) == 0
    assert out.read_bytes() == DATA_FILE.read_bytes()
    # Another seed draws other claims.
    assert draw_fig5(ROOT, 1) != shipped()


def _raw_rows() -> dict[str, dict[str, tuple[str, str, Any]]]:
    """file -> id -> (claim, original label, the row) from the raw data."""
    rows: dict[str, dict[str, tuple[str, str, Any]]] = {}
    text = (ROOT / "LIAR/test.tsv").read_text(encoding="utf-8")
    liar = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    rows["LIAR/test.tsv"] = {r[0].removesuffix(".json"): (r[2], r[1], r) for r in liar if r}
    for name, key, claim, label in [
        ("Check-COVID/covidCheck_test_composed.json", "id", "claim", "label"),
        ("Check-COVID/covidCheck_test_extracted.json", "id", "claim", "label"),
        ("Climate-FEVER/climate-fever.jsonl", "claim_id", "claim", "claim_label"),
        ("FEVER/paper_dev.jsonl", "id", "claim", "label"),
    ]:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        objs = [json.loads(line) for line in lines if line.strip()]
        rows[name] = {str(o[key]): (o[claim], o[label], o) for o in objs}
    return rows


@needs_data
def test_provenance_points_at_the_raw_row_and_its_rule_holds() -> None:
    raw = _raw_rows()
    # By hand: the dataset's label -> the set's label, per source.
    maps = {
        "liar": {"true": "SUPPORTED", "mostly-true": "SUPPORTED", "half-true": "CONFLICTING",
                 "barely-true": "REFUTED", "false": "REFUTED", "pants-fire": "REFUTED"},
        "check-covid": {"SUPPORT": "SUPPORTED", "REFUTE": "REFUTED",
                        "NOTENOUGHINFO": "NOT_ENOUGH_INFO"},
        "climate-fever": {"SUPPORTS": "SUPPORTED", "REFUTES": "REFUTED",
                          "NOT_ENOUGH_INFO": "NOT_ENOUGH_INFO"},
        "fever-3way": {"SUPPORTS": "SUPPORTED", "REFUTES": "REFUTED",
                       "NOT ENOUGH INFO": "NOT_ENOUGH_INFO"},
    }  # fmt: skip
    sources = {"political": "liar", "health": "check-covid", "scientific": "climate-fever"}
    for line in shipped():
        prov = line["provenance"]
        claim, label, row = raw[prov["file"]][prov["id"]]
        # verity strips the text around a claim, nothing inside it.
        assert line["claim"] == claim.strip() and prov["original_label"] == label
        assert line["label"] == maps[prov["dataset"]][label]
        assert prov["dataset"] == sources.get(line["category"], "fever-3way")
        if line["category"] == "political":
            subjects = row[3].split(",")
            assert not {"health-care", "public-health", "medicare", "science"} & set(subjects)
            assert line["speaker"] == row[4]
        if prov["dataset"] == "fever-3way":
            assert fever_category(claim)[0] == line["category"]


# -- the rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "category", "because"),
    [
        ("Tom Cruise starred in Top Gun.", "celebrity", "starred"),
        ("Adele is a singer.", "celebrity", "singer"),
        ("Gone with the Wind is a 1939 film.", "celebrity", "film"),  # celebrity wins
        ("The Battle of Hastings was fought in 1066.", "historical", "Battle of"),
        ("The Ming Dynasty ruled China.", "historical", "Ming Dynasty"),
        ("Rome had an empire.", "historical", "empire"),
        ("Abraham Lincoln was born in 1809.", "historical", "1809"),
        ("Jazz spread in the 1920s.", "historical", "1920s"),
        ("Augustus died in 14 AD.", "historical", "14 AD"),
        ("Paris is the capital of France.", "other", ""),
        ("The show ran for 100 episodes.", "other", ""),  # a count, not a year
        ("She was born in 1990.", "other", ""),  # after 1950
        ("Regina King won an award.", "other", ""),  # a capitalised name, not a king
        ("Qui-Gon Jinn appears in Star Wars.", "other", ""),
        ("The company was founded in 1998.", "other", ""),
    ],
)
def test_fever_category(claim: str, category: str, because: str) -> None:
    found, rule = fever_category(claim)
    assert found == category
    assert because in rule


@needs_data
def test_pools_follow_the_written_rules() -> None:
    pools = candidate_pools(ROOT)
    political = {c.claim for c in pools["political"]}
    assert "On banning earmarks." not in political  # a Flip-O-Meter topic, not a claim
    liar = load_dataset("liar")
    health_subjects = [e for e in liar.examples if "health-care" in e.meta["subjects"]]
    assert health_subjects and not {e.subject.text for e in health_subjects} & political
    assert len(pools["health"]) == 229  # all of Check-COVID test
    assert len(pools["scientific"]) == 1_535 - 154  # Climate-FEVER less DISPUTED
    fever = sum(len(pools[c]) for c in ("historical", "celebrity", "other"))
    assert fever == 9_999
    assert all(c.label is not Label.CONFLICTING for c in pools["scientific"])


def _candidates(category: str, label: Label, n: int) -> list[Candidate]:
    return [
        Candidate(category, f"{label.value} {i}", label, "d", "f", f"{label.value}-{i}", "x", "r")
        for i in range(n)
    ]


def test_draw_two_true_two_false_one_uncertain_seeded() -> None:
    pools = {
        c: _candidates(c, Label.SUPPORTED, 6)
        + _candidates(c, Label.REFUTED, 6)
        + _candidates(c, Label.NOT_ENOUGH_INFO, 6)
        for c in CATEGORIES
    }
    lines = draw(pools, seed=0)
    assert len(lines) == 30
    first = [line["label"] for line in lines[:5]]
    assert first == ["SUPPORTED", "SUPPORTED", "REFUTED", "REFUTED", "NOT_ENOUGH_INFO"]
    assert draw(pools, seed=0) == lines
    assert draw(pools, seed=7) != lines
    # Each category draws with its own generator: equal pools give equal picks.
    picks = [
        [line["provenance"]["id"] for line in lines if line["category"] == c] for c in CATEGORIES
    ]
    assert all(p == picks[0] for p in picks)


def test_a_pool_too_small_is_a_dataset_error() -> None:
    pools = {
        c: _candidates(c, Label.SUPPORTED, 2) + _candidates(c, Label.REFUTED, 2) for c in CATEGORIES
    }
    with pytest.raises(DatasetError, match="0 uncertain claim"):
        draw(pools)


# -- the loader ---------------------------------------------------------------------------


def test_loads_without_the_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ../shared/datasets from here
    monkeypatch.setenv("VERITY_DATA_DIR", str(tmp_path / "missing"))
    split = load_dataset("toe-fig5")
    assert split.name == "toe-fig5" and len(split.examples) == 30
    # ToE §IV-A: three classes, true, false and uncertain.
    assert split.labels == (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO)
    assert split.files == (DATA_FILE.resolve(),)
    lines = shipped()
    for example, line in zip(split.examples, lines, strict=True):
        # Each claim keeps its source's label; a half-true one is scored as uncertain.
        assert example.id == line["id"] and example.meta["label"] == line["label"]
        scored = "NOT_ENOUGH_INFO" if line["label"] == "CONFLICTING" else line["label"]
        assert example.label.value == scored
        assert isinstance(example.subject, Claim) and example.subject.text == line["claim"]
        assert example.meta["category"] == line["category"]
        assert example.meta["provenance"] == line["provenance"]
        assert example.subject.speaker == line.get("speaker")
    assert "30 examples" in split.description


def test_a_damaged_file_names_its_line(tmp_path: Path) -> None:
    lines = shipped()
    lines[3]["category"] = "sports"
    bad = tmp_path / "data" / "fig5.jsonl"
    bad.parent.mkdir()
    bad.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 4: unknown category 'sports'"):
        load_toe_fig5(bad)


def test_an_uncertain_verdict_is_right_on_all_six_uncertain_claims(tmp_path: Path) -> None:
    from verity.bench.runner import BenchConfig, prepare
    from verity.domain import Verdict
    from verity.llm.client import ModelClient
    from verity.llm.spec import ModelSet
    from verity.methods.toe.method import ToeMethod
    from verity.testing import FakeChatModel

    split = load_toe_fig5()
    uncertain = [e for e in split.examples if e.meta["label"] in ("CONFLICTING", "NOT_ENOUGH_INFO")]
    assert len(uncertain) == 6 and {e.meta["label"] for e in uncertain} == {
        "CONFLICTING",
        "NOT_ENOUGH_INFO",
    }
    # The label ToE gives a root veracity in [0.4, 0.6] on this set (§IV-A: "Uncertain").
    toe = ToeMethod(models=ModelSet(ModelClient(FakeChatModel(lambda m, s: "{}"))))
    toe.use_dataset("toe-fig5")
    said = toe.uncertain_label

    class UncertainOnUncertain:
        """A fake method: ToE's uncertain label on the uncertain claims, the gold elsewhere."""

        accepts = (Claim,)

        def __init__(self) -> None:
            self.gold = {e.id: e.label for e in split.examples}
            self.meant = {e.id: e in uncertain for e in split.examples}

        def verify(self, subject, *, evidence=None):  # type: ignore[no-untyped-def]
            key = next(e.id for e in split.examples if e.subject == subject)
            label = said if self.meant[key] else self.gold[key]
            return Verdict(label=label, method="toe", subject=subject)

        async def averify(self, subject, *, evidence=None):  # type: ignore[no-untyped-def]
            return self.verify(subject)

        def to_dict(self) -> dict[str, str]:
            return {"name": "uncertain-on-uncertain"}

    for answer in (toe.uncertain_label, Label.CONFLICTING, Label.NOT_ENOUGH_INFO):
        said = answer  # ToE's own, and either uncertain label: the one uncertain class
        out = tmp_path / answer.value
        config = BenchConfig(
            dataset="toe-fig5", methods=("direct",), out=out, setting="closed", sample=None
        )
        run = prepare(
            config, load=load_dataset, build=lambda name, sources: UncertainOnUncertain(),
            sources=lambda split: [],
        )  # fmt: skip
        try:
            results = run.run()
        finally:
            run.close()
        metrics = results["direct"].metrics
        assert metrics.n == 30 and metrics.accuracy == 1.0, answer
        assert metrics.per_class[Label.NOT_ENOUGH_INFO].recall == 1.0
