"""The evaluation network's 20 evidence slots (§III-C), a document or a statement each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from test_toe_method import ListSource, Script

from verity.bench.base import Example
from verity.domain import Claim, Label
from verity.errors import ConfigError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.methods.toe import weights
from verity.methods.toe.evalinputs import pack
from verity.methods.toe.evalnet import EvalNet, score
from verity.methods.toe.features import ClaimFeatures, EvidenceItem, claim_vector, evidence_rows
from verity.methods.toe.judge import NodeEvaluator
from verity.methods.toe.method import ToeMethod
from verity.methods.toe.train import train_evalnet
from verity.testing import FakeChatModel


def _doc(n: int, statements: int) -> EvidenceItem:
    return EvidenceItem(
        ref=f"https://d.example/{n}",
        tool="web" if n % 2 else "wiki",
        stance="support" if n % 3 else "refute",
        authoritative=False,
        primary=True,
        relevance=0.1 * (n % 10),
        credibility=0.5,
        statements=tuple(f"fact {n}.{i}" for i in range(statements)),
    )


# §IV-A: at most 10 documents a node; here each kept two statements.
TEN = [_doc(n, 2) for n in range(10)]


def test_a_slot_per_document_fills_ten_of_twenty_and_per_snippet_all() -> None:
    # §III-C: "a padded 20 x 8 evidence matrix".
    assert int(pack(evidence_rows(TEN))[1].sum()) == 10
    assert int(pack(evidence_rows(TEN, "snippet"))[1].sum()) == 20
    # Each statement carries its document's attributes; a document with none is one row.
    rows = evidence_rows([_doc(1, 3), _doc(2, 0)], "snippet")
    assert len(rows) == 4 and rows[0] == rows[1] == rows[2] != rows[3]


def test_the_evaluator_scores_with_the_runs_slot_mode() -> None:
    torch.manual_seed(0)
    net = EvalNet()
    features = ClaimFeatures()
    # Documents of 1, 2, 3, 1, 2, ... statements: 19 rows. (Had every document as many
    # statements as the others, the masked mean of each track would not change: a slot
    # per snippet weighs a document by the statements it gave, it adds no attribute.)
    mixed = [_doc(n, 1 + n % 3) for n in range(10)]
    by_hand = [row for n, item in enumerate(mixed) for row in evidence_rows([item]) * (1 + n % 3)]
    assert len(by_hand) == 19
    judge = NodeEvaluator("network", None, net, "snippet")  # type: ignore[arg-type]
    belief = judge.belief(features, mixed)
    assert belief is not None
    assert (belief.v, belief.r) == score(net, claim_vector(features), by_hand)
    assert (belief.v, belief.r) != score(net, claim_vector(features), evidence_rows(mixed))


def test_weights_trained_in_one_mode_are_refused_in_the_other(tmp_path: Path) -> None:
    torch.manual_seed(0)
    weights.save(EvalNet(), tmp_path, "evalnet", {"evidence_slots": "document"})
    models = ModelSet(ModelClient(FakeChatModel(lambda m, s: "{}")))
    assert load_method("toe", models=models, weights=str(tmp_path)).evalnet is not None
    with pytest.raises(ConfigError, match="slot per document, not per snippet"):
        load_method("toe/snippet-slots", models=models, weights=str(tmp_path))


class TwoFacts(Script):
    """The scripted fake of test_toe_method, whose cleaning step keeps two statements."""

    def __call__(self, messages, schema):  # type: ignore[no-untyped-def]
        if schema["title"] == "Cleaned":
            self.asked.append("Cleaned")
            return json.dumps({"statements": ["first fact", "second fact"]})
        return super().__call__(messages, schema)


def test_training_samples_fill_the_slots_of_the_runs_mode(tmp_path: Path) -> None:
    models = ModelSet(ModelClient(FakeChatModel(TwoFacts(lambda _: (0.1, 0.9)))))
    examples = [Example(id=str(i), subject=Claim(text=f"Claim {i}."), label=Label.REFUTED)
                for i in range(2)]  # fmt: skip

    def make(**settings: Any) -> ToeMethod:
        merged = {"max_iterations": 1, "max_docs": 3, "evidence_slots": "snippet"} | settings
        return ToeMethod(models=models, sources=[ListSource("news")], **merged)

    train_evalnet(make, examples, tmp_path, dataset="x", seed=0, epochs=1, progress=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "evalnet-samples.jsonl").read_text().splitlines()]
    for row in rows:
        (node,) = row["nodes"]
        assert len(node["items"]) == 2 * 3  # three documents, two statements each
    assert weights.read_manifest(tmp_path, "evalnet")["evidence_slots"] == "snippet"
