"""Scores of a benchmark run: accuracy, macro-F1, balanced accuracy, per class, confusion.

    metrics = compute_metrics(
        gold=[Label.SUPPORTED, Label.REFUTED, Label.REFUTED],
        pred=[Label.SUPPORTED, None, Label.NOT_ENOUGH_INFO],  # None: the example failed
        labels=(Label.SUPPORTED, Label.REFUTED),
    )
    metrics.macro_f1, metrics.macro_f1_ci, metrics.per_class[Label.REFUTED].recall

`Outcome` is one method's result on one example (gold, prediction, confidence): the
record the paired tests (`verity.bench.paired`) and calibration
(`verity.bench.calibration`) read, stored with each method's result in ``report.json``.

Pure numpy. The conventions (what a failed example counts as, how a class nobody
predicted scores) follow scikit-learn's ``labels=...`` and ``zero_division=0`` and are
written out in ``docs/metrics.md``; the tests check every number against scikit-learn.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from verity.domain import Label, Usage
from verity.errors import BadInputError

OTHER = "other"
"""Name of the confusion-matrix column for failed examples and out-of-space predictions."""

# Resamples are scored in blocks so that memory stays near this many cells however
# large the dataset is.
_BLOCK_CELLS = 4_000_000

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ClassMetrics:
    """Precision, recall and F1 of one class, and its support (gold examples of it)."""

    precision: float
    recall: float
    f1: float
    support: int

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready values."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
        }


@dataclass(frozen=True)
class Metrics:
    """The aggregate scores of one method on one sample; see `compute_metrics`.

    ``confusion`` has a row per gold label in ``labels`` order and a column per predicted
    label in the same order, then one more column, ``other``: failed examples and
    predictions outside ``labels``. ``macro_f1_ci`` is the bootstrap 95% percentile
    interval of macro-F1, or None when no resampling was asked for.

        metrics.to_dict()["confusion"]["matrix"][0][-1]  # first class sent to "other"
    """

    accuracy: float
    macro_f1: float
    balanced_accuracy: float
    n: int
    errors: int
    macro_f1_ci: tuple[float, float] | None
    labels: tuple[Label, ...]
    per_class: Mapping[Label, ClassMetrics]
    confusion: tuple[tuple[int, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values, in the shape ``report.json`` stores."""
        return {
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "balanced_accuracy": self.balanced_accuracy,
            "n": self.n,
            "errors": self.errors,
            "macro_f1_ci": list(self.macro_f1_ci) if self.macro_f1_ci is not None else None,
            "per_class": {label.value: self.per_class[label].to_dict() for label in self.labels},
            "confusion": {
                "labels": [label.value for label in self.labels],
                "columns": [*(label.value for label in self.labels), OTHER],
                "matrix": [list(row) for row in self.confusion],
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Metrics:
        """Rebuild metrics from `to_dict` output (a stored ``report.json``, say)."""
        labels = tuple(Label(value) for value in data["confusion"]["labels"])
        ci = data["macro_f1_ci"]
        return cls(
            accuracy=float(data["accuracy"]),
            macro_f1=float(data["macro_f1"]),
            balanced_accuracy=float(data["balanced_accuracy"]),
            n=int(data["n"]),
            errors=int(data["errors"]),
            macro_f1_ci=(float(ci[0]), float(ci[1])) if ci is not None else None,
            labels=labels,
            per_class={
                label: ClassMetrics(
                    precision=float(data["per_class"][label.value]["precision"]),
                    recall=float(data["per_class"][label.value]["recall"]),
                    f1=float(data["per_class"][label.value]["f1"]),
                    support=int(data["per_class"][label.value]["support"]),
                )
                for label in labels
            },
            confusion=tuple(
                tuple(int(cell) for cell in row) for row in data["confusion"]["matrix"]
            ),
        )


@dataclass(frozen=True)
class Outcome:
    """One method's result on one example, with the gold label after the dataset's mapping.

    ``pred`` is None where the example failed; ``confidence`` is the method's confidence
    in ``pred`` on [0, 1], None where it gave none. A failed example and a prediction
    outside the label space are wrong, as `compute_metrics` counts them.

        Outcome("ex-1", gold=Label.SUPPORTED, pred=Label.REFUTED, confidence=0.8).correct  # False
    """

    example_id: str
    gold: Label
    pred: Label | None
    confidence: float | None = None

    def __post_init__(self) -> None:
        value = self.confidence
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise BadInputError(
                f"example {self.example_id!r}: confidence {value} is not a probability in [0, 1]"
            )

    @property
    def correct(self) -> bool:
        """Whether the prediction is the gold label (a failed example is not)."""
        return self.pred is not None and self.pred == self.gold

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values, as stored under ``methods.NAME.examples`` in ``report.json``."""
        return {
            "id": self.example_id,
            "gold": self.gold.value,
            "pred": self.pred.value if self.pred is not None else None,
            "confidence": self.confidence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        """Rebuild an outcome from `to_dict` output."""
        pred, confidence = data.get("pred"), data.get("confidence")
        return cls(
            example_id=str(data["id"]),
            gold=Label(data["gold"]),
            pred=Label(pred) if pred is not None else None,
            confidence=float(confidence) if confidence is not None else None,
        )


def compute_metrics(
    gold: Sequence[Label],
    pred: Sequence[Label | None],
    labels: Sequence[Label],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
) -> Metrics:
    """Score predictions against gold labels over the label space ``labels``.

    Conventions (scikit-learn's, with ``labels=labels`` and ``zero_division=0``):

    - ``n`` counts every example; ``errors`` counts the failed ones (``pred`` is None).
    - A failed example and a prediction outside ``labels`` are wrong: a false negative of
      the gold class and nobody's false positive. Both land in the ``other`` column of the
      confusion matrix.
    - Precision, recall or F1 whose denominator is zero is 0. F1 is
      ``2 TP / (2 TP + FP + FN)``, so a class with no gold example and no prediction
      scores F1 = 0 and still counts in macro-F1, the mean over every label in ``labels``.
    - Balanced accuracy is the mean recall over the labels that occur in ``gold``.
    - ``macro_f1_ci`` is the 2.5th and 97.5th percentile of macro-F1 over ``bootstrap``
      resamples of the examples with replacement, drawn with
      ``numpy.random.default_rng(seed)``; ``bootstrap=0`` gives None.

    Raises `BadInputError` for empty input, sequences of different lengths, an empty or
    repeated label space, or a gold label outside it.

        m = compute_metrics([Label.SUPPORTED], [Label.SUPPORTED], [Label.SUPPORTED])
        assert m.accuracy == 1.0
    """
    space = tuple(labels)
    if not space:
        raise BadInputError("the label space is empty")
    if len(set(space)) != len(space):
        raise BadInputError(f"repeated label in the label space: {[s.value for s in space]}")
    if len(gold) != len(pred):
        raise BadInputError(f"{len(gold)} gold labels but {len(pred)} predictions")
    if not gold:
        raise BadInputError("no examples to score")
    if bootstrap < 0:
        raise BadInputError(f"bootstrap must be 0 or more, not {bootstrap}")

    k = len(space)
    pair_codes = encode(gold, pred, space)

    confusion = _confusions(pair_codes[np.newaxis, :], k)[0]
    tp, support, predicted = _counts(confusion[np.newaxis], k)
    precision = _ratio(tp, predicted)[0]
    recall = _ratio(tp, support)[0]
    f1 = _ratio(2 * tp, support + predicted)[0]
    present = support[0] > 0

    return Metrics(
        accuracy=float(tp.sum() / len(gold)),
        macro_f1=float(f1.mean()),
        balanced_accuracy=float(recall[present].mean()),
        n=len(gold),
        errors=sum(p is None for p in pred),
        macro_f1_ci=_bootstrap_ci(pair_codes, k, bootstrap, seed) if bootstrap else None,
        labels=space,
        per_class={
            label: ClassMetrics(
                precision=float(precision[i]),
                recall=float(recall[i]),
                f1=float(f1[i]),
                support=int(support[0, i]),
            )
            for i, label in enumerate(space)
        },
        confusion=tuple(tuple(int(cell) for cell in row) for row in confusion),
    )


def _confusions(pair_codes: IntArray, k: int) -> IntArray:
    """One k x (k + 1) confusion matrix per row of ``pair_codes`` (gold * (k + 1) + pred)."""
    rows, cells = pair_codes.shape[0], k * (k + 1)
    # Offsetting each row by its own block of cells lets one bincount count every row.
    offsets = (np.arange(rows, dtype=np.int64) * cells)[:, np.newaxis]
    counts = np.bincount((pair_codes + offsets).ravel(), minlength=rows * cells)
    return counts.reshape(rows, k, k + 1)


def _counts(confusions: IntArray, k: int) -> tuple[IntArray, IntArray, IntArray]:
    """True positives, support and predicted count per class, one row per matrix."""
    tp = np.diagonal(confusions[:, :, :k], axis1=1, axis2=2)
    support = confusions.sum(axis=2)
    predicted = confusions[:, :, :k].sum(axis=1)
    return tp, support, predicted


def _ratio(numerator: IntArray, denominator: IntArray) -> FloatArray:
    """Elementwise ratio, 0 where the denominator is 0 (scikit-learn's zero_division=0)."""
    out = np.zeros(numerator.shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _bootstrap_ci(pair_codes: IntArray, k: int, resamples: int, seed: int) -> tuple[float, float]:
    """Percentile 95% interval of macro-F1 over resamples of the examples."""
    scores = [
        resampled_macro_f1(pair_codes, k, picks)
        for picks in resample_blocks(np.random.default_rng(seed), pair_codes.shape[0], resamples, k)
    ]
    low, high = np.percentile(np.concatenate(scores), [2.5, 97.5])
    return float(low), float(high)


def encode(
    gold: Sequence[Label], pred: Sequence[Label | None], labels: Sequence[Label]
) -> IntArray:
    """One code per example, ``gold * (k + 1) + pred``, over the label space ``labels``.

    ``k`` is the size of the space; a failed or out-of-space prediction has code ``k``,
    the confusion matrix's ``other`` column. Raises `BadInputError` for a gold label
    outside the space.

        encode([Label.REFUTED], [None], (Label.SUPPORTED, Label.REFUTED))  # [1 * 3 + 2]
    """
    index = {label: i for i, label in enumerate(labels)}
    k = len(index)
    outside = [g for g in gold if g not in index]
    if outside:
        raise BadInputError(
            f"gold label {outside[0]!s} is outside the label space {[s.value for s in labels]}"
        )
    gold_codes = np.fromiter((index[g] for g in gold), dtype=np.int64, count=len(gold))
    pred_codes = np.fromiter(
        (k if p is None else index.get(p, k) for p in pred), dtype=np.int64, count=len(pred)
    )
    return gold_codes * (k + 1) + pred_codes


def resample_blocks(rng: np.random.Generator, n: int, resamples: int, k: int) -> Iterator[IntArray]:
    """Example indices drawn with replacement, ``resamples`` rows of ``n``, a block at a time.

    Blocks keep memory near a fixed number of cells however large ``n`` is; the draws are
    the same as one ``rng.integers(0, n, size=(resamples, n))`` taken block by block.
    """
    block = max(1, _BLOCK_CELLS // max(n, k * (k + 1)))
    for start in range(0, resamples, block):
        yield rng.integers(0, n, size=(min(block, resamples - start), n))


def resampled_macro_f1(pair_codes: IntArray, k: int, picks: IntArray) -> FloatArray:
    """Macro-F1 of each resample: ``picks`` holds one row of example indices per resample.

    ``pair_codes`` comes from `encode` over a label space of size ``k``.

        resampled_macro_f1(codes, k, np.arange(len(codes))[np.newaxis])[0]  # the sample's own
    """
    tp, support, predicted = _counts(_confusions(pair_codes[picks], k), k)
    scores: FloatArray = _ratio(2 * tp, support + predicted).mean(axis=1)
    return scores


USAGE_FIELDS = (
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cached_calls",
    "seconds",
    "critical_calls",
    "wall_seconds",
    "non_model_seconds",
    "cost",
    "unpriced_calls",
)


def usage_per_claim(usages: Sequence[Usage]) -> dict[str, float]:
    """Mean cost per example over the usages given.

    Pass the usage of every example that ran, failed ones included when they recorded
    some; an example that never ran has no usage and is left out. No usage at all gives
    zeros.

        usage_per_claim([Usage(llm_calls=2), Usage(llm_calls=4)])["llm_calls"]  # 3.0
    """
    if not usages:
        return dict.fromkeys(USAGE_FIELDS, 0.0)
    return {
        name: float(np.mean([float(getattr(usage, name)) for usage in usages]))
        for name in USAGE_FIELDS
    }
