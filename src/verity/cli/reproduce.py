r"""``verity reproduce``: rerun one of the papers' tables and set it beside the paper's figures.

    verity reproduce --list
    verity reproduce toe-t2 --model openai:gpt-4o-mini --sample 50 --repeats 10
    verity reproduce zofia-t1 --model openai:m --base-url http://localhost:8080/v1 \\
        --row-model gpt4o=openai:gpt-4o --out results/zofia-t1
    verity reproduce local-t1 --row-setting roberta-nli:checkpoint=/models/roberta-nli
    verity reproduce my-table.toml --sample 5        # a recipe file of your own

A rerun of the same command resumes: every run is stored as ``verity bench`` stores it,
under the output folder. The report is ``OUT/reproduce.md`` (and ``reproduce.json``);
docs/reproduce.md says how each cell is measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from verity.cli import output
from verity.cli.output import (
    AddressOpt,
    ApiKeyEnvOpt,
    BaseUrlOpt,
    ConcurrencyOpt,
    ConfigOpt,
    DataDirOpt,
    EngineOpt,
    MaxCallsOpt,
    MaxCostOpt,
    MaxSecondsOpt,
    MaxTokensOpt,
    RetryErrorsOpt,
    RunCallsOpt,
    RunCostOpt,
    RunSecondsOpt,
    RunTokensOpt,
    SourceOpt,
    budgets,
    err,
    say,
)

if TYPE_CHECKING:
    from verity.bench.recipes.plan import PlannedRun
    from verity.bench.recipes.table import Reproduction
    from verity.bench.runner import BenchRun


def reproduce(
    recipe: Annotated[
        str | None, typer.Argument(help="Recipe id (see --list), or a recipe .toml file.")
    ] = None,
    list_recipes: Annotated[
        bool, typer.Option("--list", help="List the recipes and their cells, then stop.")
    ] = False,
    model: Annotated[str | None, typer.Option(help="Model spec for every row.")] = None,
    row_model: Annotated[
        list[str] | None,
        typer.Option("--row-model", help="ROW=SPEC: run one row on another model (repeatable)."),
    ] = None,
    row_setting: Annotated[
        list[str] | None,
        typer.Option(
            "--row-setting",
            help="ROW:KEY=VALUE: a setting of one row's method, e.g. a checkpoint (repeatable).",
        ),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(min=0, help="Examples per run; 0 = all. Default: the recipe's."),
    ] = None,
    repeats: Annotated[
        int | None,
        typer.Option(min=1, help="Repeats (model seeds) per run. Default: the recipe's."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder. Default: results/RECIPE.")
    ] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    source: SourceOpt = None,
    concurrency: ConcurrencyOpt = 1,
    data_dir: DataDirOpt = None,
    retry_errors: RetryErrorsOpt = False,
    engine: EngineOpt = "thread",
    address: AddressOpt = None,
    max_calls: MaxCallsOpt = None,
    max_tokens: MaxTokensOpt = None,
    max_seconds: MaxSecondsOpt = None,
    max_cost: MaxCostOpt = None,
    run_max_calls: RunCallsOpt = None,
    run_max_tokens: RunTokensOpt = None,
    run_max_seconds: RunSecondsOpt = None,
    run_max_cost: RunCostOpt = None,
    estimate: Annotated[
        bool,
        typer.Option("--estimate", help="Print the expected calls, tokens and cost; run nothing."),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run a paper's table through the bench harness; report measured vs published."""
    # Imported here: `verity --help` must not load the harness, numpy or the recipes.
    from functools import partial

    from verity.bench.recipes.configs import Options
    from verity.bench.recipes.plan import plan_recipe, seeds_for, sources_for
    from verity.bench.recipes.run import Harness, check_runnable, find_recipe
    from verity.bench.recipes.run import reproduce as run_recipe
    from verity.cli.bench import MethodBuilder, load_split, open_sources
    from verity.config import settings_from_options
    from verity.engines import engine_for
    from verity.errors import BadInputError, BudgetExceededError
    from verity.llm.spec import parse_spec

    if list_recipes:
        _list()
        return
    if recipe is None:
        raise BadInputError("name a recipe (verity reproduce --list shows them)")
    chosen = find_recipe(recipe)
    row_models = _row_models(row_model or [])
    row_settings = _row_settings(row_setting or [])
    for spec in row_models.values():
        parse_spec(spec)  # a misspelt backend fails now, not after an hour of other runs
    settings = settings_from_options(
        config, model=model, base_url=base_url, api_key_env=api_key_env, sources=source
    )
    parse_spec(settings.model.spec)
    budget, run_budget = budgets(
        settings,
        (max_calls, max_tokens, max_seconds, max_cost),
        (run_max_calls, run_max_tokens, run_max_seconds, run_max_cost),
    )
    plan = plan_recipe(
        chosen,
        row_models=row_models,
        row_settings=row_settings,
        sample="recipe" if sample is None else (sample or None),
        seeds=seeds_for(chosen, repeats),
    )
    options = Options(
        out=out or Path("results") / chosen.id,
        model=settings.model,
        roles=settings.roles,
        method_settings=settings.methods,
        sources=sources_for(chosen, source or [], settings.sources),
        data_dir=data_dir,
        concurrency=concurrency,
        retry_errors=retry_errors,
        engine=engine,
        address=address,
        budget=budget,
        run_budget=run_budget,
        prices=settings.prices,
    )
    # A table that can measure nothing (no data folder, every cell unrunnable) is an
    # error now, before any model loads or any engine starts.
    check_runnable(plan, options.data_dir)
    if estimate:
        from verity.cli.estimate import print_reproduce_estimate

        print_reproduce_estimate(plan, options)
        return
    # Before any data loads: an unknown engine, or Ray missing, costs nothing.
    runner = engine_for(engine, address=address)
    harness = Harness(
        load=load_split, builder=MethodBuilder, sources=lambda c: partial(open_sources, c)
    )
    err.print(
        f"{chosen.id}: {len(plan.runs)} runs x {len(plan.seeds)} seeds, "
        f"{len(plan.skipped)} cells not runnable here -> {options.out}",
        markup=False,
        highlight=False,
    )
    with runner:  # one cluster for every run
        try:
            result = run_recipe(
                plan, options, harness, engine=runner, progress=_progress,
                warn=lambda line: say("yellow", line), announce=_announce,
            )  # fmt: skip
        except BudgetExceededError as exc:
            if exc.scope == "run":
                report = options.out / "reproduce.md"
                say("red", f"the budget is spent: what was measured is in {report}")
                say("red", "run the same command with a larger budget to go on")
            raise
    _show(result)
    _say_cost(result)
    err.print(f"report: {options.out / 'reproduce.md'}", markup=False, highlight=False)


def _say_cost(result: Reproduction) -> None:
    from verity.bench.recipes.table import spent
    from verity.llm.prices import cost_phrase

    used = spent(result)
    say(
        "default",
        f"this table: {used.llm_calls:,} model calls, {used.prompt_tokens:,} + "
        f"{used.completion_tokens:,} tokens, {cost_phrase(used)}",
    )


def _row_models(given: list[str]) -> dict[str, str]:
    from verity.errors import BadInputError

    found: dict[str, str] = {}
    for item in given:
        row, sep, spec = item.partition("=")
        if not sep or not row.strip() or not spec.strip():
            raise BadInputError(f"--row-model takes ROW=SPEC, not {item!r}")
        found[row.strip()] = spec.strip()
    return found


def _row_settings(given: list[str]) -> dict[str, dict[str, object]]:
    """``ROW:KEY=VALUE`` items by row; a VALUE that reads as TOML (5, true) is that value."""
    import tomllib

    from verity.errors import BadInputError

    found: dict[str, dict[str, object]] = {}
    for item in given:
        row, colon, rest = item.partition(":")
        key, equals, value = rest.partition("=")
        if not colon or not equals or not row.strip() or not key.strip():
            raise BadInputError(f"--row-setting takes ROW:KEY=VALUE, not {item!r}")
        try:
            parsed: object = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            parsed = value
        found.setdefault(row.strip(), {})[key.strip()] = parsed
    return found


def _list() -> None:
    from rich.table import Table

    from verity.bench.recipes.plan import published_cells, runnable_cells
    from verity.bench.recipes.schema import load_recipe, recipe_names
    from verity.render import text

    names = recipe_names()
    if not names:
        say("yellow", "no recipe is shipped with this install")
        return
    table = Table("id", "paper", "cells", "runnable", "published", "title")
    for name in names:
        recipe = load_recipe(name)
        table.add_row(
            text(recipe.id), text(f"{recipe.paper}, {recipe.where}"),
            str(len(recipe.rows) * len(recipe.columns)), str(runnable_cells(recipe)),
            str(published_cells(recipe)), text(recipe.title),
        )  # fmt: skip
    output.out.print(table)


def _announce(planned: PlannedRun, run: BenchRun) -> None:
    from verity.render import clean

    err.print(
        f"run {clean(planned.folder)}/{run.config.out.name} ({run.run_id}): "
        f"{len(run.sample)} examples of {clean(run.split.name)}, setting {run.config.setting}, "
        f"methods {clean(', '.join(run.methods))}",
        markup=False,
        highlight=False,
    )


def _progress(method: str, finished: int, total: int, accuracy: float | None) -> None:
    from verity.render import clean

    # One line per method when it is done: a reproduction has dozens of runs to follow.
    if finished == total:
        done = "stored before" if accuracy is None else f"accuracy {accuracy:.3f}"
        err.print(f"  {clean(method)}: {finished}/{total}, {done}", markup=False, highlight=False)


def _show(result: Reproduction) -> None:
    from rich.table import Column, Table

    from verity.bench.recipes.table import cell_text
    from verity.render import text

    recipe = result.recipe
    heads = [Column(header=text(c.label)) for c in recipe.columns]
    table = Table("row", *heads, title=text(recipe.title))
    for row in recipe.rows:
        cells = [
            cell_text(result.cell(row.key, c.key).measured, row.published.get(c.key), recipe)
            for c in recipe.columns
        ]
        table.add_row(text(row.label), *(text(c) for c in cells))
    output.out.print(table)
    missing = sum(cell.measured is None for cell in result.cells.values())
    if missing:
        say("yellow", f"{missing} cells not run here: see 'Cells not run here' in the report")
