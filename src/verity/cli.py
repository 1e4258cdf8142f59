"""The ``verity`` command line: a thin layer over the Python API.

verity check "The Eiffel Tower is in Paris."
verity check "..." --model openai:gpt-4o-mini --source wikipedia --json
verity check --article news.json            # or a .txt file, or - for stdin
verity check --input claims.jsonl --output results.jsonl
verity index build docs/ --name mydocs
verity kg load graph.nt.gz --name mygraph   # then: kg-local:mygraph
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from verity import render
from verity.bench.command import bench as bench_command
from verity.errors import BadInputError, VerityError
from verity.methods.wkgfc.command import optimize_command

if TYPE_CHECKING:
    from verity.batch import BatchItem
    from verity.domain import Article, Claim, Verdict

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Automated fact-checking with LLM multi-agent methods.",
)
index_app = typer.Typer(no_args_is_help=True, help="Build indexes of your own documents.")
app.add_typer(index_app, name="index")
kg_app = typer.Typer(
    no_args_is_help=True, help="Load and inspect offline knowledge graphs (Wikidata vocabulary)."
)
app.add_typer(kg_app, name="kg")
app.command("bench")(bench_command)
app.command("optimize")(optimize_command)

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
    settings = load_settings(overrides=overrides, config_file=config)
    if model is not None:
        # A model named on the command line is the model: it replaces per-role models too.
        settings = settings.model_copy(update={"roles": {}})
    return settings


@app.command()
def check(
    claim: Annotated[str | None, typer.Argument(help="The claim to check.")] = None,
    article: Annotated[
        Path | None,
        typer.Option("--article", help="A news article: a text or JSON file, or - for stdin."),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(help="Method name (default rag for a claim, zofia for an article)."),
    ] = None,
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
        str | None,
        typer.Option("--date", help="Claim or article date YYYY-MM-DD (retrieval cutoff)."),
    ] = None,
    speaker: Annotated[str | None, typer.Option(help="Who made the claim.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write the full verdict and trace here.")
    ] = None,
    input_file: Annotated[
        Path | None, typer.Option("--input", help="JSONL of claims or articles to check.")
    ] = None,
    output_file: Annotated[
        Path | None, typer.Option("--output", help="JSONL results of a batch (appended).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Parallel checks in a batch.")] = 1,
    config: ConfigOpt = None,
) -> None:
    """Check a claim, an article with --article, or a batch with --input and --output."""
    from verity.api import method_from_settings

    settings = _settings(
        config,
        method=method,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        sources=source,
    )
    _one_input(claim, article, input_file)
    if input_file is not None or output_file is not None:
        inputs, outputs = _batch_paths(input_file, output_file, as_json, trace, claim_date, speaker)
        _batch(settings, inputs, outputs, concurrency)
        return
    subject = _subject(claim, article, claim_date, speaker)
    if trace is not None and not trace.parent.is_dir():
        raise BadInputError(f"--trace {trace}: folder {trace.parent} does not exist")
    verdict = method_from_settings(settings, type(subject)).verify(subject)
    record = verdict.to_json_dict()
    # The verdict is shown first, so a trace file that cannot be written loses nothing.
    if as_json:
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        render.verdict(out, verdict)
    if trace is not None:
        try:
            trace.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
        except OSError as exc:
            raise BadInputError(f"cannot write --trace {trace}: {exc.strerror or exc}") from exc


def _one_input(claim: str | None, article: Path | None, input_file: Path | None) -> None:
    given = [
        name
        for name, value in (("a claim", claim), ("--article", article), ("--input", input_file))
        if value is not None
    ]
    if len(given) > 1:
        raise BadInputError(f"give either {given[0]} or {given[1]}, not both")


def _subject(
    claim: str | None, article: Path | None, claim_date: str | None, speaker: str | None
) -> Claim | Article:
    from verity.domain import Claim

    when = _parse_date(claim_date)
    if article is not None:
        if speaker is not None:
            raise BadInputError("--speaker is for a claim; an article has no speaker")
        found = _read_article(article)
        # --date is the retrieval cutoff the user asks for: it wins over the file's date.
        return found if when is None else found.model_copy(update={"date": when})
    if claim is None or not claim.strip():
        raise BadInputError("the claim is empty: give a sentence to check, or --article FILE")
    return Claim(text=claim, date=when, speaker=speaker)


def _read_article(path: Path) -> Article:
    from verity.inputs import parse_article, read_article

    if str(path) != "-":
        return read_article(path)
    try:
        content = sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read the article from stdin: {exc}") from exc
    return parse_article(content, "<stdin>")


def _batch_paths(
    input_file: Path | None,
    output_file: Path | None,
    as_json: bool,
    trace: Path | None,
    claim_date: str | None,
    speaker: str | None,
) -> tuple[Path, Path]:
    if input_file is None or output_file is None:
        raise BadInputError("a batch needs both --input and --output")
    ignored = [
        name
        for name, value in (
            ("--json", as_json),
            ("--trace", trace),
            ("--date", claim_date),
            ("--speaker", speaker),
        )
        if value
    ]
    if ignored:
        raise BadInputError(
            f"{', '.join(ignored)} apply to one claim or article; in a batch, each output line "
            "is the --json object with its trace, and date and speaker come from the input lines"
        )
    return input_file, output_file


def _parse_date(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise BadInputError(f"--date must be YYYY-MM-DD, not {value!r}") from exc


def _batch(settings: Any, input_file: Path, output_file: Path, concurrency: int) -> None:
    from rich.progress import Progress

    from verity.batch import done_keys, read_items, run_batch
    from verity.domain import Usage

    items, bad = read_items(input_file)
    verify = _verifier(settings, items, input_file)
    for line in bad:
        err.print(f"[yellow]{input_file}:{line.line}: skipped: {line.reason}[/]")
    todo = len(items) - len(done_keys(output_file) & {i.key for i in items})
    usage = [Usage()]
    lock = threading.Lock()  # results arrive from worker threads

    def finished(_item: object, verdict: Verdict | None) -> None:
        with lock:
            progress.advance(task)
            if verdict is not None:
                usage[0] = usage[0] + verdict.usage

    with Progress(console=err, transient=False) as progress:
        task = progress.add_task("checking", total=todo)
        failures = run_batch(
            items, verify, output_file, concurrency=concurrency, on_result=finished
        )
    for failure in failures:
        err.print(f"[red]{input_file}:{failure.item.line}: failed: {failure.error}[/]")
    err.print(
        f"{todo - len(failures)} checked, {len(items) - todo} already done, "
        f"{len(failures)} failed, {len(bad)} bad lines -> {output_file}"
    )
    u = usage[0]
    err.print(
        f"this run: {u.llm_calls} model calls ({u.cached_calls} from cache), "
        f"{u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f} s in the model"
    )
    if bad or failures:
        raise typer.Exit(code=2 if bad else _exit_code(failures[0].error))


def _verifier(
    settings: Any, items: list[BatchItem], input_file: Path
) -> Callable[[Claim | Article], Verdict]:
    """One method per kind of subject in the batch, each chosen before any model loads."""
    from verity.api import method_from_settings, resolve_method
    from verity.methods.base import Method

    first_line: dict[type[Claim] | type[Article], int] = {}
    for item in items:
        first_line.setdefault(type(item.subject), item.line)
    names = {}
    for kind, line in first_line.items():
        try:
            names[kind] = resolve_method(settings.method, kind)
        except BadInputError as exc:
            raise BadInputError(f"{input_file}:{line}: {exc}") from exc
    by_name: dict[str, Method] = {}
    for kind, name in names.items():
        if name not in by_name:  # claims and articles on one method share its models
            by_name[name] = method_from_settings(settings, kind)
    methods = {kind: by_name[name] for kind, name in names.items()}
    return lambda subject: methods[type(subject)].verify(subject)


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


@kg_app.command("load")
def kg_load(
    file: Annotated[
        Path, typer.Argument(help="N-Triples (.nt) or Turtle (.ttl) file, optionally .gz.")
    ],
    name: Annotated[str, typer.Option("--name", help="Name to use as kg-local:NAME.")],
    force: Annotated[
        bool, typer.Option("--force", help="Load again even if the store is up to date.")
    ] = False,
) -> None:
    """Bulk-load a graph in Wikidata's RDF vocabulary into a store for kg-local:NAME."""
    from verity.kg.store import load_store

    for line in load_store(file, name, force=force).lines():
        out.print(line, highlight=False, markup=False, soft_wrap=True)


@kg_app.command("info")
def kg_info(
    name: Annotated[
        str, typer.Argument(help="A name given to `verity kg load` (kg-local: default).")
    ],
) -> None:
    """Show what a loaded knowledge graph holds and whether its source file changed."""
    from verity.kg.store import store_info

    for line in store_info(name).lines():
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def _exit_code(exc: Exception) -> int:
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
    return 1  # any other verity error, or an unexpected one recorded in a batch


def main() -> None:
    """Entry point: run the app; every verity error becomes a message and an exit code."""
    try:
        app()
    except VerityError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(_exit_code(exc))
