r"""``verity bench``: the command-line face of the benchmark harness.

    verity bench --dataset hover --hops 2 --methods direct,rag,local --setting open \\
        --sample 100 --seed 0 --out results/hover2
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from verity.cli import output
from verity.cli.output import ConfigOpt, err, say
from verity.errors import BadInputError

if TYPE_CHECKING:
    from verity.bench.base import DatasetSplit
    from verity.bench.runner import BenchConfig
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
    base_url: Annotated[str | None, typer.Option("--base-url")] = None,
    api_key_env: Annotated[str | None, typer.Option("--api-key-env")] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Evidence source for open (repeatable).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Examples checked at once.")] = 1,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Benchmark data folder.")
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", help="Run failed examples again.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Run methods on a benchmark sample; a rerun of the same command resumes."""
    # Imported here: the other commands should not pay for numpy and the harness at start-up.
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Table

    from verity.bench.runner import BenchConfig, prepare
    from verity.config import settings_from_options
    from verity.llm.spec import ModelSet
    from verity.methods.base import load_method, settings_for
    from verity.render import clean, text

    if setting not in ("gold", "open", "closed"):
        raise BadInputError(f"--setting must be gold, open or closed, not {setting!r}")
    names = tuple(m.strip() for m in methods.split(",") if m.strip())
    if not names:
        raise BadInputError("--methods names no method")
    settings = settings_from_options(
        config, model=model, base_url=base_url, api_key_env=api_key_env, sources=source
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
    )
    models = ModelSet.from_settings(settings.model, settings.roles)

    def build(name: str, given: Sequence[Source]) -> Method:
        return load_method(
            name, models=models, sources=given, **settings_for(name, settings.methods)
        )

    run = prepare(cfg, load=_load, build=build, sources=lambda split: _sources(cfg, split))
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

        try:
            results = run.run(progress, warn=lambda line: say("yellow", line))
        finally:
            run.close()
    table = Table("method", "n", "errors", "accuracy", "macro-F1", "balanced acc.", "calls/claim")
    for name, result in results.items():
        m = result.metrics
        table.add_row(
            text(name), str(m.n), str(m.errors), f"{m.accuracy:.3f}", f"{m.macro_f1:.3f}",
            f"{m.balanced_accuracy:.3f}", f"{result.usage_per_claim.get('llm_calls', 0):.1f}",
        )  # fmt: skip
    output.out.print(table)
    console.print(f"report: {out / 'report.md'}", markup=False, highlight=False)


def _load(name: str, *, data_dir: Path | None, hops: int | None) -> DatasetSplit:
    from verity.bench.datasets import load_dataset

    return load_dataset(name, data_dir=data_dir, hops=hops)


def _sources(cfg: BenchConfig, split: DatasetSplit) -> list[Source]:
    """The open-book sources: the configured ones, plus the dataset's own corpus."""
    from verity.api import shared_source
    from verity.sources.corpus import CorpusSource, build_corpus, list_corpora

    found: list[Source] = [shared_source(spec) for spec in cfg.sources]
    if split.corpus is not None:
        name = f"bench-{split.name}"
        if name not in {c.name for c in list_corpora()}:
            build_corpus(split.corpus, name)
        found.append(CorpusSource(name))
    return found
