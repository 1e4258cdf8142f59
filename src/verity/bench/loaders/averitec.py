"""AVeriTeC dev: real-world claims with question-answer evidence from the web.

split = load_averitec(Path("../shared/datasets"))
split.examples[0].gold[0].url
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.common import (
    BINARY_PREDICTIONS,
    DataReader,
    as_records,
    at_row,
    build_split,
    label_names,
    list_field,
    map_label,
    parse_date,
    str_field,
)
from verity.domain import Claim, Evidence, Label

AVERITEC_LABELS = {
    "Supported": Label.SUPPORTED,
    "Refuted": Label.REFUTED,
    "Not Enough Evidence": Label.NOT_ENOUGH_INFO,
    "Conflicting Evidence/Cherrypicking": Label.CONFLICTING,
}
AVERITEC_SPACE = (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO, Label.CONFLICTING)
# WKGFC's binary standardisation: claims without verifiable evidence are left out and
# cherry-picked or conflicting ones count as refuted.
AVERITEC_BINARY_LABELS = {
    "Supported": Label.SUPPORTED,
    "Refuted": Label.REFUTED,
    "Conflicting Evidence/Cherrypicking": Label.REFUTED,
}
_META = (
    "justification",
    "claim_types",
    "fact_checking_strategies",
    "fact_checking_article",
    "reporting_source",
    "location_ISO_code",
    "required_reannotation",
)


def _qa_evidence(claim_id: str, questions: list[Any]) -> tuple[Evidence, ...]:
    """One gold passage per answer: its question and answer, linked to the answer's source."""
    gold: list[Evidence] = []
    for q_index, question in enumerate(questions):
        asked = str_field(question, "question").strip()
        for a_index, answer in enumerate(list_field(question, "answers")):
            text = f"Q: {asked}\nA: {str_field(answer, 'answer').strip()}"
            explanation = str_field(answer, "boolean_explanation", optional=True).strip()
            if answer.get("answer_type") == "Boolean" and explanation:
                text = f"{text} {explanation}"
            gold.append(
                Evidence(
                    text=text,
                    id=f"{claim_id}:q{q_index}a{a_index}",
                    url=str_field(answer, "source_url", optional=True).strip() or None,
                    source="averitec",
                )
            )
    return tuple(gold)


def load_averitec(root: Path) -> DatasetSplit:
    """AVeriTeC dev, four classes, the annotators' question-answer pairs as gold evidence."""
    reader = DataReader(root, "AVeriTeC")
    return build_split(
        reader,
        name="averitec",
        title="AVeriTeC dev",
        examples=_examples(reader, AVERITEC_LABELS)[0],
        labels=AVERITEC_SPACE,
        label_map=label_names(AVERITEC_LABELS),
        paper="AVeriTeC (Schlichtkrull et al. 2023) 4-way, Conflicting/Cherrypicking CONFLICTING",
        has_gold=True,
    )


def load_averitec_binary(root: Path) -> DatasetSplit:
    """AVeriTeC dev as WKGFC evaluates it: supported against refuted or cherry-picked."""
    reader = DataReader(root, "AVeriTeC")
    examples, dropped = _examples(reader, AVERITEC_BINARY_LABELS)
    return build_split(
        reader,
        name="averitec-binary",
        title="AVeriTeC dev (binary)",
        examples=examples,
        labels=(Label.SUPPORTED, Label.REFUTED),
        label_map=label_names(AVERITEC_BINARY_LABELS),
        prediction_map=BINARY_PREDICTIONS,
        paper="WKGFC: Supported / Refuted + Conflicting, Not Enough Evidence dropped",
        notes=[f"Not Enough Evidence claims left out: {dropped:,} (binary protocol)."],
        has_gold=True,
    )


def _examples(reader: DataReader, labels: dict[str, Label]) -> tuple[list[Example], int]:
    """dev.json's claims whose label ``labels`` maps, and how many known labels it leaves out.

    Ids are positions in the file, so both protocols share them; an unknown label raises.
    """
    name = "dev.json"
    path = reader.path(name)
    examples: list[Example] = []
    dropped = 0
    for index, obj in enumerate(as_records(reader.json(name), path)):
        with at_row(path, f"item {index}"):
            raw = str_field(obj, "label")
            if raw not in labels and raw in AVERITEC_LABELS:
                dropped += 1
                continue
            claim_id = str(index)
            examples.append(
                Example(
                    id=claim_id,
                    subject=Claim(
                        text=str_field(obj, "claim"),
                        date=parse_date(str_field(obj, "claim_date"), "%d-%m-%Y"),
                        speaker=str_field(obj, "speaker", optional=True).strip() or None,
                        source_url=str_field(obj, "original_claim_url", optional=True) or None,
                    ),
                    label=map_label(labels, raw),
                    gold=_qa_evidence(claim_id, list_field(obj, "questions")),
                    meta={"label": raw, **{key: obj.get(key) for key in _META}},
                )
            )
    return examples, dropped
