"""The ``verity`` command line: a thin layer over the Python API, one module per command group.

verity check "The Eiffel Tower is in Paris."
verity check "..." --model openai:gpt-4o-mini --source wikipedia --json
verity check --article news.json            # or a .txt file, or - for stdin
verity check --input claims.jsonl --output results.jsonl
verity bench --dataset hover --methods direct,local --out results/hover
verity index build docs/ --name mydocs
verity kg load graph.nt.gz --name mygraph   # then: kg-local:mygraph
verity train toe --stage evalnet --dataset liar-train --out runs/toe
verity serve --port 8000                    # the HTTP API and web pages
verity keys new alice --file keys.txt       # an API key for verity serve

Errors are translated here, once: a verity error becomes ``error: <message>`` and its exit
code (`verity.cli.output.exit_code`); anything else is a bug, shown as one line unless
``VERITY_DEBUG=1`` asks for the traceback.

``verity --help`` imports every command module to list the commands, so those modules
import only typer and rich at their top; a command imports what it needs when it runs
(tests/test_startup.py holds them to it, docs/speed.md has the figures).
"""

from __future__ import annotations

import os
import sys

import typer

from verity.cli.adv import adv_app
from verity.cli.bench import bench
from verity.cli.check import check
from verity.cli.grounding import grounding_app
from verity.cli.info import methods, models, sources
from verity.cli.keys import keys_app
from verity.cli.optimize import optimize_command
from verity.cli.output import exit_code, say_error
from verity.cli.reproduce import reproduce
from verity.cli.serve import serve
from verity.cli.store import index_app, kg_app
from verity.cli.train import train_command
from verity.errors import BadInputError, VerityError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Automated fact-checking with LLM multi-agent methods.",
)
app.command()(check)
app.command()(methods)
app.command()(models)
app.command()(sources)
app.command("bench")(bench)
app.command("reproduce")(reproduce)
app.command("optimize")(optimize_command)
app.command("train")(train_command)
app.command("serve")(serve)
app.add_typer(index_app, name="index")
app.add_typer(kg_app, name="kg")
app.add_typer(adv_app, name="adv")
app.add_typer(grounding_app, name="grounding")
app.add_typer(keys_app, name="keys")


def check_argv(argv: list[str]) -> None:
    """Refuse arguments that are not valid UTF-8, naming which one.

    Python hands undecodable bytes over as lone surrogates; they would fail much later,
    while printing or writing a result.
    """
    for number, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = _as_bytes(arg).decode("utf-8", "backslashreplace")
            raise BadInputError(
                f"argument {number} is not valid UTF-8 (character {exc.start + 1}): {shown}"
            ) from exc


def _as_bytes(arg: str) -> bytes:
    """The bytes an argument came from; other lone surrogates as escapes (never raises)."""
    try:
        return arg.encode("utf-8", "surrogateescape")  # what Python made of argv's bytes
    except UnicodeEncodeError:
        return arg.encode("utf-8", "backslashreplace")


def main() -> None:
    """Entry point: run the app; every verity error becomes a message and an exit code."""
    try:
        check_argv(sys.argv[1:])
        app()
    except VerityError as exc:
        say_error(exc)
        sys.exit(exit_code(exc))
    except BrokenPipeError:
        # The reader went away (``verity ... | head``): nothing left to say to it, and the
        # interpreter must not fail again flushing stdout on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:
        if os.environ.get("VERITY_DEBUG") == "1":
            raise
        say_error(
            f"{type(exc).__name__}: {exc} (this is a bug in verity; "
            "set VERITY_DEBUG=1 to see where it happened)",
            "unexpected error",
        )
        sys.exit(1)


__all__ = ["app", "main"]
