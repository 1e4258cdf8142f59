"""The ``verity`` command line: a thin layer over the Python API.

verity check "The Eiffel Tower is in Paris."
verity check "..." --model openai:gpt-4o-mini --source wikipedia --json
verity check --input claims.jsonl --output results.jsonl
verity index build docs/ --name mydocs
"""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from verity import render
from verity.errors import BadInputError, VerityError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Automated fact-checking with LLM multi-agent methods.",
)
index_app = typer.Typer(no_args_is_help=True, help="Build indexes of your own documents.")
app.add_typer(index_app, name="index")

out = Console()
err = Console(stderr=True, soft_wrap=True)  # messages name paths: never break them

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="TOML settings file (default ./verity.toml)")
]


def _settings(
    config: Path | None,
    *,
    method: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    sources: list[str] | None = None,
) -> Any:
    from verity.config import load_settings

    overrides: dict[str, Any] = {
        "method": method,
        "sources": sources or None,
        "model": {"spec": model, "base_url": base_url, "api_key_env": api_key_env},
    }
    return load_settings(overrides=overrides, config_file=config)


@app.command()
def check(
    claim: Annotated[str | None, typer.Argument(help="The claim to check.")] = None,
    method: Annotated[str | None, typer.Option(help="Method name (default rag).")] = None,
    model: Annotated[
        str | None, typer.Option(help="local | local:/path/model.gguf | openai:MODEL")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint URL.")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Env var holding the endpoint's key.")
    ] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Evidence source (repeatable).")
    ] = None,
    claim_date: Annotated[
        str | None, typer.Option("--date", help="Claim date YYYY-MM-DD (retrieval cutoff).")
    ] = None,
    speaker: Annotated[str | None, typer.Option(help="Who made the claim.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write the full verdict and trace here.")
    ] = None,
    input_file: Annotated[
        Path | None, typer.Option("--input", help="JSONL of claims to check in a batch.")
    ] = None,
    output_file: Annotated[
        Path | None, typer.Option("--output", help="JSONL results of a batch (appended).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel checks in a batch.")] = 1,
    config: ConfigOpt = None,
) -> None:
    """Check a claim, or a batch of claims with --input and --output."""
    from verity.api import method_from_settings
    from verity.domain import Claim

    settings = _settings(
        config,
        method=method,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        sources=source,
    )
    if input_file is not None or output_file is not None:
        if claim is not None:
            raise BadInputError("give either a claim or --input, not both")
        if input_file is None or output_file is None:
            raise BadInputError("a batch needs both --input and --output")
        _batch(method_from_settings(settings), input_file, output_file, concurrency)
        return
    if claim is None or not claim.strip():
        raise BadInputError("the claim is empty: give a sentence to check")
    subject = Claim(text=claim, date=_parse_date(claim_date), speaker=speaker)
    verdict = method_from_settings(settings).verify(subject)
    record = verdict.to_json_dict()
    if trace is not None:
        trace.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    else:
        render.verdict(out, verdict)


def _parse_date(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise BadInputError(f"--date must be YYYY-MM-DD, not {value!r}") from exc


def _batch(method: Any, input_file: Path, output_file: Path, concurrency: int) -> None:
    from rich.progress import Progress

    from verity.batch import done_keys, read_claims, run_batch

    items, bad = read_claims(input_file)
    for line in bad:
        err.print(f"[yellow]{input_file}:{line.line}: skipped: {line.reason}[/]")
    todo = len(items) - len(done_keys(output_file) & {i.key for i in items})
    with Progress(console=err, transient=False) as progress:
        task = progress.add_task("checking", total=todo)
        failures = run_batch(
            items,
            method.verify,
            output_file,
            concurrency=concurrency,
            on_result=lambda _item, _verdict: progress.advance(task),
        )
    for failure in failures:
        err.print(f"[red]{input_file}:{failure.item.line}: failed: {failure.error}[/]")
    err.print(
        f"{todo - len(failures)} checked, {len(items) - todo} already done, "
        f"{len(failures)} failed, {len(bad)} bad lines -> {output_file}"
    )
    if bad or failures:
        raise typer.Exit(code=2 if bad else 4)


@app.command()
def models(config: ConfigOpt = None) -> None:
    """List model backends and the models configured for each role."""
    render.models(out, _settings(config))


@app.command()
def sources(config: ConfigOpt = None) -> None:
    """List evidence sources, whether each is ready, and the corpora built."""
    render.sources(out, _settings(config))


@index_app.command("build")
def index_build(
    path: Annotated[Path, typer.Argument(help="A JSONL file or a folder of .txt/.md files.")],
    name: Annotated[str, typer.Option("--name", help="Name to use as --source corpus:NAME.")],
) -> None:
    """Index your own documents with BM25 for use as --source corpus:NAME."""
    from verity.sources.corpus import build_corpus

    info = build_corpus(path, name)
    render.corpus_info(out, err, info)


def _exit_code(exc: VerityError) -> int:
    from verity.errors import (
        BudgetExceededError,
        ConfigError,
        ModelOutputError,
        SourceUnavailableError,
    )

    for kind, code in (
        (BadInputError, 2),
        (ConfigError, 3),
        (SourceUnavailableError, 4),
        (ModelOutputError, 5),
        (BudgetExceededError, 6),
    ):
        if isinstance(exc, kind):
            return code
    return 1


def main() -> None:
    """Entry point: run the app; every verity error becomes a message and an exit code."""
    try:
        app()
    except VerityError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(_exit_code(exc))
