"""SummEval: system summaries of CNN/DailyMail articles as claims about their source.

split = load_summeval(Path("../shared/datasets"))
split.examples[0].gold[0].id  # 'A0', the source article
"""

from __future__ import annotations

from pathlib import Path

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.common import (
    BINARY_PREDICTIONS,
    DataReader,
    at_row,
    build_split,
    str_field,
)
from verity.domain import Claim, Evidence, Label

# The mean of three experts' 1-5 scores is 5 only when all three found the summary fully
# consistent with its article.
CONSISTENT = 5.0
SUMMEVAL_LABELS = {"consistency = 5": "SUPPORTED", "consistency < 5": "REFUTED"}


def _score(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"field {key!r} must be a number, got {type(value).__name__}")
    score = float(value)
    if not 1.0 <= score <= 5.0:
        raise ValueError(f"field {key!r} must lie in 1-5, got {score}")
    return score


def load_summeval(root: Path) -> DatasetSplit:
    """SummEval: a summary is supported when the experts' consistency score is 5."""
    reader = DataReader(root, "SummEval")
    name = "summeval.jsonl"
    path = reader.path(name)
    examples: list[Example] = []
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            scores = {
                key: _score(obj[key], key)
                for key in ("consistency", "coherence", "fluency", "relevance")
            }
            article_id = str_field(obj, "article_id")
            system = str_field(obj, "summary_id")
            # The scores are thirds; the tolerance absorbs their decimal rounding.
            consistent = scores["consistency"] >= CONSISTENT - 1e-6
            examples.append(
                Example(
                    id=f"{article_id}:{system}",
                    subject=Claim(text=str_field(obj, "summary")),
                    label=Label.SUPPORTED if consistent else Label.REFUTED,
                    gold=(
                        Evidence(
                            text=str_field(obj, "article"),
                            title=f"Source article {article_id}",
                            id=article_id,
                            source="summeval",
                        ),
                    ),
                    meta={
                        "label": scores["consistency"],
                        "article_id": article_id,
                        "summary_id": system,
                        **scores,
                    },
                )
            )
    return build_split(
        reader,
        name="summeval",
        title="SummEval (100 CNN/DM articles x 16 systems)",
        examples=examples,
        labels=(Label.SUPPORTED, Label.REFUTED),
        label_map=dict(SUMMEVAL_LABELS),
        prediction_map=BINARY_PREDICTIONS,
        paper="WKGFC (source article as gold evidence); consistency 5 = consistent",
        has_gold=True,
    )
