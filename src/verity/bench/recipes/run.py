"""`verity reproduce`'s engine: a recipe's runs through the bench harness, then its table.

    recipe = find_recipe("toe-t2")                  # an id, or a path to a .toml file
    plan = plan_recipe(recipe, sample=5, seeds=seeds_for(recipe, 1))
    result = reproduce(plan, options, harness)      # runs, measures, writes the report
    result.cell("z-cot.deepseek-v3.2", "liar").measured    # or .reason

Each planned run is a `BenchConfig` per seed (`verity.bench.recipes.configs`), stored in
``OUT/FOLDER/seed-N``: the same harness, store and report as ``verity bench``, so a rerun
resumes where it stopped and makes no model call for an example already stored. The
sample is drawn with the first seed and kept for every repeat; each repeat reseeds the
model (ToE's protocol, `verity.bench.repeats`).

What cannot run is found before anything runs, and each affected cell is reported with
its reason instead of stopping the rest: a dataset that does not load here, the gold
setting on a dataset without gold evidence, a method that cannot be built (a missing
checkpoint: the row's ``needs`` says what to give it) or that does not check this kind of
input. On the datasets made of fact-checks, retrieving methods run unguarded
(``paper-faithful``, `verity.bench.leakage`), as the papers ran them.

A table that can measure nothing is not a result: `check_runnable` refuses it before any
model loads (no data folder for datasets that need one, or no runnable cell at all).
``Options.budget`` bounds each example's check; ``Options.run_budget`` the whole
reproduction, every run and seed together. Once that is spent, the runs stop, the table is
written with what was measured (the cells not reached say so), and `reproduce` raises the
`BudgetExceededError`: a rerun goes on where it stopped.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verity.bench.base import DatasetSplit
from verity.bench.datasets import data_dir, load_dataset, packaged
from verity.bench.recipes.configs import Options, base_config, method_problem, seed_configs
from verity.bench.recipes.lookup import paper_figures_for
from verity.bench.recipes.measure import Figure, Unmeasured, combine, measure
from verity.bench.recipes.plan import Plan, PlannedRun
from verity.bench.recipes.schema import Recipe, load_recipe, recipe_names
from verity.bench.recipes.table import CellResult, Reproduction, write_table
from verity.bench.repeats import repeat_warning
from verity.bench.runner import (
    BenchConfig,
    BenchRun,
    Build,
    Progress,
    SourcesOf,
    Warn,
    prepare,
)
from verity.domain import Usage
from verity.engines import Engine
from verity.errors import (
    BudgetExceededError,
    ConfigError,
    DatasetError,
    UnknownNameError,
    VerityError,
)
from verity.llm.budget import Spend, spending
from verity.llm.spec import ModelSettings

# A recipe is a few hundred lines of TOML; anything this large is the wrong file.
MAX_RECIPE_BYTES = 1 << 20

Builder = Callable[
    [ModelSettings, Mapping[str, ModelSettings], Mapping[str, Mapping[str, Any]]], Build
]


@dataclass(frozen=True)
class Harness:
    """How runs load data, build methods and find sources: the bench command's, or a test's.

    ``builder(model, roles, method_settings)`` gives the `Build` of one run;
    ``sources(config)`` the open-book sources of a run (`verity.bench.runner.prepare`).
    """

    load: Callable[..., DatasetSplit]
    builder: Builder
    sources: Callable[[BenchConfig], SourcesOf]


Announce = Callable[[PlannedRun, BenchRun], None]


def find_recipe(name: str) -> Recipe:
    """A shipped recipe by id, or a recipe file by path (a name ending in ``.toml``).

    An unknown id is an `UnknownNameError` naming the shipped ones; a file that cannot be
    read or is not a valid recipe is a `ConfigError`.
    """
    if not name.endswith(".toml"):
        return load_recipe(name)
    path = Path(name).expanduser()
    if not path.is_file():
        raise UnknownNameError("recipe", name, recipe_names())
    try:
        with path.open("rb") as handle:
            blob = handle.read(MAX_RECIPE_BYTES + 1)
        if len(blob) > MAX_RECIPE_BYTES:
            raise ConfigError(f"recipe file {path} is larger than {MAX_RECIPE_BYTES:,} bytes")
        return Recipe.model_validate(tomllib.loads(blob.decode("utf-8")))
    except OSError as exc:
        raise ConfigError(f"cannot read recipe file {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"recipe file {path} is malformed: {exc}") from exc


def check_runnable(plan: Plan, folder: Path | None) -> None:
    """`DatasetError` (bad input) when the table can measure nothing here.

    The data folder must exist when any of the recipe's datasets is read from it, and at
    least one planned run must have a dataset that loads (with gold evidence when its
    setting is gold). Read before any model loads; a dataset takes a fraction of a second.
    """
    if not plan.runs:
        reasons = sorted({s.reason for s in plan.skipped})
        raise DatasetError(
            f"{plan.recipe.id}: none of its cells can run here ({'; '.join(reasons)[:600]})"
        )
    if any(not packaged(p.dataset) for p in plan.runs):
        data_dir(folder)  # DatasetError naming the folder it looked for
    problems: list[str] = []
    for planned in plan.runs:
        try:
            split = load_dataset(planned.dataset, data_dir=folder, hops=planned.hops)
        except VerityError as exc:
            problems.append(f"{planned.dataset}: {exc}")
            continue
        if planned.setting != "gold" or split.has_gold:
            return
        problems.append(f"{planned.dataset} carries no gold evidence")
    raise DatasetError(
        f"{plan.recipe.id}: none of its cells can run here: {'; '.join(problems)[:600]}"
    )


def reproduce(
    plan: Plan,
    options: Options,
    harness: Harness,
    *,
    engine: Engine | None = None,
    progress: Progress | None = None,
    warn: Warn | None = None,
    announce: Announce | None = None,
) -> Reproduction:
    """Run every planned run (resuming stored ones), measure each cell, write the report.

    ``engine`` is an engine already entered, shared by every run; ``warn`` gets each
    line a run or method warns about; ``announce`` is called as each run starts.
    """
    say = warn or (lambda _line: None)
    outcomes: dict[tuple[str, str], CellResult] = {
        (s.row, s.column): CellResult(s.row, s.column, reason=s.reason) for s in plan.skipped
    }
    warnings: list[str] = []
    runs: dict[str, dict[str, Any]] = {}
    loader = _Loader(harness.load)
    # The whole reproduction's budget: counted as results arrive, and in this process
    # also call by call (every run's examples then stop on time).
    tally = Spend(options.run_budget, scope="run")
    local = engine is None or engine.local
    stopped: BudgetExceededError | None = None
    if plan.runs:
        # Said once: every run's models share the temperatures of the options.
        first = seed_configs(base_config(plan.runs[0], plan, options), plan.seeds)
        warning = repeat_warning(first[0], len(first))
        if warning:
            warnings.append(warning)
            say(f"warning: {warning}")
    with spending(options.run_budget if local else None, scope="run"):
        for planned in plan.runs:
            if stopped is not None:
                for cell in planned.cells:
                    reason = f"not run: the reproduction's budget was spent ({stopped})"
                    outcomes[(cell.row, cell.column)] = CellResult(
                        cell.row, cell.column, reason=reason
                    )
                continue
            try:
                figures, info = _one_run(
                    planned, plan, options, harness, loader, engine, progress, say, announce,
                    tally,
                )  # fmt: skip
            except _Stopped as halt:
                stopped, figures, info = halt.error, halt.found, halt.info
            runs[planned.folder] = info
            for cell in planned.cells:
                outcomes[(cell.row, cell.column)] = _outcome(
                    cell.row, cell.column, figures.get((cell.row, cell.column), []), plan, planned
                )
    result = Reproduction(
        recipe=plan.recipe,
        cells=outcomes,
        model=options.model.spec,
        roles={role: settings.spec for role, settings in options.roles.items()},
        row_models=dict(plan.row_models),
        row_settings={k: dict(v) for k, v in plan.row_settings.items()},
        sample=plan.sample,
        seeds=plan.seeds,
        sources=options.sources,
        runs=runs,
        warnings=tuple(warnings),
    )
    write_table(options.out, result)
    if stopped is not None:
        raise stopped  # after the table: what was measured is written
    return result


class _Stopped(Exception):
    """The reproduction's budget ran out in a run: what that run had found so far."""

    def __init__(self, error: BudgetExceededError, found: Found, info: dict[str, Any]) -> None:
        super().__init__(str(error))
        self.error, self.found, self.info = error, found, info


class _Loader:
    """Loads each (dataset, hops) once for every run and seed; remembers a failure too."""

    def __init__(self, load: Callable[..., DatasetSplit]) -> None:
        self._load = load
        self._done: dict[tuple[str, int | None], DatasetSplit | VerityError] = {}

    def __call__(self, name: str, *, data_dir: Path | None, hops: int | None) -> DatasetSplit:
        key = (name, hops)
        if key not in self._done:
            try:
                self._done[key] = self._load(name, data_dir=data_dir, hops=hops)
            except VerityError as exc:
                self._done[key] = exc
        found = self._done[key]
        if isinstance(found, VerityError):
            raise found
        return found


Found = dict[tuple[str, str], list[Figure | Unmeasured]]


def _one_run(
    planned: PlannedRun,
    plan: Plan,
    options: Options,
    harness: Harness,
    loader: _Loader,
    engine: Engine | None,
    progress: Progress | None,
    say: Warn,
    announce: Announce | None,
    tally: Spend | None = None,
) -> tuple[Found, dict[str, Any]]:
    """The figures of one planned run over its seeds, and what to record about it."""
    found: Found = {}
    info: dict[str, Any] = {
        "dataset": planned.dataset,
        "setting": planned.setting,
        "hops": planned.hops,
        "sample": planned.sample,
        "model": planned.model or options.model.spec,
        "methods": list(planned.methods),
        "run_ids": {},
    }

    def fail(methods: Sequence[str], reason: str, *, needs: bool = False) -> None:
        for method in methods:
            for cell in planned.cells_of(method):
                # What the row says it needs, when what failed is the method itself.
                # First, where a long error message cannot push it out of sight.
                wants = plan.recipe.row(cell.row).needs if needs else ""
                said = f"needs {wants}; {reason}" if wants else reason
                found.setdefault((cell.row, cell.column), []).append(Unmeasured(said))

    base = base_config(planned, plan, options)
    try:
        split = loader(planned.dataset, data_dir=options.data_dir, hops=planned.hops)
    except VerityError as exc:
        fail(planned.methods, f"dataset {planned.dataset!r} cannot be loaded here: {exc}")
        return found, info
    if planned.setting == "gold" and not split.has_gold:
        fail(planned.methods, f"dataset {planned.dataset!r} carries no gold evidence")
        return found, info
    build = harness.builder(base.model, base.roles, base.method_settings)
    usable = []
    for method in planned.methods:
        problem = method_problem(base, split, method, build, harness.sources(base))
        if problem:
            fail([method], problem, needs=True)
        else:
            usable.append(method)
    info["methods_run"] = usable
    if not usable:
        return found, info
    for config in seed_configs(replace(base, methods=tuple(usable)), plan.seeds):
        try:
            run = prepare(
                config,
                load=loader,
                build=harness.builder(config.model, config.roles, config.method_settings),
                sources=harness.sources(config),
            )
        except VerityError as exc:
            fail(usable, f"the run could not start: {exc}")
            break
        try:
            if announce is not None:
                announce(planned, run)
            # Each run's own report shows this table's figures beside its methods.
            figures = paper_figures_for(config, recipes=[plan.recipe])
            run.run(progress, warn=say, engine=engine, paper_figures=figures, tally=tally)
            info["run_ids"][config.out.name] = run.run_id
            _measure_run(run, planned, usable, found, plan.recipe)
        except BudgetExceededError as exc:
            _add_usage(info, run)
            if exc.scope != "run":  # not the reproduction's: this run's cells only
                fail(usable, f"the run stopped: {exc}")
                continue
            info["run_ids"][config.out.name] = run.run_id
            fail(usable, f"stopped: the reproduction's budget was spent ({exc})")
            raise _Stopped(exc, found, info) from exc
        except VerityError as exc:
            fail(usable, f"the run stopped: {exc}")
            _add_usage(info, run)
        else:
            _add_usage(info, run)
        finally:
            run.close()
    return found, info


def _add_usage(info: dict[str, Any], run: BenchRun) -> None:
    """Add what a run's stored examples cost to its planned run's record (every seed)."""
    earlier = Usage(**info.get("usage", {}))
    info["usage"] = (earlier + run.spent()).model_dump(mode="json")


def _measure_run(
    run: BenchRun, planned: PlannedRun, methods: Sequence[str], found: Found, recipe: Recipe
) -> None:
    """Each cell's figure from the stored results of this run (one seed).

    A method that was built but failed on every example (a checkpoint that loads only on
    first use) gets the row's ``needs`` before its reason, as one that could not be built.
    """
    ids = {ex.id for ex in run.sample}
    meta = {ex.id: ex.meta for ex in run.sample}
    for method in methods:
        # Retrieving methods on fact-check datasets are reported as "NAME [paper-faithful]".
        names = [name for name, origin in run.origins.items() if origin == method] or [method]
        rows = [r for r in run.store.rows(run.run_id, names[0]) if r.example_id in ids]
        for cell in planned.cells_of(method):
            figure = measure(
                cell.metric, rows, run.split.labels, group=cell.group, meta=meta,
                seed=run.config.seed,
            )  # fmt: skip
            wants = recipe.row(cell.row).needs
            if isinstance(figure, Unmeasured) and wants and figure.reason.startswith("every"):
                figure = Unmeasured(f"needs {wants}; {figure.reason}")
            found.setdefault((cell.row, cell.column), []).append(figure)


def _outcome(
    row: str, column: str, got: Sequence[Figure | Unmeasured], plan: Plan, planned: PlannedRun
) -> CellResult:
    figures = [f for f in got if isinstance(f, Figure)]
    if figures:
        return CellResult(row, column, combine(figures, plan.recipe.aggregate), run=planned.folder)
    reasons = list(dict.fromkeys(f.reason for f in got if isinstance(f, Unmeasured)))
    return CellResult(row, column, reason="; ".join(reasons) or "no result", run=planned.folder)
