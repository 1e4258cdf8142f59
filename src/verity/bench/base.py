"""What a benchmark is made of: labelled examples with their gold evidence.

split = load_dataset("feverous-s")
for example in split.examples[:3]:
    print(example.id, example.label, example.subject.text, len(example.gold))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verity.domain import Article, Claim, Evidence, Label
from verity.errors import DatasetError


@dataclass(frozen=True)
class Example:
    """One labelled claim or article, with the dataset's gold evidence when it has some."""

    id: str
    subject: Claim | Article
    label: Label
    gold: tuple[Evidence, ...] = ()
    # The dataset's own label and any field a paper's protocol needs (hops, speaker ...).
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetSplit:
    """A loaded dataset: its examples in file order, label space and provenance.

    ``labels`` is the label space the metrics use, in a fixed order. ``prediction_map``
    maps a method's canonical label onto that space where the paper's protocol does so
    (on a binary SUPPORTED / NOT_SUPPORTED dataset, NOT_ENOUGH_INFO counts as REFUTED);
    a prediction outside the space after mapping counts as wrong. ``corpus`` names a
    JSONL file of documents for the open-book setting, where the dataset ships one.
    ``positive`` is the class whose own F1 is the dataset's official measure (CheckThat!
    check-worthiness scores the F1 of the check-worthy class); reports show it beside
    accuracy and macro-F1. None where the measure covers every class alike.
    """

    name: str
    examples: tuple[Example, ...]
    labels: tuple[Label, ...]
    files: tuple[Path, ...]
    checksum: str
    description: str
    label_map: dict[str, str]
    prediction_map: dict[Label, Label] = field(default_factory=dict)
    corpus: Path | None = None
    has_gold: bool = False
    paper: str = ""
    positive: Label | None = None

    def __post_init__(self) -> None:
        if self.positive is not None and self.positive not in self.labels:
            raise DatasetError(
                f"{self.name}: positive class {self.positive} is not among its labels"
            )

    def map_prediction(self, label: Label) -> Label:
        """A method's label as this dataset's protocol counts it."""
        return self.prediction_map.get(label, label)
