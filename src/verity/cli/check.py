"""``verity check``: one claim, one article, or a batch from JSONL to JSONL.

verity check "The Eiffel Tower is in Paris."
verity check "..." --model openai:gpt-4o-mini --source wikipedia --json
verity check --article news.json            # or a .txt file, or - for stdin
verity check --document article.txt --concurrency 8   # every claim of a text (cli/document.py)
verity check "..." --json --progress        # each step on stderr, the verdict on stdout
verity check --input claims.jsonl --output results.jsonl
verity check --input claims.jsonl --output results.jsonl --engine ray   # on a Ray cluster
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from verity.cli.output import (
    AddressOpt,
    ApiKeyEnvOpt,
    BaseUrlOpt,
    ConfigOpt,
    MaxCallsOpt,
    MaxCostOpt,
    MaxSecondsOpt,
    MaxTokensOpt,
    RunCallsOpt,
    RunCostOpt,
    RunSecondsOpt,
    RunTokensOpt,
    budgets,
    err,
    exit_code,
    out,
    say,
    warn,
    with_grounding,
)
from verity.errors import BadInputError, VerityError
from verity.jsonl import json_line, json_text

if TYPE_CHECKING:
    from verity.batch import BatchItem, Checks, Result, ResultFile, Subject
    from verity.config import Settings
    from verity.domain import Article, Claim
    from verity.engines import Engine
    from verity.llm.budget import Budget


def check(
    claim: Annotated[str | None, typer.Argument(help="The claim to check.")] = None,
    article: Annotated[
        Path | None,
        typer.Option("--article", help="A news article: a text or JSON file, or - for stdin."),
    ] = None,
    document: Annotated[
        str | None,
        typer.Option(
            "--document",
            help="A whole text checked claim by claim: a text or JSON file, - for stdin, "
            "or an http(s) URL.",
        ),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(
            help="Method name (default rag for a claim or a document's claims, zofia for an "
            "article)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="local | local:/path/model.gguf | openai:MODEL")
    ] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Evidence source (repeatable).")
    ] = None,
    claim_date: Annotated[
        str | None,
        typer.Option("--date", help="Claim or article date YYYY-MM-DD (retrieval cutoff)."),
    ] = None,
    speaker: Annotated[str | None, typer.Option(help="Who made the claim.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    show_progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress",
            help="Show each step of one claim or article on stderr "
            "(default: when stderr is a terminal).",
        ),
    ] = None,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write the full verdict and trace here.")
    ] = None,
    input_file: Annotated[
        Path | None, typer.Option("--input", help="JSONL of claims or articles to check.")
    ] = None,
    output_file: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="JSONL results of a batch (appended); with --document, its result record "
            "(a rerun checks only the claims not yet checked).",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Checks at once: items of a batch (default 1), claims of a document (default 4).",
        ),
    ] = None,
    with_article: Annotated[
        str | None,
        typer.Option(
            "--with", help="--document: an article method (zofia) run on the whole text too."
        ),
    ] = None,
    extractor: Annotated[
        str | None,
        typer.Option(
            help="--document: how claims are taken: claimify (3 answers per step, as the "
            "paper) | single (one answer per step)."
        ),
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="--document: write a Markdown report here.")
    ] = None,
    engine: Annotated[
        str, typer.Option(help="Where a batch runs: thread (this process) | ray (a Ray cluster).")
    ] = "thread",
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
        str | None,
        typer.Option(
            help="Check the explanation against what it cites: on | strict | off "
            "(default: the settings file's grounding, else on)."
        ),
    ] = None,
    grounding_checker: Annotated[
        str | None,
        typer.Option(
            help="Who checks it: model (the grounding role's model) | nli:DIR (a local NLI "
            "checkpoint folder)."
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Check a claim, an article with --article, or a batch with --input and --output.

    With --document, every claim of a whole text (a file, - for stdin, or a URL).
    """
    from verity import events, render
    from verity.api import method_from_settings
    from verity.cli.progress import shown, wanted
    from verity.config import settings_from_options
    from verity.llm.budget import spending

    settings = settings_from_options(
        config,
        method=method,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        sources=source,
    )
    settings = with_grounding(settings, grounding, grounding_checker)
    _one_input(claim, article, input_file, document)
    run_options = (run_max_calls, run_max_tokens, run_max_seconds, run_max_cost)
    budget, run_budget = budgets(
        settings, (max_calls, max_tokens, max_seconds, max_cost), run_options
    )
    if document is not None:
        from verity.cli.document import DEFAULT_CONCURRENCY, DocumentOptions, check_document_command

        _document_only(trace, speaker, engine, address)
        options = DocumentOptions(
            source=document, concurrency=concurrency or DEFAULT_CONCURRENCY,
            with_article=with_article, extractor=extractor or "claimify", output=output_file,
            report=report, as_json=as_json, progress=show_progress,
            when=_parse_date(claim_date),
        )  # fmt: skip
        check_document_command(options, settings, budget, run_budget)
        return
    if with_article is not None or extractor is not None or report is not None:
        raise BadInputError("--with, --extractor and --report apply to --document")
    if input_file is not None or output_file is not None:
        inputs, outputs = _batch_paths(input_file, output_file, as_json, trace, claim_date, speaker)
        _batch(
            settings, inputs, outputs, concurrency or 1, _engine(engine, address), budget,
            run_budget,
        )  # fmt: skip
        return
    _engine_in_batch_only(engine, address)
    if any(value is not None for value in run_options):
        # Only the options: a [run_budget] table in the settings is for batches and runs.
        raise BadInputError("--run-max-* limit a batch (--input); one check takes --max-*")
    subject = _subject(claim, article, claim_date, speaker, settings)
    if trace is not None:
        _check_trace_path(trace)
    chosen = method_from_settings(settings, type(subject))
    warn(chosen)
    try:
        with (
            shown(err, wanted(show_progress)) as steps,
            events.listening(steps),
            spending(budget),
        ):
            verdict = chosen.verify(subject)
    except VerityError as exc:
        if trace is not None and exc.trace is not None:
            _write_trace(trace, _failed_record(exc))  # what the failed check did, and spent
        raise
    record = verdict.to_json_dict()
    # The verdict is shown first, so a trace file that cannot be written loses nothing.
    if as_json:
        sys.stdout.write(json_line(record))
        sys.stdout.flush()
    else:
        render.verdict(out, verdict)
    if trace is not None:
        _write_trace(trace, record)


def _write_trace(trace: Path, record: dict[str, object]) -> None:
    try:
        trace.write_text(json_text(record, indent=2), encoding="utf-8")
    except OSError as exc:
        raise BadInputError(f"cannot write --trace {trace}: {exc.strerror or exc}") from exc


def _failed_record(exc: VerityError) -> dict[str, object]:
    """A failed check for its --trace file: the error, and what it had done and spent."""
    from verity.cli.output import exit_code

    return {
        "error": {"type": type(exc).__name__, "message": str(exc), "exit_code": exit_code(exc)},
        "usage": exc.usage.model_dump(mode="json") if exc.usage is not None else None,
        "trace": exc.trace.model_dump(mode="json") if exc.trace is not None else None,
    }


def _check_trace_path(trace: Path) -> None:
    if not trace.parent.is_dir():
        raise BadInputError(f"--trace {trace}: folder {trace.parent} does not exist")
    if trace.exists() and not trace.is_file():
        raise BadInputError(f"--trace {trace} is not a regular file")


def _one_input(
    claim: str | None, article: Path | None, input_file: Path | None, document: str | None
) -> None:
    inputs = (("a claim", claim), ("--article", article), ("--input", input_file),
              ("--document", document))  # fmt: skip
    given = [name for name, value in inputs if value is not None]
    if len(given) > 1:
        raise BadInputError(f"give either {given[0]} or {given[1]}, not both")


def _document_only(
    trace: Path | None, speaker: str | None, engine: str, address: str | None
) -> None:
    """Refuse the options of one claim and of a batch with --document, by name."""
    if trace is not None:
        raise BadInputError(
            "--trace is for one claim or article; with --document, --output FILE keeps every "
            "claim's verdict with its trace"
        )
    if speaker is not None:
        raise BadInputError("--speaker is for a claim; a document's claims have no speaker")
    if engine != "thread" or address is not None:
        raise BadInputError("--engine and --address apply to a batch (--input and --output)")


def _subject(
    claim: str | None,
    article: Path | None,
    claim_date: str | None,
    speaker: str | None,
    settings: Settings,
) -> Claim | Article:
    from pydantic import ValidationError

    from verity.domain import Claim
    from verity.limits import check_subject_size

    when = _parse_date(claim_date)
    if article is not None:
        if speaker is not None:
            raise BadInputError("--speaker is for a claim; an article has no speaker")
        found = _read_article(article, settings.limits.article_chars)
        # --date is the retrieval cutoff the user asks for: it wins over the file's date.
        subject: Claim | Article = (
            found if when is None else found.model_copy(update={"date": when})
        )
    else:
        if claim is None or not claim.strip():
            raise BadInputError("the claim is empty: give a sentence to check, or --article FILE")
        try:
            subject = Claim(text=claim, date=when, speaker=speaker)
        except ValidationError as exc:
            raise BadInputError(f"the claim cannot be used: {exc.errors()[0]['msg']}") from exc
    check_subject_size(subject, settings.limits)
    return subject


def _read_article(path: Path, max_chars: int) -> Article:
    from verity.inputs import read_article, read_article_stream

    if str(path) != "-":
        return read_article(path, max_chars)
    # The bytes, not sys.stdin's text: its decoding may replace or smuggle bad bytes.
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream put in place by an embedding program
        text = sys.stdin.read()
        stream = io.BytesIO(text.encode("utf-8", "surrogateescape"))
    return read_article_stream(stream, "<stdin>", max_chars)


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


def _engine(name: str, address: str | None) -> Engine:
    """The batch's engine, checked (Ray installed?) before any input is read."""
    from verity.engines import engine_for

    return engine_for(name, address=address)


def _engine_in_batch_only(name: str, address: str | None) -> None:
    if name != "thread" or address is not None:
        raise BadInputError("--engine and --address apply to a batch (--input and --output)")


def _batch(
    settings: Settings,
    input_file: Path,
    output_file: Path,
    concurrency: int,
    engine: Engine,
    budget: Budget,
    run_budget: Budget,
) -> None:
    from functools import partial

    from verity.batch import Checks, ResultFile, read_items, verifier_for
    from verity.extraction.types import Document

    items, bad = read_items(input_file, settings.limits)
    for line in bad:
        say("yellow", f"{input_file}:{line.line}: skipped: {line.reason}")
    names = _method_names(settings, items, input_file)
    documents = [item.line for item in items if isinstance(item.subject, Document)]
    if documents and not engine.local:
        # A document's claims are checked in one process, sharing its extraction.
        raise BadInputError(f"{input_file}:{documents[0]}: a document line needs --engine thread")
    # The output is checked and locked before any model loads: a mistake costs nothing.
    with ResultFile(output_file, source=input_file) as output, engine:
        verify: Callable[[Subject], Result] | Checks = _verifier(
            settings, names, concurrency, budget if documents else None
        )
        if not engine.local:
            # Each worker builds the methods again from the settings; those built here
            # checked the settings and said their warnings once.
            verify = Checks(partial(verifier_for, settings, names, concurrency))
        spend = (budget, run_budget)
        _run(items, verify, output, input_file, concurrency, len(bad), engine, spend)


def _run(
    items: list[BatchItem],
    verify: Callable[[Subject], Result] | Checks,
    output: ResultFile,
    input_file: Path,
    concurrency: int,
    bad: int,
    engine: Engine,
    budgets: tuple[Budget, Budget],
) -> None:
    from rich.progress import Progress

    from verity.batch import run_batch
    from verity.documents.types import DocumentVerdict
    from verity.domain import Usage
    from verity.llm.prices import cost_phrase

    todo = len(items) - len(output.done & {i.key for i in items})
    usage = [Usage()]
    partly: list[tuple[BatchItem, DocumentVerdict]] = []  # documents with failed claims
    lock = threading.Lock()  # results arrive from worker threads

    def finished(item: BatchItem, verdict: Result | None) -> None:
        with lock:
            progress.advance(task)
            if verdict is not None:
                usage[0] = usage[0] + verdict.usage
            if isinstance(verdict, DocumentVerdict) and not verdict.complete:
                partly.append((item, verdict))

    with Progress(console=err, transient=False) as progress:
        task = progress.add_task("checking", total=todo)
        failures = run_batch(
            items, verify, output, concurrency=concurrency, on_result=finished, engine=engine,
            budget=budgets[0], run_budget=budgets[1],
        )  # fmt: skip
    for failure in failures:
        say("red", f"{input_file}:{failure.item.line}: failed: {failure.error}")
    for item, result in partly:
        failed = sum(r.status != "checked" for r in result.claims)
        say("red", f"{input_file}:{item.line}: {failed} claim check(s) failed; a rerun retries it")
    say(
        "default",
        f"{todo - len(failures)} checked, {len(items) - todo} already done, "
        f"{len(failures)} failed, {bad} bad lines -> {output.path}",
    )
    u = usage[0]
    for failure in failures:  # a check that failed part-way spent something too
        spent = getattr(failure.error, "usage", None)
        if isinstance(spent, Usage):
            u = u + spent
    say(
        "default",
        f"this run: {u.llm_calls} model calls ({u.cached_calls} from cache), "
        f"{u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f} s in the model, "
        f"{cost_phrase(u)}",
    )
    if failures.stopped is not None:
        say("red", f"stopped: {failures.stopped}; run again to go on where it stopped")
        raise typer.Exit(code=exit_code(failures.stopped))
    if bad or failures:
        raise typer.Exit(code=2 if bad else exit_code(failures[0].error))
    if partly:
        from verity.cli.document import failed_code

        raise typer.Exit(code=failed_code(min(partly, key=lambda p: p[0].line)[1]))


def _method_names(
    settings: Settings, items: list[BatchItem], input_file: Path
) -> dict[type[Claim] | type[Article], str]:
    """The method for each kind of subject in the batch, checked before anything is opened.

    A document's claims are checked as claims: a document line needs the claims' method.
    """
    from verity.api import resolve_method
    from verity.domain import Article, Claim

    first_line: dict[type[Claim] | type[Article], int] = {}
    for item in items:
        subject = item.subject
        first_line.setdefault(type(subject) if isinstance(subject, Claim | Article) else Claim,
                              item.line)  # fmt: skip
    names = {}
    for kind, line in first_line.items():
        try:
            names[kind] = resolve_method(settings.method, kind)
        except BadInputError as exc:
            raise BadInputError(f"{input_file}:{line}: {exc}") from exc
    return names


def _verifier(
    settings: Settings,
    names: dict[type[Claim] | type[Article], str],
    concurrency: int,
    document_budget: Budget | None = None,
) -> Callable[[Subject], Result]:
    """One method per kind of subject; claims and articles on one method share its models.

    The models take the calls of ``concurrency`` checks at once, unless a limit set in
    the settings caps them, which is said. With ``document_budget`` (the batch has
    document lines), documents are checked claim by claim, each claim within it.
    """
    from verity.batch import methods_for
    from verity.cli.document import batch_checker
    from verity.llm.spec import ModelSet

    methods = methods_for(settings, names)
    for built in {id(m): m for m in methods.values()}.values():
        warn(built)
        models = getattr(built, "models", None)
        if isinstance(models, ModelSet):
            for line in models.follow(concurrency):
                say("yellow", f"warning: {line}")
    from verity.domain import Article, Claim

    check_document = (
        batch_checker(methods[Claim], document_budget, concurrency)
        if document_budget is not None
        else None
    )

    def one(subject: Subject) -> Result:
        if isinstance(subject, Claim | Article):
            return methods[type(subject)].verify(subject)
        if check_document is None:  # read_items and _method_names would have said so
            raise BadInputError("a document line in a batch that was not told of it")
        return check_document(subject)

    return one
