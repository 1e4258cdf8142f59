"""A planned run as benchmark configs: its model, its settings, one config per seed.

    config = base_config(planned, plan, Options(out=Path("results/toe-t2")))
    for one in seed_configs(config, plan.seeds):       # OUT/FOLDER/seed-N
        ...
    method_problem(config, split, "nli", build, sources)   # why it cannot run, or ""

A row's own model (``--row-model``) is the model of every role, as ``--model`` is for a
command, and keeps the endpoint options. A row's settings go over the user's
``[methods.*]`` table for its method. Every repeat draws the same sample (the recipe's
first seed) and sets every model's seed to its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verity.bench.base import DatasetSplit
from verity.bench.recipes.plan import Plan, PlannedRun
from verity.bench.runner import BenchConfig, Build, SourcesOf, build_methods, claims_as_articles
from verity.errors import VerityError
from verity.llm.budget import Budget
from verity.llm.prices import Price
from verity.llm.spec import ModelSettings


@dataclass(frozen=True)
class Options:
    """What a reproduction takes from the command line and the settings, not the recipe."""

    out: Path
    model: ModelSettings = field(default_factory=ModelSettings)
    roles: Mapping[str, ModelSettings] = field(default_factory=dict)
    # The user's [methods.*] tables; a row's own settings go over them.
    method_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    sources: tuple[str, ...] = ("offline-wiki",)
    data_dir: Path | None = None
    concurrency: int = 1
    retry_errors: bool = False
    engine: str = "thread"
    address: str | None = None
    # What each example may spend, and the whole reproduction (every run and seed).
    budget: Budget = field(default_factory=Budget)
    run_budget: Budget = field(default_factory=Budget)
    # The settings' [prices] table: a row's own model is priced by its own spec.
    prices: Mapping[str, Price] = field(default_factory=dict)


def base_config(planned: PlannedRun, plan: Plan, options: Options) -> BenchConfig:
    """The run's config before seeds: its model, the rows' settings over the user's."""
    if planned.model is None:
        model, roles = options.model, dict(options.roles)
    else:
        # A model named for a row is the model of every role, as --model is for a command,
        # at its own price (never the default model's).
        model = options.model.model_copy(
            update={"spec": planned.model, "price": options.prices.get(planned.model)}
        )
        roles = {}
    settings = {name: dict(table) for name, table in options.method_settings.items()}
    for name, own in planned.method_settings.items():
        settings[name] = {**settings.get(name, {}), **own}
    return BenchConfig(
        dataset=planned.dataset,
        methods=planned.methods,
        out=options.out / planned.folder,
        setting=planned.setting,
        sample=planned.sample,
        seed=plan.seeds[0],
        hops=planned.hops,
        model=model,
        roles=roles,
        sources=options.sources,
        method_settings=settings,
        concurrency=options.concurrency,
        retry_errors=options.retry_errors,
        data_dir=options.data_dir,
        leakage="paper-faithful",
        engine=options.engine,
        address=options.address,
        budget=options.budget,
    )


def seed_configs(config: BenchConfig, seeds: Sequence[int]) -> list[BenchConfig]:
    """One config per seed, stored in ``seed-N``: the same sample, every model reseeded."""
    return [
        replace(
            config,
            model=config.model.model_copy(update={"seed": seed}),
            roles={r: s.model_copy(update={"seed": seed}) for r, s in config.roles.items()},
            out=config.out / f"seed-{seed}",
        )
        for seed in seeds
    ]


def method_problem(
    config: BenchConfig, split: DatasetSplit, method: str, build: Build, sources: SourcesOf
) -> str:
    """Why ``method`` cannot run in this config, as `prepare` would find; empty if it can.

    Built alone, so that one row's missing checkpoint does not stop the other rows.
    """
    try:
        built = build_methods(
            replace(config, methods=(method,)), split, build=build, sources=sources
        )
    except (VerityError, ImportError) as exc:
        return f"method {method!r} cannot be built here: {_short(exc)}"
    kinds = {type(ex.subject) for ex in split.examples[:1]}
    for made in built.methods.values():
        if not kinds <= set(made.accepts) and not claims_as_articles(made, split):
            kind = next(iter(kinds)).__name__.lower()
            return f"method {method!r} does not check {kind}s ({split.name})"
    return ""


def _short(exc: Exception, limit: int = 240) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
