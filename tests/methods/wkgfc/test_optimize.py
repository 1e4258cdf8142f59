"""Self-reflection and prompt optimisation with a scripted fake model and a small graph."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from verity.bench.base import Example
from verity.domain import Claim, Evidence, Label, Verdict
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.wkgfc import WkgfcMethod
from verity.methods.wkgfc.optimize import optimize
from verity.methods.wkgfc.prompts import POLICY
from verity.methods.wkgfc.reflection import reward
from verity.testing import FakeChatModel

LABELS = (Label.SUPPORTED, Label.REFUTED)


def example(i: int, text: str, label: Label) -> Example:
    return Example(id=f"x{i}", subject=Claim(text=text), label=label)


TRAIN = [example(1, "Alice Smith is true.", Label.SUPPORTED)]
VAL = [
    example(2, "Alice Smith is true.", Label.SUPPORTED),
    example(3, "Alice Smith is false.", Label.REFUTED),
]


class Script:
    """A fake whose verdicts become right once the policy prompt says IMPROVED."""

    def __init__(self, rewrite: str) -> None:
        self.rewrite = rewrite
        self.policy = ""
        self.seen: dict[str, int] = {}

    def __call__(self, messages, schema) -> str:
        title = schema["title"]
        self.seen[title] = self.seen.get(title, 0) + 1
        if title == "Action":
            self.policy = messages[0].content
            return json.dumps({"reasoning": "r", "action": "verdict", "query": ""})
        if title == "KGVerdict":
            claim = messages[-1].content
            right = "IMPROVED" in self.policy and "false" in claim
            label = "REFUTED" if right else "SUPPORTED"
            return json.dumps({"justification": "j", "label": label, "confidence": 0.7,
                               "cited_facts": [1], "cited_passages": []})  # fmt: skip
        if title == "Critique":
            return json.dumps({"critique": "decided too early", "error_type": "premature verdict"})
        if title == "Gradient":
            return json.dumps({"analysis": "a", "feedback": "ask for more evidence"})
        if title == "Rewrite":
            return json.dumps({"prompt": self.rewrite})
        return json.dumps({"reasoning": "r", "chosen": [1]})


def run(tmp_path: Path, graph_source, rewrite: str):
    script = Script(rewrite)
    client = ModelClient(FakeChatModel(script))
    base = WkgfcMethod(models=ModelSet(client), sources=[graph_source])
    result = optimize(
        base.with_policy, TRAIN, VAL, LABELS, optimizer=client, critic=client, epochs=1,
        out=tmp_path, max_steps=6, dataset="toy",
    )  # fmt: skip
    return result, script


@pytest.fixture(scope="module")
def graph_source(tmp_path_factory: pytest.TempPathFactory):
    from verity.kg.local import LocalGraph
    from verity.sources.kg import GraphSource

    folder = tmp_path_factory.mktemp("toy-graph")
    path = folder / "toy.nt"
    path.write_text(
        "<http://www.wikidata.org/entity/Q1> <http://www.w3.org/2000/01/rdf-schema#label> "
        '"Alice Smith"@en .\n',
        encoding="utf-8",
    )
    return GraphSource(LocalGraph("toy", file=path, root=folder / "kg"))


def test_a_better_rewrite_is_kept_with_its_lineage(tmp_path: Path, graph_source) -> None:
    result, _ = run(tmp_path, graph_source, "IMPROVED: gather evidence first.")
    # Before: always SUPPORTED, balanced accuracy 0.5; after: both right, 1.0.
    assert (result["initial_val_score"], result["val_score"]) == (0.5, 1.0)
    assert result["prompt"].startswith("IMPROVED")
    epoch = result["lineage"][1]
    assert epoch["accepted"] and epoch["gradient"] == "ask for more evidence"
    assert (result["train_ids"], result["val_ids"]) == (["x1"], ["x2", "x3"])
    saved = json.loads((tmp_path / "policy.json").read_text())
    assert saved["prompt"] == result["prompt"]
    with sqlite3.connect(tmp_path / "experience.sqlite") as db:
        rows = db.execute("SELECT example_id, error_type, reward FROM episodes").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("x1", "premature verdict")]


def test_a_rewrite_that_is_not_better_is_dropped(tmp_path: Path, graph_source) -> None:
    result, _ = run(tmp_path, graph_source, "Just decide quickly.")
    assert result["prompt"] == POLICY and result["val_score"] == 0.5
    assert result["lineage"][1]["accepted"] is False


def test_the_saved_prompt_is_loaded_and_its_examples_excluded(tmp_path: Path, graph_source) -> None:
    result, _ = run(tmp_path, graph_source, "IMPROVED: gather evidence first.")
    client = ModelClient(FakeChatModel(Script("")))
    method = WkgfcMethod(
        models=ModelSet(client), sources=[graph_source], policy_prompt=str(tmp_path / "policy.json")
    )
    assert method.policy == result["prompt"]
    assert method.excluded_ids() == {("toy", "x1"), ("toy", "x2"), ("toy", "x3")}


def test_reward_by_hand() -> None:
    claim = Claim(text="c")
    fact = Evidence(text="t", source="kg")
    trace = {"calls": [], "actions": [{"action": "initKGRetrieval"}, {"action": "expandKG"},
                                      {"action": "verdict"}]}  # fmt: skip
    right = Verdict(label=Label.SUPPORTED, evidence=(fact,), trace=trace, method="wkgfc",
                    subject=claim)  # fmt: skip
    # 0.6 * 1 + 0.2 * 1 + 0.2 * (1 - 2/4) = 0.9
    assert reward(right, "SUPPORTED", max_steps=4) == pytest.approx(0.9)
    # Wrong and uncited: 0.6 * 0 + 0.2 * 0 + 0.2 * 0.5 = 0.1
    wrong = right.model_copy(update={"label": Label.REFUTED, "evidence": ()})
    assert reward(wrong, "SUPPORTED", max_steps=4) == pytest.approx(0.1)
