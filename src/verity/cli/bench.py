r"""``verity bench``: the command-line face of the benchmark harness.

    verity bench --dataset hover --hops 2 --methods direct,rag,local --setting open \\
        --sample 100 --seed 0 --out results/hover2
    verity bench ... --engine ray --address auto --concurrency 16   # on a Ray cluster
    verity bench ... --grounding on   # also check each explanation against its evidence
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
from verity.errors import BadInputError

if TYPE_CHECKING:
    from verity.bench.base import DatasetSplit
    from verity.bench.results import MethodResult
    from verity.bench.runner import BenchConfig
    from verity.engines import Engine
    from verity.llm.budget import Spend
    from verity.llm.spec import ModelSet, ModelSettings
    from verity.methods.base import Method
    from verity.sources.base import Source


def bench(
    dataset: Annotated[str, typer.Option(help="Dataset name (see docs/datasets.md).")],
    methods: Annotated[str, typer.Option(help="Comma-separated method names.")] = "direct,rag",
    setting: Annotated[str, typer.Option(help="gold | open | closed")] = "open",
    sample: Annotated[int, typer.Option(min=0, help="Examples to sample; 0 = all.")] = 100,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    hops: Annotated[int | None, typer.Option(help="HoVer only: 2, 3 or 4.")] = None,
    out: Annotated[Path, typer.Option(help="Output folder (results, manifest, report).")] = Path(
        "results"
    ),
    model: Annotated[str | None, typer.Option(help="Model spec for every role.")] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    source: SourceOpt = None,
    concurrency: ConcurrencyOpt = 1,
    data_dir: DataDirOpt = None,
    retry_errors: RetryErrorsOpt = False,
    repeats: Annotated[
        int,
        typer.Option(
            min=1, help="Check the same sample this many times, model seed +1 each; median."
        ),
    ] = 1,
    leakage: Annotated[
        str,
        typer.Option(
            help="Datasets made of fact-checks, open setting: both | paper-faithful | guarded."
        ),
    ] = "both",
    gold_guard: Annotated[
        bool,
        typer.Option(
            "--gold-guard/--no-gold-guard",
            help="Check-COVID: keep each claim's own gold abstracts out of arxiv:offline.",
        ),
    ] = True,
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
    grounding: Annotated[
        str,
        typer.Option(
            help="Check each verdict's explanation against what it cites: off | on | strict "
            "(off by default: one more call per example, paid only when asked)."
        ),
    ] = "off",
    estimate: Annotated[
        bool,
        typer.Option("--estimate", help="Print the expected calls, tokens and cost; run nothing."),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run methods on a benchmark sample; a rerun of the same command resumes."""
    # Imported here: the other commands should not pay for numpy and the harness at start-up.
    from verity.bench.runner import BenchConfig
    from verity.config import settings_from_options
    from verity.engines import engine_for

    if setting not in ("gold", "open", "closed"):
        raise BadInputError(f"--setting must be gold, open or closed, not {setting!r}")
    if grounding not in ("off", "on", "strict"):
        raise BadInputError(f"--grounding must be off, on or strict, not {grounding!r}")
    if leakage not in ("both", "paper-faithful", "guarded"):
        raise BadInputError(f"--leakage must be both, paper-faithful or guarded, not {leakage!r}")
    names = tuple(m.strip() for m in methods.split(",") if m.strip())
    if not names:
        raise BadInputError("--methods names no method")
    # Before any data loads: an unknown engine, or Ray missing, costs nothing.
    runner = engine_for(engine, address=address)
    settings = settings_from_options(
        config, model=model, base_url=base_url, api_key_env=api_key_env, sources=source
    )
    budget, run_budget = budgets(
        settings,
        (max_calls, max_tokens, max_seconds, max_cost),
        (run_max_calls, run_max_tokens, run_max_seconds, run_max_cost),
    )
    cfg = BenchConfig(
        dataset=dataset,
        methods=names,
        out=out,
        setting=setting,  # type: ignore[arg-type]  # checked above
        sample=sample or None,
        seed=seed,
        hops=hops,
        model=settings.model,
        roles=settings.roles,
        sources=settings.sources,
        method_settings=settings.methods,
        concurrency=concurrency,
        data_dir=data_dir,
        retry_errors=retry_errors,
        leakage=leakage,  # type: ignore[arg-type]  # checked above
        gold_guard=gold_guard,
        engine=engine,
        address=address,
        budget=budget,
        run_budget=run_budget,
        grounding=grounding,  # type: ignore[arg-type]  # checked above
    )
    if estimate:
        from verity.cli.estimate import print_bench_estimate

        print_bench_estimate(cfg, repeats)
        return
    with runner:  # one cluster for every repeat
        _run_all(cfg, settings.methods, repeats, runner)


def _run_all(
    cfg: BenchConfig, method_settings: Mapping[str, Mapping[str, Any]], repeats: int, engine: Engine
) -> None:
    from contextlib import nullcontext

    from verity.llm.budget import Spend, spending

    # One run budget for every repeat: counted as results arrive, and call by call here.
    tally = Spend(cfg.run_budget, scope="run")
    limited = engine.local and not cfg.run_budget.unlimited
    with spending(cfg.run_budget, scope="run") if limited else nullcontext():
        _run_repeats(cfg, method_settings, repeats, engine, tally)


def _run_repeats(
    cfg: BenchConfig,
    method_settings: Mapping[str, Mapping[str, Any]],
    repeats: int,
    engine: Engine,
    tally: Spend,
) -> None:
    from rich.table import Table

    from verity.render import text

    out, dataset = cfg.out, cfg.dataset
    if repeats == 1:
        _run_once(cfg, method_settings, engine, tally)
        return
    from verity.bench.repeats import repeat_configs, repeat_warning, summarize, write_summary

    warning = repeat_warning(cfg, repeats)
    if warning:
        say("yellow", f"warning: {warning}")
    configs = repeat_configs(cfg, repeats)
    runs = [_run_once(one, method_settings, engine, tally) for one in configs]
    summary = summarize(runs)
    write_summary(out, summary, dataset=dataset, seeds=[one.model.seed or 0 for one in configs])
    table = Table("method", "median", "mean", "sd", "min", "max")
    for name, s in summary.items():
        a = s.accuracy
        table.add_row(
            text(name), f"{a.median:.3f}", f"{a.mean:.3f}", f"{a.stdev:.3f}",
            f"{a.low:.3f}", f"{a.high:.3f}",
        )  # fmt: skip
    output.out.print(table)
    err.print(f"summary: {out / 'repeats.md'}", markup=False, highlight=False)


def _run_once(
    cfg: BenchConfig,
    method_settings: Mapping[str, Mapping[str, Any]],
    engine: Engine,
    tally: Spend | None = None,
) -> dict[str, MethodResult]:
    """Prepare and run one benchmark run with a progress bar; print its table."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Table

    from verity.bench.recipes.lookup import paper_figures_for
    from verity.bench.report import cost_per_example
    from verity.bench.report_positive import positive_f1, positive_title
    from verity.bench.runner import prepare
    from verity.errors import BudgetExceededError
    from verity.render import clean, text

    out, setting = cfg.out, cfg.setting
    names = cfg.methods
    build = MethodBuilder(cfg.model, cfg.roles, method_settings)
    run = prepare(cfg, load=load_split, build=build, sources=partial(open_sources, cfg))
    console = err
    console.print(
        f"run {run.run_id}: {len(run.sample)} examples of {run.split.name}, setting {setting}, "
        f"methods {', '.join(names)} -> {out}",
        markup=False,
        highlight=False,
    )
    standin = run.manifest.get("web_standin")
    if standin:
        excluded = sum(standin["excluded"].values())
        say(
            "yellow",
            f"web stand-in: corpus:{standin['corpus']}, {standin['documents']} undated news "
            f"documents ({excluded} left out as the dataset's own articles); see docs/bench.md",
        )
    with Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[running]}"), TimeElapsedColumn(), console=console,
    ) as bar:  # fmt: skip
        tasks: dict[str, Any] = {}

        def progress(method: str, finished: int, total: int, accuracy: float | None) -> None:
            if method not in tasks:
                tasks[method] = bar.add_task(clean(method), total=total, running="")
            running = "" if accuracy is None else f"accuracy so far {accuracy:.3f}"
            bar.update(tasks[method], completed=finished, running=running)

        stopped: BudgetExceededError | None = None
        try:
            results = run.run(
                progress, warn=lambda line: say("yellow", line), engine=engine,
                paper_figures=paper_figures_for(cfg),  # the paper's column, from the recipes
                tally=tally,
            )  # fmt: skip
        except BudgetExceededError as exc:
            if exc.scope != "run":
                raise
            stopped, results = exc, run.results
        finally:
            run.close()
    # The grounding columns only where some verdict was checked; the checker's calls apart.
    grounded = any(result.grounding is not None for result in results.values())
    # The dataset's own measure where it is one class's F1 (CheckThat!'s check-worthy class).
    positive = run.split.positive
    table = Table(
        "method", "n", "errors", "accuracy", "macro-F1",
        *((positive_title(positive),) if positive is not None else ()),
        "balanced acc.", "calls/claim", "cost",
        *(("grounded", "contradicts label", "grounding calls") if grounded else ()),
    )  # fmt: skip
    for name, result in results.items():
        m, usage = result.metrics, result.usage_per_claim
        table.add_row(
            text(name), str(m.n), str(m.errors), f"{m.accuracy:.3f}", f"{m.macro_f1:.3f}",
            *((_score(positive_f1(m, positive)),) if positive is not None else ()),
            f"{m.balanced_accuracy:.3f}", f"{usage.get('llm_calls', 0):.1f}",
            cost_per_example(usage), *(_grounding_cells(result) if grounded else ()),
        )  # fmt: skip
    output.out.print(table)
    console.print(f"report: {out / 'report.md'}", markup=False, highlight=False)
    if stopped is not None:
        say("red", "the run's budget is spent: rerun the same command to go on")
        raise stopped
    return results


def _score(value: float | None) -> str:
    """A score on the 0-1 scale as the terminal table shows it; "-" where there is none."""
    return "-" if value is None else f"{value:.3f}"


def _grounding_cells(result: MethodResult) -> tuple[str, str, str]:
    """Grounded share, share contradicting the label, checker calls per checked verdict."""
    score = result.grounding
    if score is None:
        return ("-", "-", "-")
    return (
        f"{score.grounded:.3f}" if score.grounded is not None else "-",
        f"{score.contradicts_label:.3f}" if score.contradicts_label is not None else "-",
        f"{score.usage_per_verdict.get('llm_calls', 0):.1f}",
    )


class MethodBuilder:
    """Builds a run's methods on one model set, made on first use in each process.

    Picklable (the model set stays behind), so that a Ray worker builds the same methods
    with models of its own (`--engine ray`).
    """

    def __init__(
        self,
        model: ModelSettings,
        roles: Mapping[str, ModelSettings],
        method_settings: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.model, self.roles, self.method_settings = model, dict(roles), method_settings
        self._models: ModelSet | None = None

    def __call__(self, name: str, given: Sequence[Source]) -> Method:
        """The method ``name`` with these sources."""
        from verity.llm.spec import ModelSet
        from verity.methods.base import load_method, settings_for

        if self._models is None:
            self._models = ModelSet.from_settings(self.model, self.roles)
        return load_method(
            name, models=self._models, sources=given, **settings_for(name, self.method_settings)
        )

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_models": None}


def load_split(name: str, *, data_dir: Path | None, hops: int | None) -> DatasetSplit:
    """A dataset by name, loaded when a run asks for it (bench and reproduce)."""
    from verity.bench.datasets import load_dataset

    return load_dataset(name, data_dir=data_dir, hops=hops)


def open_sources(cfg: BenchConfig, split: DatasetSplit) -> list[Source]:
    """The open-book sources: the configured ones, plus the dataset's own corpus.

    An offline stand-in (``arxiv:offline``, ``factcheck:offline``, ``news-offline``) is
    built from the data folder first if it is not built yet.
    """
    from verity.api import shared_source
    from verity.bench.datasets import data_dir
    from verity.bench.standins import ensure_standin
    from verity.sources.corpus import CorpusSource, build_corpus, list_corpora
    from verity.sources.registry import STANDINS

    for spec in cfg.sources:
        if spec in STANDINS:
            # The stand-ins come from the same data folder: built on first use.
            ensure_standin(STANDINS[spec][1], data_dir(cfg.data_dir))
    found: list[Source] = [shared_source(spec) for spec in cfg.sources]
    if split.corpus is not None:
        name = f"bench-{split.name}"
        if name not in {c.name for c in list_corpora()}:
            build_corpus(split.corpus, name)
        found.append(CorpusSource(name))
    return found
