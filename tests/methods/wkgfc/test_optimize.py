"""Self-reflection and prompt optimisation with a scripted fake model and a small graph."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from verity.bench.base import Example
from verity.domain import Claim, Evidence, Label, Verdict
from verity.errors import BadInputError, SourceUnavailableError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.wkgfc import WkgfcMethod
from verity.methods.wkgfc.optimize import epoch_batch, optimize
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


class Killed(Exception):
    """Stands for the process being killed in the middle of an epoch."""


class Script:
    """A fake whose verdicts become right once the policy prompt says IMPROVED."""

    def __init__(self, rewrite: str, *, critique: str = "", kill_at_gradient: int = 0) -> None:
        self.rewrite = rewrite
        self.critique = critique or json.dumps(
            {"critique": "decided too early", "error_type": "premature verdict"}
        )
        self.kill_at_gradient = kill_at_gradient
        self.policy = ""
        self.seen: dict[str, int] = {}
        self.gradients: list[str] = []

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
            return self.critique
        if title == "Gradient":
            self.gradients.append(messages[-1].content)
            if len(self.gradients) == self.kill_at_gradient:
                raise Killed
            return json.dumps({"analysis": "a", "feedback": "ask for more evidence"})
        if title == "Rewrite":
            return json.dumps({"prompt": self.rewrite})
        return json.dumps({"reasoning": "r", "chosen": [1]})


def run(tmp_path: Path, graph_source, script: Script | str, *, make=None, **options):
    """One optimisation with the scripted model; ``options`` override optimize's."""
    script = Script(script) if isinstance(script, str) else script
    client = ModelClient(FakeChatModel(script))
    base = WkgfcMethod(models=ModelSet(client), sources=[graph_source])
    settings = {"epochs": 1, "max_steps": 6, "dataset": "toy", "train": TRAIN, "val": VAL}
    settings.update(options)
    train, val = settings.pop("train"), settings.pop("val")
    result = optimize(
        make or base.with_policy, train, val, LABELS, optimizer=client, critic=client,
        out=tmp_path, **settings,
    )  # fmt: skip
    return result, script


def episodes(out: Path) -> list[tuple[int, str, str | None, str, float]]:
    """Epoch, example id, prediction, error type and reward of each stored episode."""
    with sqlite3.connect(out / "experience.sqlite") as db:
        return db.execute(
            "SELECT epoch, example_id, predicted, error_type, reward FROM episodes "
            "ORDER BY epoch, example_id"
        ).fetchall()


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


def test_an_epoch_without_a_usable_rewrite_is_recorded_and_the_run_goes_on(
    tmp_path: Path, graph_source
) -> None:
    result, script = run(tmp_path, graph_source, "   ")
    assert result["prompt"] == POLICY and result["val_score"] == 0.5
    epoch = result["lineage"][1]
    assert epoch["accepted"] is False and "empty" in epoch["failed"]
    assert "val_score" not in epoch
    # The initial validation ran (2 claims), no validation of a rewrite followed.
    assert script.seen["KGVerdict"] == 2 + len(TRAIN)
    assert json.loads((tmp_path / "policy.json").read_text())["lineage"] == result["lineage"]


def test_epoch_batches_cycle_through_the_training_order() -> None:
    a, b, c = (example(i, "c", Label.SUPPORTED) for i in range(3))
    ids = [[ex.id for ex in epoch_batch([a, b, c], epoch, size=2)] for epoch in (1, 2, 3)]
    assert ids == [["x0", "x1"], ["x2", "x0"], ["x1", "x2"]]
    # A batch larger than the training set takes each example once.
    assert epoch_batch([a, b, c], epoch=4, size=5) == [a, b, c]


TRAIN3 = [
    example(11, "Alice Smith is true.", Label.SUPPORTED),
    example(12, "Alice Smith is false.", Label.REFUTED),
    example(13, "Alice Smith is real.", Label.SUPPORTED),
]


def test_successive_epochs_see_other_claims_and_gradients_stay_short(
    tmp_path: Path, graph_source
) -> None:
    long = json.dumps({"critique": "x" * 1000, "error_type": "premature verdict"})
    script = Script("Just decide quickly.", critique=long)
    run(tmp_path, graph_source, script, train=TRAIN3, epochs=3, batch=2)
    by_epoch = [{row[1] for row in episodes(tmp_path) if row[0] == e} for e in (1, 2, 3)]
    # Three claims in batches of two: every epoch a different pair, the first two
    # epochs cover the whole training set, and each claim comes twice in three epochs.
    assert all(len(ids) == 2 for ids in by_epoch)
    assert len({frozenset(ids) for ids in by_epoch}) == 3
    assert by_epoch[0] | by_epoch[1] == {"x11", "x12", "x13"}
    assert len(script.gradients) == 3
    for prompt in script.gradients:
        assert prompt.count("\n- reward ") == 2
        assert "x" * 297 + "..." in prompt and "x" * 298 not in prompt


def test_a_critique_that_cannot_be_read_keeps_the_episode_and_its_reward(
    tmp_path: Path, graph_source
) -> None:
    run(tmp_path / "sound", graph_source, "Just decide quickly.")
    bad = json.dumps({"critique": "c", "error_type": "bad luck"})  # not an error type
    result, script = run(tmp_path / "bad", graph_source, Script("Just decide.", critique=bad))
    [(_, _, predicted, error_type, score)] = episodes(tmp_path / "bad")
    [(_, _, _, _, sound_score)] = episodes(tmp_path / "sound")
    assert (predicted, error_type, score) == ("SUPPORTED", "critique failed", sound_score)
    assert "error: critique failed" in script.gradients[0]
    assert "gradient" in result["lineage"][1]


class Broken:
    """A policy whose every episode fails, as when the graph is unreachable."""

    def verify(self, subject, *, evidence=None):
        raise SourceUnavailableError("graph unreachable")


def test_an_episode_without_a_verdict_is_stored_as_such(tmp_path: Path, graph_source) -> None:
    _, script = run(tmp_path, graph_source, "Just decide.", make=lambda prompt: Broken())
    assert episodes(tmp_path) == [(1, "x1", None, "no verdict", 0.0)]
    line = "error: no verdict; the policy gave no verdict: graph unreachable"
    assert line in script.gradients[0]


def test_a_finished_run_is_not_redone_and_more_epochs_continue_it(
    tmp_path: Path, graph_source
) -> None:
    first, _ = run(tmp_path, graph_source, "Just decide quickly.", epochs=2)
    again, script = run(tmp_path, graph_source, "Just decide quickly.", epochs=2)
    assert again == first and script.seen == {}
    more, script = run(tmp_path, graph_source, "Just decide quickly.", epochs=3)
    assert [step["epoch"] for step in more["lineage"]] == [0, 1, 2, 3]
    assert more["lineage"][:3] == first["lineage"]
    # One training episode and the rewrite's validation; the initial prompt is not
    # validated again.
    assert script.seen["KGVerdict"] == len(TRAIN) + len(VAL)


def test_a_run_killed_in_an_epoch_redoes_only_that_epoch(tmp_path: Path, graph_source) -> None:
    killed = Script("Just decide quickly.", kill_at_gradient=2)
    with pytest.raises(Killed):
        run(tmp_path, graph_source, killed, epochs=2)
    saved = json.loads((tmp_path / "policy.json").read_text())
    assert [step["epoch"] for step in saved["lineage"]] == [0, 1]
    result, script = run(tmp_path, graph_source, "Just decide quickly.", epochs=2)
    assert [step["epoch"] for step in result["lineage"]] == [0, 1, 2]
    assert result["lineage"][:2] == saved["lineage"]
    # Epoch 2's episode came from the buffer: no policy run, no critique, only the
    # gradient, the rewrite and its validation.
    assert "Critique" not in script.seen and script.seen["KGVerdict"] == len(VAL)
    assert script.seen["Gradient"] == 1


def test_a_policy_file_of_another_split_is_not_overwritten(tmp_path: Path, graph_source) -> None:
    run(tmp_path, graph_source, "Just decide quickly.")
    before = (tmp_path / "policy.json").read_text()
    with pytest.raises(BadInputError, match=r"policy\.json.*another dataset"):
        run(tmp_path, graph_source, "Just decide quickly.", dataset="other")
    with pytest.raises(BadInputError, match="another val_ids"):
        run(tmp_path, graph_source, "Just decide quickly.", val=VAL[:1])
    assert (tmp_path / "policy.json").read_text() == before
