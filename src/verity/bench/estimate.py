"""What a run will cost before it runs: calls, tokens and dollars per method, with a range.

    book = UsageBook.load()                                  # shipped figures + your runs
    found = book.figures("zofia", dataset="politifact", setting="open", model="openai:m")
    cost = estimate_cost(found, examples=50, price=price)    # Estimate(calls, tokens, ...)

Estimates come from measured usage per example, never from a guess: verity ships the
figures of its own runs on the embedded model (``estimates.json`` beside this module,
written by ``bench/usage_estimates.py``), and every benchmark run adds its own to the
cache folder (``$VERITY_CACHE_DIR/estimates/usage.json``, one record per run and method,
replaced when the run is resumed). A method's figures are looked up from the closest match
down: your runs of it on this dataset, setting and model; on this dataset and setting on
any model; the shipped figures for this dataset and setting; your runs of it anywhere;
the shipped figures anywhere; then the same for its base method (``zofia`` for
``zofia/no-debate``). The table says which one each line used.

The range of a run of n examples is n times the mean, plus or minus two standard
deviations of a sum of n examples (2·sd·√n), kept within n times the smallest and the
largest example seen. Tokens measured on one model stand for another's only roughly (a
model that writes longer answers costs more): the range is a guide, not a quote, and the
run's real cost is in its report.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from verity.domain import Usage
from verity.llm.prices import Price
from verity.paths import cache_path

__all__ = ["Estimate", "Figures", "UsageBook", "UsageRecord", "estimate_cost", "record_run"]

SHIPPED_FILE = "estimates.json"
QUANTITIES = ("calls", "prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class Tally:
    """Sums of one quantity over examples: enough for a mean, a spread and the extremes."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    @classmethod
    def of(cls, values: Iterable[float]) -> Tally:
        """The tally of these values."""
        found = list(values)
        if not found:
            return cls()
        return cls(len(found), sum(found), sum(v * v for v in found), min(found), max(found))

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.n + other.n,
            self.total + other.total,
            self.squares + other.squares,
            min(self.low, other.low),
            max(self.high, other.high),
        )

    @property
    def mean(self) -> float:
        """The mean per example."""
        return self.total / self.n if self.n else 0.0

    @property
    def sd(self) -> float:
        """The standard deviation per example (0 for fewer than two)."""
        if self.n < 2:
            return 0.0
        variance = (self.squares - self.total * self.total / self.n) / (self.n - 1)
        return math.sqrt(max(variance, 0.0))

    def for_run(self, examples: int) -> tuple[float, float, float]:
        """Expected total over ``examples``, and its low and high ends."""
        if not self.n or examples <= 0:
            return (0.0, 0.0, 0.0)
        mean = examples * self.mean
        spread = 2 * self.sd * math.sqrt(examples)
        low = max(mean - spread, examples * self.low)
        high = min(mean + spread, examples * self.high)
        return (mean, min(low, mean), max(high, mean))

    def to_list(self) -> list[float]:
        """The JSON form."""
        return [self.n, self.total, self.squares, self.low, self.high]

    @classmethod
    def from_list(cls, data: Sequence[float]) -> Tally:
        """Read the JSON form."""
        n, total, squares, low, high = data
        return cls(int(n), float(total), float(squares), float(low), float(high))


@dataclass(frozen=True)
class UsageRecord:
    """What one method spent per example in one run: the unit the book keeps."""

    method: str
    dataset: str
    setting: str
    model: str
    tallies: dict[str, Tally]

    @classmethod
    def of(
        cls, method: str, dataset: str, setting: str, model: str, usages: Sequence[Usage]
    ) -> UsageRecord:
        """The record of a run's per-example usages (each a model call's sum)."""
        # Calls answered from verity's cache were free here but are not on a first run.
        return cls(
            method=method,
            dataset=dataset,
            setting=setting,
            model=model,
            tallies={
                "calls": Tally.of(u.llm_calls for u in usages),
                "prompt_tokens": Tally.of(u.prompt_tokens for u in usages),
                "completion_tokens": Tally.of(u.completion_tokens for u in usages),
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "method": self.method,
            "dataset": self.dataset,
            "setting": self.setting,
            "model": self.model,
            **{name: self.tallies[name].to_list() for name in QUANTITIES},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UsageRecord:
        """Read the JSON form."""
        return cls(
            method=str(data["method"]),
            dataset=str(data["dataset"]),
            setting=str(data["setting"]),
            model=str(data["model"]),
            tallies={name: Tally.from_list(data[name]) for name in QUANTITIES},
        )


@dataclass(frozen=True)
class Figures:
    """A method's usage per example, summed over the records that matched, and from where."""

    tallies: dict[str, Tally]
    source: str

    @property
    def examples(self) -> int:
        """Examples measured."""
        return self.tallies["calls"].n


@dataclass(frozen=True)
class Estimate:
    """Expected calls, tokens and dollars of a run: each (expected, low, high)."""

    examples: int
    calls: tuple[float, float, float]
    prompt_tokens: tuple[float, float, float]
    completion_tokens: tuple[float, float, float]
    cost: tuple[float, float, float] | None
    source: str

    @property
    def tokens(self) -> tuple[float, float, float]:
        """Prompt and completion tokens together."""
        p, c = self.prompt_tokens, self.completion_tokens
        return (p[0] + c[0], p[1] + c[1], p[2] + c[2])


def estimate_cost(found: Figures | None, *, examples: int, price: Price | None) -> Estimate:
    """The expected usage of ``examples`` examples, at ``price`` (None: price unknown)."""
    if found is None:
        zero = (0.0, 0.0, 0.0)
        return Estimate(examples, zero, zero, zero, None, "no measurement yet")
    calls = found.tallies["calls"].for_run(examples)
    prompt = found.tallies["prompt_tokens"].for_run(examples)
    completion = found.tallies["completion_tokens"].for_run(examples)
    cost = None
    if price is not None:
        cost = tuple(
            price.cost_of(prompt_tokens=int(p), completion_tokens=int(c))
            for p, c in zip(prompt, completion, strict=True)
        )
    return Estimate(examples, calls, prompt, completion, cost, found.source)  # type: ignore[arg-type]


def _base(method: str) -> str:
    return method.partition("/")[0]


def _reported(name: str) -> str:
    """The method a report's name stands for: ``rag`` of ``rag [guarded]``."""
    return name.split(" [", 1)[0]


@dataclass
class UsageBook:
    """The shipped figures and the user's own, by method, dataset, setting and model."""

    shipped: list[UsageRecord] = field(default_factory=list)
    own: dict[str, UsageRecord] = field(default_factory=dict)

    @classmethod
    def load(cls, own_file: Path | None = None) -> UsageBook:
        """The shipped figures and those in ``own_file`` (default: the cache folder's)."""
        shipped_text = files("verity.bench").joinpath(SHIPPED_FILE).read_text(encoding="utf-8")
        shipped = [UsageRecord.from_dict(r) for r in json.loads(shipped_text)["records"]]
        return cls(shipped=shipped, own=_read_own(own_file or own_usage_file()))

    def figures(self, method: str, *, dataset: str, setting: str, model: str) -> Figures | None:
        """A method's figures, from the closest match down (module documentation)."""
        own = list(self.own.values())
        for name in dict.fromkeys((method, _base(method))):
            levels: list[tuple[str, list[UsageRecord]]] = [
                ("your runs, this model", _match(own, name, dataset, setting, model)),
                ("your runs", _match(own, name, dataset, setting)),
                ("shipped", _match(self.shipped, name, dataset, setting)),
                ("your runs, other datasets", _match(own, name)),
                ("shipped, other datasets", _match(self.shipped, name)),
            ]
            for source, records in levels:
                if records:
                    said = source if name == method else f"{source}, as {name}"
                    return Figures(_summed(records), said)
        return None


def _match(records: Sequence[UsageRecord], method: str, *keys: str) -> list[UsageRecord]:
    wanted = ("dataset", "setting", "model")[: len(keys)]
    return [
        r
        for r in records
        if r.method == method and all(getattr(r, k) == v for k, v in zip(wanted, keys, strict=True))
    ]


def _summed(records: Sequence[UsageRecord]) -> dict[str, Tally]:
    total = {name: Tally() for name in QUANTITIES}
    for record in records:
        for name in QUANTITIES:
            total[name] = total[name] + record.tallies[name]
    return total


def own_usage_file() -> Path:
    """Where a user's runs keep their usage figures."""
    return cache_path("estimates", "usage.json")


_LOCK = threading.Lock()


def _read_own(path: Path) -> dict[str, UsageRecord]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {key: UsageRecord.from_dict(value) for key, value in data["records"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # missing or unreadable: the shipped figures still answer


def record_run(run_id: str, records: Sequence[UsageRecord], path: Path | None = None) -> None:
    """Keep a run's figures (replacing that run's earlier ones) for later estimates.

    Never fails a run: a file that cannot be written costs only future estimates.
    """
    target = path or own_usage_file()
    try:
        # Runs in other processes write the same file: one at a time, each in full.
        with _LOCK, FileLock(str(target) + ".lock", timeout=30):
            kept = _read_own(target)
            for record in records:
                if record.tallies["calls"].n:
                    kept[f"{run_id}|{_reported(record.method)}|{record.method}"] = record
            blob = {"records": {key: r.to_dict() for key, r in kept.items()}}
            partial = target.with_name(f"{target.name}.{os.getpid()}.part")
            partial.write_text(json.dumps(blob, indent=1), encoding="utf-8")
            partial.replace(target)
    except (OSError, Timeout):
        return
