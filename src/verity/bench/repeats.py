"""ToE's protocol: the same sample checked several times, the median reported.

ToE (§IV-B) samples 50 claims per dataset with a fixed seed, repeats each experiment ten
times and reports the median accuracy; Table II's caption says "average". A run with
``repeats`` keeps the sample (the sampling seed) and varies the model's seed, one repeat
per seed, each stored as a run of its own in ``OUT/repeat-N``; the summary gives the
median, the mean and the spread of each method's accuracy, overall and per gold label:

    configs = repeat_configs(config, 10)        # seeds model.seed + 0 ... + 9
    summary = summarize([run_bench(c, build=build, sources=sources) for c in configs])
    write_summary(config.out, summary, dataset="liar", seeds=[c.model.seed for c in configs])

At temperature 0 a model decodes greedily and the seed changes nothing on most backends:
`repeat_warning` says so, since then the ten repeats are one run ten times.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from verity.bench.results import MethodResult
from verity.bench.runner import BenchConfig
from verity.errors import BadInputError

SUMMARY_JSON = "repeats.json"
SUMMARY_MD = "repeats.md"


def repeat_configs(config: BenchConfig, repeats: int) -> list[BenchConfig]:
    """One config per repeat: the same sample, model seeds ``seed, seed+1, ...``.

    Every role's model gets the same shift, so a repeat is the whole run reseeded.
    """
    if repeats < 1:
        raise BadInputError(f"repeats must be at least 1, got {repeats}")
    configs = []
    for number in range(repeats):
        roles = {
            role: settings.model_copy(update={"seed": (settings.seed or 0) + number})
            for role, settings in config.roles.items()
        }
        configs.append(
            replace(
                config,
                model=config.model.model_copy(update={"seed": (config.model.seed or 0) + number}),
                roles=roles,
                out=config.out / f"repeat-{number}",
            )
        )
    return configs


def repeat_warning(config: BenchConfig, repeats: int) -> str | None:
    """A warning when repeats cannot differ: every model decodes at temperature 0."""
    temperatures = [config.model.temperature, *(s.temperature for s in config.roles.values())]
    if repeats > 1 and all(t == 0 for t in temperatures):
        return (
            "every model runs at temperature 0, where the seed changes little or nothing: "
            "the repeats may all give the same answers; set a temperature to sample"
        )
    return None


@dataclass(frozen=True)
class Spread:
    """Median, mean, standard deviation (0 for one value), lowest and highest of values."""

    median: float
    mean: float
    stdev: float
    low: float
    high: float
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of one or more values."""
        if not values:
            raise BadInputError("a spread needs at least one value")
        return cls(
            median=statistics.median(values),
            mean=statistics.fmean(values),
            stdev=statistics.stdev(values) if len(values) > 1 else 0.0,
            low=min(values),
            high=max(values),
            values=tuple(values),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {
            "median": self.median,
            "mean": self.mean,
            "stdev": self.stdev,
            "min": self.low,
            "max": self.high,
            "values": list(self.values),
        }


@dataclass(frozen=True)
class MethodSummary:
    """One method over the repeats: accuracy, and accuracy per gold label."""

    accuracy: Spread
    per_gold_label: Mapping[str, Spread]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {
            "accuracy": self.accuracy.to_dict(),
            "per_gold_label": {k: v.to_dict() for k, v in self.per_gold_label.items()},
        }


def summarize(runs: Sequence[Mapping[str, MethodResult]]) -> dict[str, MethodSummary]:
    """Each method's spread over the repeats it has a result in, in first-seen order."""
    names = list(dict.fromkeys(name for run in runs for name in run))
    summary: dict[str, MethodSummary] = {}
    for name in names:
        results = [run[name] for run in runs if name in run]
        labels = [
            label
            for label in results[0].metrics.labels
            if results[0].metrics.per_class[label].support
        ]
        summary[name] = MethodSummary(
            accuracy=Spread.of([r.metrics.accuracy for r in results]),
            per_gold_label={
                label.value: Spread.of([r.metrics.per_class[label].recall for r in results])
                for label in labels
            },
        )
    return summary


def write_summary(
    out: Path, summary: Mapping[str, MethodSummary], *, dataset: str, seeds: Sequence[int]
) -> None:
    """Write ``repeats.json`` and ``repeats.md`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "dataset": dataset,
        "model_seeds": list(seeds),
        "methods": {name: s.to_dict() for name, s in summary.items()},
    }
    (out / SUMMARY_JSON).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    (out / SUMMARY_MD).write_text(markdown(summary, dataset=dataset, seeds=seeds), encoding="utf-8")


def markdown(summary: Mapping[str, MethodSummary], *, dataset: str, seeds: Sequence[int]) -> str:
    """The summary as a Markdown table, accuracy in percent."""
    lines = [
        f"# Repeats: {_cell(dataset)}",
        "",
        f"{len(seeds)} repeats of the same sample, model seeds {', '.join(map(str, seeds))}. "
        "ToE reports the median (its Table II caption says average: both are given).",
        "",
        "| method | median | mean | sd | min | max | median per gold label |",
        "|---|--:|--:|--:|--:|--:|---|",
    ]
    for name, s in summary.items():
        a = s.accuracy
        per_label = ", ".join(f"{k} {_pct(v.median)}" for k, v in s.per_gold_label.items())
        lines.append(
            f"| {_cell(name)} | {_pct(a.median)} | {_pct(a.mean)} | {_pct(a.stdev)} "
            f"| {_pct(a.low)} | {_pct(a.high)} | {per_label or '-'} |"
        )
    return "\n".join(lines) + "\n"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
