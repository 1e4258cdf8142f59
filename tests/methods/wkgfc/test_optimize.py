"""Prompt optimisation (paper section 4.4) with a stand-in policy and a scripted fake model.

The policy is `Policy` below, not WKGFC: verdicts with WKGFC's trace contract and no graph
or model behind them, so that these tests pin the optimiser alone. The critic, the
gradient and the rewrite are a scripted fake model (`Scripted`).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.cli.optimize import draw, shares
from verity.domain import Claim, Evidence, Label, Message, Verdict
from verity.errors import BadInputError, ConfigError, SourceUnavailableError
from verity.llm.client import ModelClient
from verity.methods.wkgfc.buffer import EpisodeRow, StepRow
from verity.methods.wkgfc.optimize import epoch_batches, gradient_episodes, optimize, prompt_id
from verity.methods.wkgfc.policyfile import load_policy
from verity.methods.wkgfc.prompts import POLICY
from verity.methods.wkgfc.reflection import Weights
from verity.testing import FakeChatModel

CliRun = Callable[[list[str]], tuple[int, str, str]]
LABELS = (Label.SUPPORTED, Label.REFUTED)
S, R = Label.SUPPORTED, Label.REFUTED


def example(i: str, text: str, label: Label) -> Example:
    return Example(id=f"toy:{i}", subject=Claim(text=text), label=label)


TRAIN = [
    example("t1", "Alice is true.", S),
    example("t2", "Bob is false.", R),
    example("t3", "Carol is true.", S),
]
VAL = [example("v1", "Dave is true.", S), example("v2", "Erin is false.", R)]
CRITIC_SAYS = {
    "critique": "decided too early",
    "error_type": "premature verdict",
    "sufficient": True,
    "steps": [{"step": 3, "critique": "the search repeated the graph", "redundant": False}],
}


class Policy:
    """A stand-in for WKGFC: right on a 'false' claim only when its prompt says IMPROVED.

    Every episode: the first observation (5 facts), expandKG (2 new facts), a web search
    that keeps nothing, the verdict citing 2 numbers of which 1 exists.
    """

    def __init__(self, prompt: str, calls: list[tuple[str, str]]) -> None:
        self.prompt, self.calls = prompt, calls

    def verify(self, subject: Claim, *, evidence: Any = None) -> Verdict:
        self.calls.append((self.prompt, subject.text))
        refute = "IMPROVED" in self.prompt and "false" in subject.text
        actions = [
            {"action": "initKGRetrieval", "reason": "first observation",
             "summary": "5 facts in 2 hops", "taken": True, "new": 5},
            {"action": "expandKG", "reason": "need the spouse", "summary": "2 new facts",
             "taken": True, "new": 2, "entities": ["Q1"]},
            {"action": "webSearch", "reason": "check the web", "summary": "0 passages kept",
             "taken": True, "new": 0, "query": "alice spouse"},
            {"action": "verdict", "reason": "enough", "summary": "ready", "taken": True, "new": 0},
        ]  # fmt: skip
        return Verdict(
            label=R if refute else S,
            evidence=(Evidence(text="Alice (Q1) | spouse (P26) | Bob (Q2)", source="toy"),),
            explanation="because",
            trace={
                "actions": actions,
                "forced_verdict": False,
                "citations": {"cited": 2, "valid": 1},
            },
            method="wkgfc",
            subject=subject,
        )


class Broken:
    """A policy whose every episode fails, as when the graph is unreachable."""

    def verify(self, subject: Claim, *, evidence: Any = None) -> Verdict:
        raise SourceUnavailableError("graph unreachable")


class Killed(Exception):
    """Stands for the process being killed in the middle of an epoch."""


class Scripted:
    """A scripted fake model: the critic, the gradient and the rewrite.

    ``rewrites`` are returned in turn, the last one repeating; "{n}" in one becomes the
    number of the rewrite, so that every rewrite is a new prompt.
    """

    def __init__(
        self,
        rewrites: tuple[str, ...] = ("IMPROVED: gather evidence first.",),
        *,
        critique: dict[str, Any] | str = CRITIC_SAYS,
        kill_at_gradient: int = 0,
    ) -> None:
        self.rewrites = rewrites
        self.critique = critique if isinstance(critique, str) else json.dumps(critique)
        self.kill_at_gradient = kill_at_gradient
        self.seen: Counter[str] = Counter()
        self.gradients: list[str] = []
        self.rewrite_requests: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else ""
        self.seen[title] += 1
        if title == "Critique":
            return self.critique
        if title == "Gradient":
            self.gradients.append(messages[-1].content)
            if len(self.gradients) == self.kill_at_gradient:
                raise Killed
            return json.dumps({"analysis": "a", "feedback": "ask for more evidence"})
        assert title == "Rewrite", title
        self.rewrite_requests.append(list(messages))
        n = self.seen["Rewrite"]
        text = self.rewrites[min(n, len(self.rewrites)) - 1]
        return json.dumps({"prompt": text.replace("{n}", str(n))})


def run(
    out: Path,
    model: Scripted | None = None,
    *,
    make: Any = None,
    optimizer: ModelClient | None = None,
    **options: Any,
) -> tuple[dict[str, Any], Scripted, list[tuple[str, str]]]:
    """One optimisation; ``options`` override optimize's. Returns the policy's calls too."""
    model = model or Scripted()
    calls: list[tuple[str, str]] = []
    client = ModelClient(FakeChatModel(model))
    settings: dict[str, Any] = {"epochs": 1, "train": TRAIN, "val": VAL, "datasets": ["toy"]}
    settings.update(options)
    train, val = settings.pop("train"), settings.pop("val")
    result = optimize(
        make or (lambda prompt: Policy(prompt, calls)), train, val, LABELS,
        optimizer=optimizer or client, critic=client, out=out, **settings,
    )  # fmt: skip
    return result, model, calls


def episodes(out: Path) -> list[tuple[int, str, str | None, str, float]]:
    """Epoch, example id, prediction, error type and reward of each stored episode."""
    with sqlite3.connect(out / "experience.sqlite") as db:
        return db.execute(
            "SELECT epoch, example_id, predicted, error_type, reward FROM episodes "
            "ORDER BY epoch, example_id"
        ).fetchall()


def trained(calls: list[tuple[str, str]], train: list[Example] = TRAIN) -> list[tuple[str, str]]:
    return [c for c in calls if c[1] in {ex.subject.text for ex in train}]


def validated(calls: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [c for c in calls if c[1] in {ex.subject.text for ex in VAL}]


def test_a_better_prompt_is_kept_with_its_lineage(tmp_path: Path) -> None:
    result, model, _ = run(tmp_path)
    # Before: always SUPPORTED, balanced accuracy 0.5; after: both right, 1.0.
    assert (result["initial_val_score"], result["val_score"]) == (0.5, 1.0)
    assert result["prompt"] == "IMPROVED: gather evidence first."
    epoch = result["lineage"][1]
    assert epoch["accepted"] and epoch["start"] == prompt_id(POLICY)
    # Two right episodes (0.875) and a wrong one (0.15 + 0.1 * 0.5 + 0.15 * 0.5 = 0.275).
    assert epoch["train_reward"] == pytest.approx((0.875 + 0.275 + 0.875) / 3)
    assert epoch["updates"][0]["gradient"] == "ask for more evidence"
    # The rewrite follows the gradient's feedback and is bounded (verity's 200 words).
    [request] = model.rewrite_requests
    assert "under 200 words" in request[0].content
    assert "ask for more evidence" in request[-1].content
    assert result["train_ids"] == ["toy:t1", "toy:t2", "toy:t3"]
    assert (result["val_ids"], result["datasets"]) == (["toy:v1", "toy:v2"], ["toy"])
    saved = json.loads((tmp_path / "policy.json").read_text())
    assert saved == result


def test_each_mini_batch_runs_the_prompt_the_last_one_rewrote(tmp_path: Path) -> None:
    result, _, calls = run(tmp_path, Scripted(("p1", "p2", "p3")), batch=1)
    assert [prompt for prompt, _ in trained(calls)] == [POLICY, "p1", "p2"]
    updates = result["lineage"][1]["updates"]
    assert [u["parent"] for u in updates] == [prompt_id(p) for p in (POLICY, "p1", "p2")]
    assert result["lineage"][1]["prompt_id"] == prompt_id("p3")
    # The epoch's prompt is validated once, at the end.
    assert {prompt for prompt, _ in validated(calls)} == {POLICY, "p3"}


def test_an_epoch_covers_every_training_example_once_in_a_new_order(tmp_path: Path) -> None:
    train = [example(f"t{i}", f"Claim {i} is true.", S) for i in range(5)]
    result, model, calls = run(tmp_path, Scripted(("x{n}",)), train=train, epochs=2, batch=2)
    texts = [text for _, text in trained(calls, train)]
    by_epoch = [texts[:5], texts[5:]]
    every = sorted(ex.subject.text for ex in train)
    assert [sorted(texts) for texts in by_epoch] == [every, every]
    assert by_epoch[0] != by_epoch[1]  # shuffled anew (seed + epoch)
    # Five examples in batches of two: three rewrites an epoch.
    assert [len(step["updates"]) for step in result["lineage"][1:]] == [3, 3]
    assert model.seen["Critique"] == 10 and model.seen["Rewrite"] == 6


def test_mini_batches_hold_ten_examples_by_default(tmp_path: Path) -> None:
    train = [example(f"t{i}", f"Claim {i} is true.", S) for i in range(12)]
    result, model, _ = run(tmp_path, Scripted(("x{n}",)), train=train)
    # verity's batch of ten: twelve examples make two gradients and two rewrites.
    assert [u["episodes"] for u in result["lineage"][1]["updates"]] == [10, 2]
    assert model.seen["Rewrite"] == 2


def test_epoch_batches_are_seeded_by_seed_plus_epoch() -> None:
    train = [example(str(i), "c", S) for i in range(7)]
    batches = epoch_batches(train, epoch=1, seed=0, size=3)
    assert [len(b) for b in batches] == [3, 3, 1]
    assert sorted(ex.id for b in batches for ex in b) == sorted(ex.id for ex in train)
    assert epoch_batches(train, epoch=1, seed=4, size=3) == epoch_batches(train, 5, 0, 3)
    assert epoch_batches(train, epoch=1, seed=0, size=3) != epoch_batches(train, 2, 0, 3)


def test_validation_runs_once_per_epoch(tmp_path: Path) -> None:
    result, _, calls = run(tmp_path, Scripted(("x{n}",)), epochs=3)
    # The initial prompt, then each epoch's prompt: (1 + 3) x 2 validation claims.
    assert len(validated(calls)) == (1 + 3) * len(VAL)
    assert [step.get("val_score") for step in result["lineage"]] == [0.5] * 4
    # No rewrite beat the initial prompt: a tie keeps the earlier prompt.
    assert [step["accepted"] for step in result["lineage"]] == [True, False, False, False]
    assert result["prompt"] == POLICY


def test_the_best_prompt_is_kept_across_epochs(tmp_path: Path) -> None:
    model = Scripted(("IMPROVED first", "worse", "also worse"))
    result, _, calls = run(tmp_path, model, epochs=3)
    assert [step["accepted"] for step in result["lineage"]] == [True, True, False, False]
    assert result["prompt"] == "IMPROVED first" and result["val_score"] == 1.0
    # Epoch 3 starts again from the best prompt, not from epoch 2's worse one.
    assert result["lineage"][3]["start"] == prompt_id("IMPROVED first")
    assert "IMPROVED first" in model.gradients[2] and "worse" not in model.gradients[2]
    assert [p for p, _ in trained(calls)][6:] == ["IMPROVED first"] * 3


def test_the_paper_counts(tmp_path: Path) -> None:
    # 4.4: 150 non-test samples from FEVER and HOVER, 100 to train, 50 to validate.
    splits = [fake_split(name, 200) for name in ("fever", "hover")]
    train, val, _ = draw(splits, train=100, val=50, seed=0)
    assert (len(train), len(val), len(train) + len(val)) == (100, 50, 150)
    assert shares(100, 2) == [50, 50] and shares(50, 2) == [25, 25]
    assert Counter(ex.id.split(":")[0] for ex in train) == {"fever": 50, "hover": 50}
    # 20 epochs over the 100 training examples: 2,000 training episodes, and with
    # mini-batches of 10, ten rewrites an epoch.
    model = Scripted(("IMPROVED {n}",))
    result, _, calls = run(tmp_path, model, train=train, val=val, epochs=20, batch=10)
    with sqlite3.connect(tmp_path / "experience.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM episodes").fetchone() == (2000,)
        assert db.execute("SELECT COUNT(*) FROM rewrites").fetchone() == (200,)
    assert model.seen["Critique"] == 2000
    assert [len(step["updates"]) for step in result["lineage"][1:]] == [10] * 20
    assert len(calls) == 2000 + 50 * (1 + 20)


def test_the_buffer_holds_one_row_per_step(tmp_path: Path) -> None:
    run(tmp_path)
    with sqlite3.connect(tmp_path / "experience.sqlite") as db:
        steps = db.execute(
            "SELECT t, state, action, observation, reward, critique FROM steps "
            "WHERE example_id = 'toy:t1' ORDER BY t"
        ).fetchall()
        [(total,)] = db.execute("SELECT reward FROM episodes WHERE example_id = 'toy:t1'")
    assert [s[0] for s in steps] == [1, 2, 3, 4]
    assert steps[2][1:4] == (
        "7 facts, 0 passages; steps so far: initKGRetrieval, expandKG",
        "webSearch('alice spouse') because: check the web",
        "0 passages kept (nothing new)",
    )
    assert steps[1][2] == "expandKG(Q1) because: need the spouse"
    assert steps[3][2] == "verdict(SUPPORTED) because: enough"
    assert steps[2][5] == "the search repeated the graph" and steps[0][5] == ""
    # Right, sufficient, 1 of 2 citations, 1 of 2 choices redundant:
    # 0.6 + 0.15 + 0.1 * 0.5 + 0.15 * 0.5, paid as -0.075 at the search and 0.95 at the end.
    assert [s[4] for s in steps] == pytest.approx([0, 0, -0.075, 0.95])
    assert total == pytest.approx(0.875) == pytest.approx(sum(s[4] for s in steps))


def test_the_gradient_reads_whole_episodes_with_their_steps(tmp_path: Path) -> None:
    long = {**CRITIC_SAYS, "critique": "x" * 1000}
    _, model, _ = run(tmp_path, Scripted(critique=long))
    [prompt] = model.gradients
    assert prompt.count("Episode ") == 3 and "x" * 1000 in prompt
    # The steps come back from the buffer in their order.
    first = prompt[: prompt.index("Episode 2")]
    places = [first.index(f"  step {t} |") for t in (1, 2, 3, 4)]
    assert places == sorted(places)
    assert "True label REFUTED; verdict SUPPORTED; reward 0.28; error: premature verdict" in prompt
    assert (
        "  step 3 | state: 7 facts, 0 passages; steps so far: initKGRetrieval, expandKG | "
        "action: webSearch('alice spouse') because: check the web | observation: 0 passages "
        "kept (nothing new) | reward -0.07 | critique: the search repeated the graph"
    ) in prompt


class SmallContext(FakeChatModel):
    """A scripted fake that states a context window, as a local model does."""

    def __init__(self, script: Any, context_tokens: int = 2600) -> None:
        super().__init__(script)
        self.context_tokens = context_tokens


def row(number: int) -> EpisodeRow:
    step = StepRow(t=1, state="0 facts", action="verdict", observation="o", reward=0.6,
                   critique="c")  # fmt: skip
    return EpisodeRow(1, "p", f"toy:{number}", f"claim {number}", "SUPPORTED", "SUPPORTED",
                      0.6, "none", "y" * 3000, True, (step,))  # fmt: skip


def test_episodes_that_do_not_fit_the_context_are_dropped_whole() -> None:
    model = ModelClient(SmallContext([]))
    # About 760 tokens an episode; about 1,750 left once the instructions and the
    # answer are counted: two episodes fit, the third is left out whole.
    shown, left_out = gradient_episodes(model, POLICY, [row(1), row(2), row(3)])
    assert left_out == 1 and shown.count("y" * 3000) == 2
    assert "claim 1" in shown and "claim 2" in shown and "claim 3" not in shown
    # A model that does not state its context gets every episode.
    shown, left_out = gradient_episodes(ModelClient(FakeChatModel([])), POLICY, [row(1)] * 5)
    assert left_out == 0 and shown.count("Episode ") == 5


def test_the_lineage_counts_the_episodes_left_out(tmp_path: Path) -> None:
    long = {**CRITIC_SAYS, "critique": "z" * 4000}
    model = Scripted(critique=long)
    # About 1,200 tokens an episode and 3,000 free: two of the three episodes fit.
    result, _, _ = run(tmp_path, model, optimizer=ModelClient(SmallContext(model, 3850)))
    assert result["lineage"][1]["updates"][0]["left_out"] == 1
    assert model.gradients[0].count("z" * 4000) == 2


def test_a_critique_that_cannot_be_read_keeps_the_episode_and_its_reward(tmp_path: Path) -> None:
    bad = json.dumps({**CRITIC_SAYS, "error_type": "bad luck"})  # not an error type
    _, model, _ = run(tmp_path, Scripted(critique=bad))
    first = episodes(tmp_path)[0]
    # No sufficiency without a critique: 0.6 + 0.1 * 0.5 + 0.15 * 0.5.
    assert first[1:4] == ("toy:t1", "SUPPORTED", "critique failed")
    assert first[4] == pytest.approx(0.725)
    assert "error: critique failed" in model.gradients[0]


def test_an_episode_without_a_verdict_is_stored_as_such(tmp_path: Path) -> None:
    _, model, _ = run(tmp_path, make=lambda prompt: Broken(), train=TRAIN[:1])
    assert episodes(tmp_path) == [(1, "toy:t1", None, "no verdict", 0.0)]
    assert "error: no verdict; evidence sufficient: no" in model.gradients[0]
    assert "the policy gave no verdict: graph unreachable" in model.gradients[0]


def test_a_failed_rewrite_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    result, _, calls = run(tmp_path, Scripted(("   ", "IMPROVED")), epochs=2)
    first, second = result["lineage"][1:]
    assert "empty" in first["updates"][0]["failed"] and first.get("unchanged")
    assert "val_score" not in first and not first["accepted"]
    # The unchanged prompt is not validated again; the next epoch's rewrite is.
    assert len(validated(calls)) == 2 * len(VAL) and second["accepted"]
    assert json.loads((tmp_path / "policy.json").read_text())["lineage"] == result["lineage"]


def test_a_finished_run_is_not_redone_and_more_epochs_continue_it(tmp_path: Path) -> None:
    first, _, _ = run(tmp_path, Scripted(("x{n}",)), epochs=2)
    again, model, calls = run(tmp_path, Scripted(("x{n}",)), epochs=2)
    assert again == first and model.seen == Counter() and calls == []
    more, model, calls = run(tmp_path, Scripted(("y{n}",)), epochs=3)
    assert [step["epoch"] for step in more["lineage"]] == [0, 1, 2, 3]
    assert more["lineage"][:3] == first["lineage"]
    # One epoch of training and its validation; the initial prompt is not validated again.
    assert (len(trained(calls)), len(validated(calls))) == (len(TRAIN), len(VAL))


def test_a_run_killed_in_an_epoch_resumes_it_from_the_buffer(tmp_path: Path) -> None:
    # Three examples in batches of two: two gradients an epoch; killed at epoch 2's second.
    with pytest.raises(Killed):
        run(tmp_path, Scripted(("x{n}",), kill_at_gradient=4), epochs=2, batch=2)
    saved = json.loads((tmp_path / "policy.json").read_text())
    assert [step["epoch"] for step in saved["lineage"]] == [0, 1]
    result, model, calls = run(tmp_path, Scripted(("y{n}",)), epochs=2, batch=2)
    assert [step["epoch"] for step in result["lineage"]] == [0, 1, 2]
    assert result["lineage"][:2] == saved["lineage"]
    # Epoch 2's episodes and its first rewrite came from the buffer: no policy run, no
    # critique, one gradient (the one killed), then the validation.
    assert trained(calls) == [] and "Critique" not in model.seen
    assert (model.seen["Gradient"], model.seen["Rewrite"]) == (1, 1)
    assert result["lineage"][2]["updates"][0]["prompt_id"] == prompt_id("x3")
    assert len(validated(calls)) == len(VAL)


def test_a_policy_file_of_another_split_is_not_overwritten(tmp_path: Path) -> None:
    run(tmp_path)
    before = (tmp_path / "policy.json").read_text()
    with pytest.raises(BadInputError, match=r"policy\.json.*another datasets"):
        run(tmp_path, datasets=["fever"])
    with pytest.raises(BadInputError, match="another val_ids"):
        run(tmp_path, val=VAL[:1])
    with pytest.raises(BadInputError, match="another weights"):
        run(tmp_path, weights=Weights(0.7, 0.1, 0.1, 0.1))
    assert (tmp_path / "policy.json").read_text() == before


def test_example_ids_must_be_unique(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="unique"):
        run(tmp_path, val=[TRAIN[0]])


def test_the_saved_policy_loads_with_the_examples_it_has_seen(tmp_path: Path) -> None:
    result, _, _ = run(tmp_path)
    policy = load_policy(str(tmp_path / "policy.json"))
    assert policy.prompt == result["prompt"]
    assert policy.examples == {("toy", i) for i in ("t1", "t2", "t3", "v1", "v2")}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the policy prompt"),
        ("{not json", "cannot read the policy prompt"),
        ("[1]", "not a JSON object"),
        ('{"prompt": "  "}', "missing or empty"),
        ('{"train_ids": []}', "missing or empty"),
        ('{"prompt": "p", "datasets": [], "train_ids": "fever:1"}', "train_ids .* not a list"),
        ('{"prompt": "p", "datasets": [], "val_ids": ["12"]}', "without its dataset"),
    ],
)
def test_an_unusable_policy_file_is_a_config_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "policy.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as caught:
        load_policy(str(path))
    assert str(path) in str(caught.value)


def test_policy_files_by_hand_and_of_older_versions(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text('{"prompt": "Check the birthplace first."}')
    assert load_policy(str(path)).examples == frozenset()
    path.write_text('{"prompt": "p", "dataset": "fever", "train_ids": ["1"], "val_ids": ["2"]}')
    assert load_policy(str(path)).examples == {("fever", "1"), ("fever", "2")}


def fake_split(name: str, size: int) -> DatasetSplit:
    examples = tuple(
        Example(id=str(i), subject=Claim(text=f"{name} claim {i}"), label=(S, R)[i % 2])
        for i in range(size)
    )
    return DatasetSplit(name=name, examples=examples, labels=LABELS, files=(), checksum="",
                        description=name, label_map={})  # fmt: skip


def test_draw_takes_equal_shares_seeded_and_qualified() -> None:
    splits = [fake_split("fever", 20), fake_split("hover", 20)]
    train, val, labels = draw(splits, train=7, val=3, seed=1)
    assert [ex.id.split(":")[0] for ex in train] == ["fever"] * 4 + ["hover"] * 3
    assert [ex.id.split(":")[0] for ex in val] == ["fever"] * 2 + ["hover"]
    assert len({ex.id for ex in [*train, *val]}) == 10 and labels == list(LABELS)
    assert train[0].subject.text == f"fever claim {train[0].id.split(':')[1]}"
    # Seeded per dataset: the same seed draws the same, hover's draw ignores fever's.
    assert draw(splits, 7, 3, seed=1) == (train, val, labels)
    alone, _, _ = draw(splits[1:], 3, 1, seed=1)
    assert alone == train[4:]
    # Each dataset's draw has its own seed: equal datasets do not give the same ids.
    fever, hover = train[:3], train[4:]
    assert [ex.id.split(":")[1] for ex in fever] != [ex.id.split(":")[1] for ex in hover]
    # The labels are the union of the datasets' label spaces.
    three_way = replace(fake_split("other", 20), labels=(S, R, Label.NOT_ENOUGH_INFO))
    assert draw([three_way, splits[0]], 2, 2, seed=1)[2] == [S, R, Label.NOT_ENOUGH_INFO]
    with pytest.raises(BadInputError, match=r"hover has 9 examples.*\(7 \+ 3\)"):
        draw([splits[0], fake_split("hover", 9)], train=14, val=6, seed=1)


def write_datasets(root: Path, size: int) -> None:
    """Tiny FEVER and HOVER files in their real formats, read by verity's own loaders."""
    (root / "FEVER").mkdir(parents=True)
    (root / "HOVER").mkdir()
    fever = [{"id": i, "claim": f"Fever claim {i}.", "label": ("SUPPORTS", "REFUTES")[i % 2],
              "evidence": [[[0, 0, "Page", 0]]]} for i in range(size)]  # fmt: skip
    (root / "FEVER" / "paper_dev.jsonl").write_text("\n".join(json.dumps(r) for r in fever))
    hover = [{"uid": f"u{i}", "claim": f"Hover claim {i}.", "num_hops": 2,
              "label": ("SUPPORTED", "NOT_SUPPORTED")[i % 2],
              "supporting_facts": [["Page", 0]]} for i in range(size)]  # fmt: skip
    (root / "HOVER" / "hover_dev_release_v1.1.json").write_text(json.dumps(hover))


def test_the_cli_draws_from_fever_and_hover_by_default(
    cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verity.llm.spec import ModelSet

    monkeypatch.chdir(tmp_path)  # no stray verity.toml
    for var in ("VERITY_MODEL", "VERITY_BASE_URL", "VERITY_SOURCES", "VERITY_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    write_datasets(tmp_path / "data", 80)
    seen: dict[str, Any] = {}

    def optimize(make: Any, train: Any, val: Any, labels: Any, **options: Any) -> dict[str, Any]:
        seen.update(train=train, val=val, labels=labels, **options)
        return {"initial_val_score": 0.5, "val_score": 0.75}

    class Method:  # the method is not under test: nothing is loaded
        def __init__(self, **options: Any) -> None:
            pass

        def with_policy(self, prompt: str) -> None:
            return None

    fake = ModelSet(ModelClient(FakeChatModel([])))  # a scripted fake, never asked
    monkeypatch.setattr("verity.methods.wkgfc.optimize.optimize", optimize)
    monkeypatch.setattr("verity.methods.wkgfc.method.WkgfcMethod", Method)
    monkeypatch.setattr("verity.llm.spec.ModelSet.from_settings", lambda *a, **k: fake)
    monkeypatch.setattr("verity.api.shared_source", lambda name: name)
    # The paper's defaults (4.4): 100 training and 50 validation examples, 150 in all,
    # from FEVER and HOVER together, 20 epochs.
    code, _, err = cli(["optimize", "wkgfc", "--data-dir", "data", "--out", "d"])
    assert code == 0, err
    assert (len(seen["train"]), len(seen["val"]), seen["epochs"]) == (100, 50, 20)
    assert Counter(ex.id.split(":")[0] for ex in seen["train"]) == {"fever": 50, "hover": 50}
    argv = ["optimize", "wkgfc", "--train", "10", "--val", "6", "--data-dir", "data"]
    code, out, err = cli([*argv, "--out", "o"])
    assert code == 0, err
    assert "0.500 -> 0.750" in out
    assert [ex.id.split(":")[0] for ex in seen["train"]] == ["fever"] * 5 + ["hover"] * 5
    assert [ex.id.split(":")[0] for ex in seen["val"]] == ["fever"] * 3 + ["hover"] * 3
    assert seen["train"][-1].subject.text.startswith("Hover claim")
    assert seen["labels"] == [S, R]  # both binary in verity: their union is the same
    assert (seen["datasets"], seen["weights"]) == (["fever", "hover"], Weights())
    assert (seen["epochs"], seen["batch"]) == (20, 10)
    code, _, err = cli([*argv, "--dataset", "fever", "--weights", "0.5,0.5,0.1,0", "--out", "p"])
    assert code == 2 and "sum to 1" in err
    code, _, err = cli([*argv, "--dataset", "fever", "--dataset", "fever", "--out", "p"])
    assert code == 2 and "twice" in err
