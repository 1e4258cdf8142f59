"""The NLI checker: statuses from pairwise NLI classes, with fake judges and tiny checkpoints.

A fake judge (a function over premise and hypothesis) tests which pairs are asked and how
their classes become a status. The tiny checkpoints are random BERT classifiers whose
classifier weights are zero and whose bias favours one class, so they answer that class
whatever they read: enough to test the loading and the class names, nothing about quality.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from faults.checkpoints import bert
from verity.domain import Claim, GroundedSentence, Label, Reference, Verdict
from verity.errors import BadInputError, ConfigError
from verity.grounding.nli import nli_ground, nli_sentences

CLAIM = Claim(text="The Eiffel Tower is in Paris.")
REFS = [
    Reference(id="1", text="The Eiffel Tower stands in Paris."),
    Reference(id="2", text="The Eiffel Tower is in Berlin."),
]


def _verdict(explanation: str) -> Verdict:
    return Verdict(label=Label.SUPPORTED, explanation=explanation, method="direct", subject=CLAIM)


class FakeJudge:
    """A scripted NLI judge: a class per (premise, hypothesis), neutral otherwise."""

    def __init__(self, table: dict[tuple[str, str], str]) -> None:
        self.table = table
        self.asked: list[tuple[str, str]] = []

    def __call__(self, premise: str, hypothesis: str) -> Any:
        self.asked.append((premise, hypothesis))
        return self.table.get((premise, hypothesis), "neutral")


def test_entailment_supports_contradiction_contradicts_else_unsupported() -> None:
    said = "It is in Paris [1]. It is in Berlin [2]. It is tall [1]."
    judge = FakeJudge(
        {
            (REFS[0].text, "It is in Paris [1]."): "entailment",
            (REFS[1].text, "It is in Berlin [2]."): "contradiction",
        }
    )
    found = asyncio.run(nli_ground(_verdict(said), REFS, judge, checker="nli:fake"))
    assert [s.status for s in found.sentences] == ["supported", "contradicted", "unsupported"]
    assert [s.found for s in found.sentences] == [("1",), ("2",), ()]
    # The reference is the premise, the sentence the hypothesis; a sentence citing [1]
    # is paired with reference 1 only.
    assert judge.asked == [
        (REFS[0].text, "It is in Paris [1]."),
        (REFS[1].text, "It is in Berlin [2]."),
        (REFS[0].text, "It is tall [1]."),
    ]
    # An NLI model cannot tell what the whole explanation argues.
    assert found.consistent_with_label is None
    assert found.grounded_share == pytest.approx(1 / 3)
    assert found.flags == ("contradicted_sentence",)
    assert found.usage.llm_calls == 0 and found.checker == "nli:fake"


def test_a_sentence_citing_nothing_is_paired_with_every_reference_and_entailment_wins() -> None:
    said = "The tower is in Paris."
    judge = FakeJudge({(REFS[0].text, said): "entailment", (REFS[1].text, said): "contradiction"})
    found = asyncio.run(nli_ground(_verdict(said), REFS, judge, checker="nli:fake"))
    (sentence,) = found.sentences
    assert sentence.status == "supported" and sentence.found == ("1",)
    assert len(judge.asked) == 2


def test_contradiction_by_any_reference_when_none_entails() -> None:
    said = "The tower is in Rome."
    judge = FakeJudge({(REFS[1].text, said): "contradiction"})
    found = asyncio.run(nli_ground(_verdict(said), REFS, judge, checker="nli:fake"))
    assert found.sentences[0].status == "contradicted" and found.sentences[0].found == ("2",)


def test_a_cited_id_no_reference_has_is_unsupported_without_asking() -> None:
    judge = FakeJudge({})
    found = asyncio.run(nli_ground(_verdict("It is in Paris [7]."), REFS, judge, checker="x"))
    assert found.sentences[0].status == "unsupported" and judge.asked == []


def test_sentences_past_the_checkers_cap_stay_unchecked() -> None:
    # The model checker reads at most 24 sentences (verity.grounding.check); so does this.
    sentences = [
        GroundedSentence(text=f"S{n}.", start=4 * n, end=4 * n + 3, status="unchecked")
        for n in range(26)
    ]
    judge = FakeJudge({})
    found = asyncio.run(nli_sentences(sentences, REFS[:1], judge, checker="x"))
    assert [s.status for s in found.sentences].count("unsupported") == 24
    assert [s.status for s in found.sentences[24:]] == ["unchecked", "unchecked"]
    assert len(judge.asked) == 24


# -- a real (tiny) checkpoint through the nli baseline's loader ----------------------------

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
WORDS = ["sea", "level", "levels", "is", "are", "rising", "has", "risen", "by", "about", "cm"]
WORDS += ["since", "have", "fallen", "glaciers", "made", "of", "ice", ".", "20", "1900"]


def tiny_bert(folder: Path, bias: list[float], names: dict[int, str] | None) -> str:
    """A one-layer BERT classifier that answers by its classifier bias alone."""
    return bert(folder, bias, names, words=WORDS)


@pytest.fixture(scope="module")
def contradicting(tmp_path_factory: pytest.TempPathFactory) -> str:
    names = {0: "entailment", 1: "contradiction", 2: "neutral"}
    return tiny_bert(tmp_path_factory.mktemp("nli") / "bert", [0.0, 5.0, 0.0], names)


def test_checkpoint_classes_are_read_by_name(tmp_path: Path, contradicting: str) -> None:
    from verity.methods.baselines.nli.judge import checkpoint_judge

    assert checkpoint_judge(contradicting)("Paris is in France.", "Paris is in Spain.") == (
        "contradiction"
    )
    # FEVER-style names (SUPPORTS / REFUTES / NOT ENOUGH INFO) are NLI classes too.
    fever = {0: "SUPPORTS", 1: "REFUTES", 2: "NOT ENOUGH INFO"}
    supports = tiny_bert(tmp_path / "fever", [5.0, 0.0, 0.0], fever)
    assert checkpoint_judge(supports)("a", "b") == "entailment"
    neutral = tiny_bert(tmp_path / "neutral", [0.0, 0.0, 5.0], fever)
    assert checkpoint_judge(neutral)("a", "b") == "neutral"


def test_a_checkpoint_with_unnamed_classes_is_a_config_error(tmp_path: Path) -> None:
    from verity.methods.baselines.nli.judge import checkpoint_judge

    unnamed = tiny_bert(tmp_path / "unnamed", [5.0, 0.0, 0.0], names=None)
    with pytest.raises(ConfigError, match="name no NLI class"):
        checkpoint_judge(unnamed)


def test_the_eval_command_runs_the_nli_checker(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, contradicting: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VERITY_CONFIG", raising=False)
    rows = [("Sea level has risen by about 20 cm since 1900.", "SUPPORTS"),
            ("Sea levels have fallen since 1900.", "REFUTES"),
            ("Glaciers are made of ice.", "NOT_ENOUGH_INFO")]  # fmt: skip
    evidences = [
        {"evidence_id": f"Sea level:{n}", "evidence_label": g, "article": "Sea level",
         "evidence": text}
        for n, (text, g) in enumerate(rows)
    ]  # fmt: skip
    row = {"claim_id": "7", "claim": "Sea levels are rising.", "claim_label": "SUPPORTS",
           "evidences": evidences}  # fmt: skip
    (tmp_path / "data" / "Climate-FEVER").mkdir(parents=True)
    (tmp_path / "data" / "Climate-FEVER" / "climate-fever.jsonl").write_text(json.dumps(row))
    code, out, err = cli(["grounding", "eval", "--dataset", "climate-fever-evidence",
                          "--checker", f"nli:{contradicting}", "--out", "eval",
                          "--data-dir", str(tmp_path / "data")])  # fmt: skip
    assert code == 0, err
    assert "3 pairs, 0 checker errors" in out
    records = [json.loads(line) for line in Path("eval/pairs.jsonl").read_text().splitlines()]
    assert [r["pred"] for r in records] == ["REFUTED"] * 3
    assert all(r["calls"] == 0 and r["found"] == ["1"] for r in records)
    m = json.loads(Path("eval/metrics.json").read_text())["three_way"]
    # Gold S, R, N; all predicted R: REFUTED F1 = 2/(2+2+0) = 1/2, the others 0.
    assert m["macro_f1"] == pytest.approx(0.5 / 3) and m["accuracy"] == pytest.approx(1 / 3)


def test_a_check_can_be_grounded_by_a_local_nli_checkpoint(contradicting: str) -> None:
    import json as _json

    from verity.api import load_method as build
    from verity.domain import Claim
    from verity.llm.client import ModelClient
    from verity.llm.spec import ModelSet
    from verity.methods.base import load_method
    from verity.testing import FakeChatModel

    # Through the API: the checkpoint becomes the method's judge, named by its folder.
    built = build("direct", grounding="on", grounding_checker=f"nli:{contradicting}")
    assert built.grounding_checker == "nli:bert" and built.grounding_judge is not None
    assert build("direct", grounding_checker=f"nli:{contradicting}").grounding_judge is None
    with pytest.raises(BadInputError, match="'model' or 'nli:DIR'"):
        build("direct", grounding="on", grounding_checker="nli:")
    # In a check: the method's one call, then the checkpoint, which always contradicts.
    said = _json.dumps({"explanation": "It is in Spain.", "label": "SUPPORTED", "confidence": 0.5})
    fake = FakeChatModel([said], model="fake-nli-live")
    method = load_method("direct", models=ModelSet(ModelClient(fake)))
    method.grounding, method.grounding_judge = "on", built.grounding_judge
    method.grounding_checker = built.grounding_checker
    method.references = lambda verdict: [Reference(id="1", text="Paris is in France.")]
    verdict = method.verify(Claim(text="Paris is in France."))
    assert verdict.grounding is not None and verdict.grounding.checker == "nli:bert"
    assert [s.status for s in verdict.grounding.sentences] == ["contradicted"]
    assert len(fake.requests) == 1 and verdict.grounding.usage.llm_calls == 0
