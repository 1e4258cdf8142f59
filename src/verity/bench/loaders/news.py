"""Fake-news article datasets: PolitiFact (SheepDog split), PolitiFact++ and GossipCop.

split = load_gossipcop(Path("../shared/datasets"))
split.examples[0].subject.title
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.common import (
    DataReader,
    at_row,
    build_split,
    int_field,
    label_names,
    map_label,
    str_field,
)
from verity.domain import Article, Label
from verity.errors import DatasetError

ARTICLE_SPACE = (Label.REAL, Label.FAKE)
SHEEPDOG_LABELS = {"0": Label.REAL, "1": Label.FAKE}
# PolitiFact++ files: H = human-written, M = machine-written; F = fake, R = real.
POLITIFACT_PP_FILES = {"HF": Label.FAKE, "HR": Label.REAL}
GOSSIPCOP_LABELS = {"real": Label.REAL, "fake": Label.FAKE}


def load_politifact(root: Path) -> DatasetSplit:
    """FakeNewsNet PolitiFact articles, SheepDog's test split (balanced, 90 articles)."""
    reader = DataReader(root, "PolitiFact_SheepDog")
    name = "politifact_test.jsonl"
    path = reader.path(name)
    examples: list[Example] = []
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            raw = int_field(obj, "label")
            idx = int_field(obj, "idx")
            examples.append(
                Example(
                    id=f"test:{idx}",
                    subject=Article(text=str_field(obj, "text")),
                    label=map_label(SHEEPDOG_LABELS, raw),
                    meta={"label": raw, "idx": idx},
                )
            )
    return build_split(
        reader,
        name="politifact",
        title="PolitiFact (FakeNewsNet, SheepDog test split)",
        examples=examples,
        labels=ARTICLE_SPACE,
        label_map=label_names(SHEEPDOG_LABELS),
        paper="SheepDog split of FakeNewsNet PolitiFact: label 0 real, 1 fake",
        notes=["Articles carry text only (no title, URL or date in this release)."],
    )


def _records(value: Any, path: Path) -> list[tuple[str, Any]]:
    if not isinstance(value, dict):
        raise DatasetError(f"{path}: expected a JSON object of records")
    return list(value.items())


def load_politifact_pp(root: Path) -> DatasetSplit:
    """PolitiFact++, human-written articles only: HF (fake) and HR (real)."""
    reader = DataReader(root, "PolitiFact++_Su2023")
    examples: list[Example] = []
    seen: dict[str, set[str]] = {}
    for part, label in POLITIFACT_PP_FILES.items():
        name = f"{part}.json"
        path = reader.path(name)
        for key, obj in _records(reader.json(name), path):
            with at_row(path, f"item {key!r}"):
                news_id = str_field(obj, "id")
                seen.setdefault(news_id, set()).add(part)
                examples.append(
                    Example(
                        id=f"{part}:{news_id}",
                        subject=Article(
                            title=str_field(obj, "title", optional=True),
                            text=str_field(obj, "text"),
                        ),
                        label=label,
                        meta={
                            "label": part,
                            "news_id": news_id,
                            "description": str_field(obj, "description", optional=True),
                        },
                    )
                )
    both = sorted(i for i, parts in seen.items() if len(parts) > 1)
    notes = []
    if both:
        notes.append(
            f"In both HF and HR, kept in each as released: {len(both)} ({', '.join(both)})."
        )
    return build_split(
        reader,
        name="politifact-pp",
        title="PolitiFact++ human-written (HF fake + HR real)",
        examples=examples,
        labels=ARTICLE_SPACE,
        label_map=label_names(POLITIFACT_PP_FILES),
        paper="ZoFia (PolitiFact++, Su et al. 2023): human-written fake and real only",
        notes=notes,
    )


def load_gossipcop(root: Path) -> DatasetSplit:
    """GossipCop short-article subset; rows with no article text are left out."""
    reader = DataReader(root, "GossipCop")
    name = "gossipcop_complete_cleaned_less512.csv"
    path = reader.path(name)
    examples: list[Example] = []
    empty = 0
    for line, row in reader.csv_rows(name, fields=("id", "title", "content", "label")):
        with at_row(path, f"line {line}"):
            label = map_label(GOSSIPCOP_LABELS, row["label"])
            if not row["content"].strip():
                empty += 1
                continue
            examples.append(
                Example(
                    id=row["id"],
                    subject=Article(title=row["title"].strip(), text=row["content"]),
                    label=label,
                    meta={"label": row["label"]},
                )
            )
    return build_split(
        reader,
        name="gossipcop",
        title="GossipCop short-article subset",
        examples=examples,
        labels=ARTICLE_SPACE,
        label_map=label_names(GOSSIPCOP_LABELS),
        paper="FakeNewsNet GossipCop labels: real / fake",
        notes=[f"Rows with empty content left out: {empty:,}."],
    )
