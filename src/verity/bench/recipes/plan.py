"""A recipe as the benchmark runs to make, and the cells that cannot run, each with its reason.

    plan = plan_recipe(recipe, row_models={"gpt4": "openai:gpt-4o"}, sample=50, seeds=(0, 1),
                       row_settings={"roberta-nli": {"checkpoint": "/models/roberta"}})
    for run in plan.runs:                 # one per dataset/setting/hops and model group
        run.folder, run.methods, run.method_settings, [c.row for c in run.cells]
    plan.skipped                          # [Skipped(row, column, reason), ...]

A column says where a figure is measured (dataset, setting, hops, group, metric); a row
says what is measured (a method or variant, its settings, the model). Rows that name the
same method with the same settings on the same model are one measurement: ZoFia's three
rows on three LLMs become one run when one ``--model`` serves them all, and each row's
cell reads the same figure. A row given a model of its own (``row_models``) is measured
on that model, in a run of its own; a row given settings of its own (``row_settings``,
merged over the recipe's) is a measurement of its own, as when each NLI row is given its
own checkpoint.

A run holds every measurement of one column dataset on one model, so that every method
sees the same sample, as the papers' tables compare them. Settings are given per method
name (`verity.bench.runner.BenchConfig.method_settings`), so two rows that run the same
method with different settings cannot share a run: the second goes into a second run
(folder suffix ``-part2``) of the same dataset.

Cells that cannot run are known here when the column or the row is ``unavailable`` or the
metric is not one verity computes; the others (a dataset not on this machine, a method
that cannot be built) are found when the runs start (`verity.bench.recipes.run`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from verity.bench.recipes.measure import metric_problem
from verity.bench.recipes.schema import Recipe, Setting
from verity.errors import BadInputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Enough repeats for any paper's protocol; a typo of 1000 should not start 1000 runs.
MAX_REPEATS = 100


@dataclass(frozen=True)
class Skipped:
    """A cell that is not measured here, and why (in a sentence a reader can act on)."""

    row: str
    column: str
    reason: str


@dataclass(frozen=True)
class PlannedCell:
    """One cell to measure: which method's results, with which metric, over which group."""

    row: str
    column: str
    method: str
    metric: str
    group: str | None = None


@dataclass(frozen=True)
class PlannedRun:
    """One benchmark run (per seed): a dataset in a setting, methods on one model.

    ``model`` is the spec a row asked for (``--row-model``), None for the run's default
    model. ``cells`` lists every cell read from this run's results.
    """

    folder: str
    dataset: str
    setting: Setting
    hops: int | None
    sample: int | None
    model: str | None
    methods: tuple[str, ...]
    method_settings: Mapping[str, Mapping[str, Any]]
    cells: tuple[PlannedCell, ...]

    def cells_of(self, method: str) -> list[PlannedCell]:
        """The cells measured from one method's results."""
        return [cell for cell in self.cells if cell.method == method]


@dataclass(frozen=True)
class Plan:
    """Everything `verity reproduce` will run for a recipe, and what it will not."""

    recipe: Recipe
    runs: tuple[PlannedRun, ...]
    skipped: tuple[Skipped, ...]
    sample: int | None
    seeds: tuple[int, ...]
    row_models: Mapping[str, str] = field(default_factory=dict)
    row_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def seeds_for(recipe: Recipe, repeats: int | None = None) -> tuple[int, ...]:
    """The recipe's seeds, or the first ``repeats`` of them, continued past the last.

    seeds_for(recipe)             # (0, 1, ..., 9) for ToE's ten repeats
    seeds_for(recipe, 3)          # (0, 1, 2)
    """
    seeds = list(dict.fromkeys(recipe.seeds)) or [0]
    if repeats is None:
        return tuple(seeds)
    if not 1 <= repeats <= MAX_REPEATS:
        raise BadInputError(f"repeats must be within 1..{MAX_REPEATS}, got {repeats}")
    while len(seeds) < repeats:
        seeds.append(max(seeds) + 1)
    return tuple(seeds[:repeats])


def sources_for(recipe: Recipe, given: Sequence[str], configured: Sequence[str]) -> tuple[str, ...]:
    """The open setting's sources: the command line's, else the recipe's, else the settings'.

    The settings' are the settings file's, ``VERITY_SOURCES`` or the default.
    """
    return tuple(given) or tuple(recipe.sources) or tuple(configured)


def plan_recipe(
    recipe: Recipe,
    *,
    row_models: Mapping[str, str] | None = None,
    row_settings: Mapping[str, Mapping[str, Any]] | None = None,
    sample: int | Literal["recipe"] | None = "recipe",
    seeds: Sequence[int] | None = None,
) -> Plan:
    """The runs a recipe needs and the cells it cannot fill, in the recipe's order.

    ``row_models`` maps a row key to a model spec for that row, ``row_settings`` to
    settings merged over the row's own (an unknown row key is an `UnknownNameError`);
    ``sample`` is the examples per run (None: the whole split; by default each column's
    own sample, else the recipe's); ``seeds`` the repeats (default: the recipe's).
    """
    chosen = dict(row_models or {})
    extra = {key: dict(value) for key, value in (row_settings or {}).items()}
    for key in [*chosen, *extra]:
        recipe.row(key)  # raises, naming the rows, when there is no such row
    skipped: list[Skipped] = []
    # (dataset, setting, hops) -> model -> measurement key -> cells, all in recipe order.
    wanted: dict[tuple[str, Setting, int | None], dict[str | None, dict[str, _Measurement]]] = {}
    samples: dict[tuple[str, Setting, int | None], int | None] = {}
    for column in recipe.columns:
        setting = column.setting or recipe.setting
        own = (column.sample or recipe.sample) if sample == "recipe" else sample
        samples.setdefault((column.dataset, setting, column.hops), own)
        for row in recipe.rows:
            metric = row.metric or column.metric or recipe.metric
            reason = _reason(recipe, row.key, column.key, metric)
            if reason:
                skipped.append(Skipped(row.key, column.key, reason))
                continue
            model = chosen.get(row.key)
            settings = {**row.settings, **extra.get(row.key, {})}
            measure = _measure_key(row.method, settings)
            where = wanted.setdefault((column.dataset, setting, column.hops), {})
            entry = where.setdefault(model, {}).setdefault(
                measure, _Measurement(row.method, settings)
            )
            group = row.group or column.group
            entry.cells.append(PlannedCell(row.key, column.key, row.method, metric, group))
    runs: list[PlannedRun] = []
    for (dataset, setting, hops), by_model in wanted.items():
        run_sample = samples[(dataset, setting, hops)]
        for model, measurements in by_model.items():
            for part, members in enumerate(_parts(list(measurements.values()))):
                runs.append(
                    PlannedRun(
                        folder=_folder(dataset, setting, hops, model, part),
                        dataset=dataset,
                        setting=setting,
                        hops=hops,
                        sample=run_sample,
                        model=model,
                        methods=tuple(m.method for m in members),
                        method_settings={m.method: m.settings for m in members if m.settings},
                        cells=tuple(cell for m in members for cell in m.cells),
                    )
                )
    return Plan(
        recipe=recipe,
        runs=tuple(runs),
        skipped=tuple(skipped),
        sample=recipe.sample if sample == "recipe" else sample,
        seeds=tuple(seeds) if seeds is not None else seeds_for(recipe),
        row_models=chosen,
        row_settings=extra,
    )


def runnable_cells(recipe: Recipe) -> int:
    """Cells whose row and column are not unavailable and whose metric verity computes.

    Whether a dataset is on this machine or a method can be built is only known when the
    recipe runs; `verity reproduce --list` counts cells by this test.
    """
    return sum(
        not _reason(recipe, row.key, column.key, row.metric or column.metric or recipe.metric)
        for column in recipe.columns
        for row in recipe.rows
    )


def published_cells(recipe: Recipe) -> int:
    """Cells with a published figure recorded."""
    return sum(len(row.published) for row in recipe.rows)


def _reason(recipe: Recipe, row_key: str, column_key: str, metric: str) -> str:
    """Why a cell cannot run, known from the recipe alone; empty when it can."""
    column, row = recipe.column(column_key), recipe.row(row_key)
    if column.unavailable:
        return f"column not available here: {column.unavailable}"
    if row.unavailable:
        return f"row not available here: {row.unavailable}"
    if row.runs_in and column_key not in row.runs_in:
        return "not run: the paper ran this row in other columns only"
    problem = metric_problem(metric)
    return f"metric {metric!r} cannot be computed: {problem}" if problem else ""


def _measure_key(method: str, settings: Mapping[str, Any]) -> str:
    """Rows with the same key are one measurement (on the same model)."""
    return json.dumps([method, settings], sort_keys=True, default=str)


@dataclass
class _Measurement:
    """One method with one set of settings on one model, and the cells that read it."""

    method: str
    settings: dict[str, Any]
    cells: list[PlannedCell] = field(default_factory=list)


def _parts(members: list[_Measurement]) -> list[list[_Measurement]]:
    """Measurements split so that no run holds one method name twice, first fit, in order."""
    parts: list[list[_Measurement]] = []
    for member in members:
        for part in parts:
            if all(other.method != member.method for other in part):
                part.append(member)
                break
        else:
            parts.append([member])
    return parts


def _folder(dataset: str, setting: str, hops: int | None, model: str | None, part: int) -> str:
    """A folder name that stays the same whatever other rows or models are asked for.

    Stable names are what make a rerun resume: the harness finds its store there.
    """
    name = _safe(dataset) + (f"-{hops}hop" if hops else "") + f"-{setting}"
    if model is not None:
        digest = hashlib.sha256(model.encode()).hexdigest()[:8]
        name += f"-model-{_safe(model)[:40]}-{digest}"
    if part:
        name += f"-part{part + 1}"
    return name


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or "x"
