"""``verity check --document``: a whole text checked claim by claim, from a file, stdin or a URL.

verity check --document article.txt --method rag --concurrency 8
verity check --document news.json --output news.result.json   # rerun: retries what failed
verity check --document https://news.example.org/story --json --with zofia

The claims are taken by `verity.extraction` and each is checked as a claim with the
chosen method (`verity.documents.check_document`); the method and the extractor share one
model set, so one cache and one limit on calls in flight. What is shown comes from
`verity.render_document`; the record a rerun reuses from `verity.documents.store`.
"""

from __future__ import annotations

import asyncio
import io
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from verity.cli.output import err, exit_code, out, say, warn
from verity.errors import BadInputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from verity.config import Settings
    from verity.documents.types import ClaimResult, DocumentVerdict
    from verity.domain import Article, Event
    from verity.extraction.extract import Extractor
    from verity.extraction.types import Document
    from verity.limits import Limits
    from verity.llm.budget import Budget
    from verity.methods.base import Method

# Checks of a document's claims at once when --concurrency is not given: a few, so that a
# long text does not wait on one claim after another, and a small endpoint is not flooded.
DEFAULT_CONCURRENCY = 4


@dataclass(frozen=True)
class DocumentOptions:
    """What ``verity check --document`` was asked to do, besides the settings."""

    source: str
    concurrency: int = DEFAULT_CONCURRENCY
    with_article: str | None = None
    extractor: str = "claimify"
    output: Path | None = None
    report: Path | None = None
    as_json: bool = False
    progress: bool | None = None
    when: date | None = None


def check_document_command(
    options: DocumentOptions, settings: Settings, budget: Budget, run_budget: Budget
) -> None:
    """Read the document, check its claims, show and save the result; exit as documented.

    ``budget`` bounds each claim's check, ``run_budget`` the whole document. Exits with
    the code of the first failed check (as a batch does) when a claim or sentence failed,
    after everything has been printed and saved.
    """
    from verity.api import load_extractor, method_from_settings, resolve_method
    from verity.documents.store import load
    from verity.domain import Article, Claim
    from verity.extraction.extract import VARIANTS

    # Everything that can be refused is refused before a model or an index loads.
    resolve_method(settings.method, Claim)
    if options.with_article is not None:
        resolve_method(options.with_article, Article)
    if options.extractor not in VARIANTS:
        raise BadInputError(
            f"--extractor is one of {', '.join(VARIANTS)}, not {options.extractor!r}"
        )
    for flag, path in (("--output", options.output), ("--report", options.report)):
        if path is not None:
            _check_writable(flag, path)
    document = read_document(options.source, settings.limits, options.when)
    previous = load(options.output) if options.output is not None else None
    if previous is not None and previous.document.checksum != document.checksum:
        say("yellow", f"warning: {options.output} holds another document's result; replacing it")
        previous = None
    method = method_from_settings(settings, Claim)
    warn(method)
    _follow(method, options.concurrency)
    article = None
    if options.with_article is not None:
        chosen = settings.model_copy(update={"method": options.with_article})
        article = method_from_settings(chosen, Article)
        warn(article)
    extractor = load_extractor(method, variant=options.extractor)
    result = _run(document, method, article, extractor, options, budget, run_budget, previous)
    _finish(result, options)


def _run(
    document: Document,
    method: Method,
    article: Method | None,
    extractor: Extractor,
    options: DocumentOptions,
    budget: Budget,
    run_budget: Budget,
    previous: DocumentVerdict | None,
) -> DocumentVerdict:
    from verity import events
    from verity.cli.progress import wanted
    from verity.documents import check_document
    from verity.llm.budget import spending

    shown = DocumentProgress() if wanted(options.progress) else None
    # asyncio.run copies this context into its task: the listener and both spends hold.
    with events.listening(shown), spending(run_budget, scope="run"):
        return asyncio.run(
            check_document(
                document, method, extractor, concurrency=options.concurrency,
                claim_budget=budget, article_method=article, previous=previous,
                on_claim=shown.claim if shown is not None else None,
            )
        )  # fmt: skip


def _finish(result: DocumentVerdict, options: DocumentOptions) -> None:
    """Print the result, then save the record and the report; exit 0 or a failure's code."""
    from verity.documents.report import markdown
    from verity.documents.store import save
    from verity.jsonl import json_line
    from verity.render_document import document as render

    # Shown first: a file that cannot be written loses nothing that was checked.
    if options.as_json:
        sys.stdout.write(json_line(result.to_json_dict()))
        sys.stdout.flush()
    else:
        render(out, result)
    if options.output is not None:
        _write(options.output, lambda path: save(result, path))
    if options.report is not None:
        text = markdown(result)
        _write(options.report, lambda path: _write_text(path, text))
    code = failed_code(result)
    if code:
        failed = sum(r.status != "checked" for r in result.claims)
        again = f"run again with --output {options.output}" if options.output else "rerun"
        say("red", f"{failed} claim check(s) failed; {again} to retry only those")
        raise typer.Exit(code=code)


def failed_code(result: DocumentVerdict) -> int:
    """0 when every sentence was read and every claim checked, else the first failure's code.

    The code is the one its error class has on the command line (`exit_code`), as for
    the first failed item of a batch; 1 when the error's kind is not one verity names.
    """
    if result.complete:
        return 0
    texts = [r.error for r in result.claims if r.status != "checked"]
    texts += [n.reason for n in result.sentences if n.outcome == "failed"]
    return _code_of(next((t for t in texts if t), ""))


def _code_of(error: str) -> int:
    """The exit code of an error kept as text, ``"ModelOutputError: ..."``."""
    from verity import errors

    kind = getattr(errors, error.split(":", 1)[0].strip(), None)
    if isinstance(kind, type) and issubclass(kind, errors.VerityError):
        # Only the class matters to exit_code; its __init__ may want arguments.
        return exit_code(Exception.__new__(kind))
    return 1


def _write(path: Path, write: Callable[[Path], None]) -> None:
    try:
        write(path)
    except OSError as exc:
        raise BadInputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _check_writable(flag: str, path: Path) -> None:
    if not path.parent.is_dir():
        raise BadInputError(f"{flag} {path}: folder {path.parent} does not exist")
    if path.exists() and not path.is_file():
        raise BadInputError(f"{flag} {path} is not a regular file")


def _follow(method: Method, concurrency: int) -> None:
    """Let the models take the calls of ``concurrency`` checks at once; say what caps it."""
    from verity.llm.spec import ModelSet

    models = getattr(method, "models", None)
    if isinstance(models, ModelSet):
        for line in models.follow(concurrency):
            say("yellow", f"warning: {line}")


def read_document(source: str, limits: Limits, when: date | None = None) -> Document:
    """The document a file, ``-`` (stdin) or an http(s) URL holds; ``when`` sets its date.

    A file or stdin is read as an article file is (plain text, or JSON with ``text`` and
    optional ``title``, ``url``, ``date``), within the article limit; a URL is fetched
    behind the address guard (`verity.pages.fetch_article`), its title from the page.
    """
    from verity.limits import check_document_size

    if not source.strip():
        raise BadInputError("--document is empty: give a file, - for stdin, or a URL")
    found = _read_article(source, limits)
    check_document_size(found.text, found.title, limits)
    return as_document(found, when)


def as_document(article: Article, when: date | None = None) -> Document:
    """A document from an article's fields; ``when`` (``--date``) wins over its date."""
    from verity.extraction.types import Document

    return Document(
        text=article.text, title=article.title, url=article.url, date=when or article.date
    )


def _read_article(source: str, limits: Limits) -> Article:
    from verity.inputs import read_article, read_article_stream

    if "://" in source:
        from verity.pages import fetch_article

        # The guard refuses schemes other than http(s) and non-public addresses by name.
        return fetch_article(source, limits=limits)
    if source != "-":
        return read_article(Path(source), limits.article_chars)
    # The bytes, not sys.stdin's text: its decoding may replace or smuggle bad bytes.
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream put in place by an embedding program
        stream = io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))
    return read_article_stream(stream, "<stdin>", limits.article_chars)


class DocumentProgress:
    """Progress of a document on stderr: the claims found, then each claim as it ends.

    The other events of the checks (each model call) are left out: a document makes
    hundreds, and the one line per claim is what a reader follows.
    """

    def __call__(self, event: Event) -> None:
        """Take one event; only the end of extraction is shown from them."""
        if event.kind == "milestone" and event.name == "document.extracted":
            claims, sentences = event.data.get("claims"), event.data.get("sentences")
            say("default", f"{claims} claims from {sentences} sentences")

    def claim(self, result: ClaimResult) -> None:
        """One line for a claim whose check ended: its id, its label, its text."""
        from rich.text import Text

        from verity.render import text
        from verity.render_document import label_style

        line = Text.assemble((f"{result.claim.id} ", "bold"), (result.label, label_style(result)))
        line.append("  ")
        line.append_text(text(result.claim.text))
        if result.error:
            line.append_text(text(f"  ({result.error})", "dim"))
        err.print(line)


def batch_checker(
    method: Method, budget: Budget | None, concurrency: int
) -> Callable[[Document], DocumentVerdict]:
    """How a batch checks a document line: claim by claim, each within ``budget``.

    Runs in a batch's worker thread, which has no event loop of its own.
    """
    from verity.api import load_extractor
    from verity.documents import check_document

    extractor = load_extractor(method)

    def one(document: Document) -> DocumentVerdict:
        return asyncio.run(
            check_document(
                document, method, extractor, concurrency=concurrency, claim_budget=budget
            )
        )

    return one
