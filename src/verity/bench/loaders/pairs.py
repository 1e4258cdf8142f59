"""Claim-evidence pairs: one claim, one evidence sentence, and that sentence's own label.

    split = load_climate_fever_evidence(Path("../shared/datasets"))
    pair = split.examples[0]
    pair.subject.text, pair.gold[0].text, pair.label   # claim, its sentence, the sentence's label

A pair dataset measures a judge of single sentences (verity's grounding checker, an NLI
model): the gold label says what the one sentence does to the claim, not whether the
claim is true. ``fever-symmetric`` (`verity.bench.loaders.wikipedia`) is already such a
set; Climate-FEVER labels each of its five sentences per claim, and is read here one
pair per sentence.
"""

from __future__ import annotations

from pathlib import Path

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.common import (
    DataReader,
    at_row,
    build_split,
    label_names,
    list_field,
    map_label,
    str_field,
)
from verity.domain import Claim, Evidence, Label

# Climate-FEVER's per-sentence labels (Diggelmann et al. 2020): the sentence supports the
# claim, refutes it, or does not bear on it. DISPUTED is a claim label only.
EVIDENCE_LABELS = {
    "SUPPORTS": Label.SUPPORTED,
    "REFUTES": Label.REFUTED,
    "NOT_ENOUGH_INFO": Label.NOT_ENOUGH_INFO,
}
THREE_WAY = (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO)


def load_climate_fever_evidence(root: Path) -> DatasetSplit:
    """Climate-FEVER as 7,675 pairs: each claim with each of its annotated sentences.

    A pair's id is ``CLAIM_ID:N`` (N = 0..4, the sentence's place in the claim's list):
    Climate-FEVER's own sentence ids repeat across claims.
    """
    reader = DataReader(root, "Climate-FEVER")
    name = "climate-fever.jsonl"
    path = reader.path(name)
    examples: list[Example] = []
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            claim_id = str_field(obj, "claim_id")
            claim = Claim(text=str_field(obj, "claim"))
            for n, ev in enumerate(list_field(obj, "evidences")):
                raw = str_field(ev, "evidence_label")
                examples.append(
                    Example(
                        id=f"{claim_id}:{n}",
                        subject=claim,
                        label=map_label(EVIDENCE_LABELS, raw),
                        gold=(
                            Evidence(
                                text=str_field(ev, "evidence"),
                                title=str_field(ev, "article"),
                                id=str_field(ev, "evidence_id"),
                                source="climate-fever-evidence",
                            ),
                        ),
                        meta={
                            "label": raw,
                            "claim_id": claim_id,
                            "claim_label": str_field(obj, "claim_label"),
                        },
                    )
                )
    return build_split(
        reader,
        name="climate-fever-evidence",
        title="Climate-FEVER claim-sentence pairs",
        examples=examples,
        labels=THREE_WAY,
        label_map=label_names(EVIDENCE_LABELS),
        paper="Climate-FEVER (Diggelmann et al. 2020) sentence labels, one pair per sentence",
        has_gold=True,
    )
