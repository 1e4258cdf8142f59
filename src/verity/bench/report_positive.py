"""The F1 of one class, where a dataset is scored by that class alone.

The CheckThat! check-worthiness lab ranks systems by the F1 of the check-worthy class, not
by accuracy or macro-F1; a split names that class as its ``positive`` one
(`verity.bench.base.DatasetSplit`), the run's manifest records it under
``dataset.positive``, and the reports add a column for it.

    label = positive_of(manifest)      # Label.CHECK_WORTHY, or None for most datasets
    positive_title(label)              # 'F1 (CHECK_WORTHY)'
    positive_f1(metrics, label)        # metrics.per_class[label].f1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verity.bench.metrics import Metrics
from verity.domain import Label
from verity.errors import BadInputError


def positive_of(manifest: Mapping[str, Any]) -> Label | None:
    """The positive class a run's manifest records for its dataset, if any."""
    dataset = manifest.get("dataset")
    value = dataset.get("positive") if isinstance(dataset, Mapping) else None
    if value is None:
        return None
    try:
        return Label(value)
    except ValueError as exc:
        raise BadInputError(f"the manifest's positive class {value!r} is not a label") from exc


def positive_title(label: Label) -> str:
    """The column heading of the positive class's F1."""
    return f"F1 ({label.value})"


def positive_f1(metrics: Metrics, label: Label) -> float | None:
    """The F1 of ``label`` in ``metrics``; None when it is outside their label space."""
    found = metrics.per_class.get(label)
    return found.f1 if found is not None else None


def positive_payload(label: Label, results: Mapping[str, Metrics]) -> dict[str, Any]:
    """What ``report.json`` keeps under ``positive``: the class and each method's F1 of it."""
    return {
        "label": label.value,
        "f1": {name: positive_f1(metrics, label) for name, metrics in results.items()},
    }
