"""What every command shares: the two consoles, exit codes, and how errors are shown.

Exit codes (README, docs/reliability.md): 0 done, 2 bad input, 3 configuration,
4 a source or model endpoint unavailable, 5 a model gave no valid answer, 6 a budget
exceeded, 1 anything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from verity.errors import (
    BadInputError,
    BudgetExceededError,
    ConfigError,
    ModelOutputError,
    SourceUnavailableError,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from verity.config import Settings
    from verity.llm.budget import Budget
    from verity.llm.spec import ModelSettings

# No emoji codes: ":warning:" in a claim is text, not a picture. No highlighting of
# numbers and paths in text that is not ours.
out = Console(emoji=False, highlight=False)
# soft_wrap: messages name paths, which must never be broken across lines.
err = Console(stderr=True, soft_wrap=True, emoji=False, highlight=False)

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="TOML settings file (default ./verity.toml)")
]
# The model endpoint's options, the same in every command that builds a model.
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint URL.")
]
ApiKeyEnvOpt = Annotated[
    str | None, typer.Option("--api-key-env", help="Env var holding the endpoint's key.")
]
# The options of a benchmark run, the same in `bench` and `reproduce`.
SourceOpt = Annotated[
    list[str] | None, typer.Option("--source", help="Evidence source for open (repeatable).")
]
ConcurrencyOpt = Annotated[int, typer.Option(min=1, help="Examples checked at once.")]
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help="Benchmark data folder.")]
RetryErrorsOpt = Annotated[bool, typer.Option("--retry-errors", help="Run failed examples again.")]
EngineOpt = Annotated[
    str, typer.Option(help="Where examples run: thread (this process) | ray (a Ray cluster).")
]
AddressOpt = Annotated[
    str | None,
    typer.Option(help="--engine ray: the cluster's address (default: a local cluster)."),
]

# What one check may spend (verity.llm.budget), the same in every command that checks.
MaxCallsOpt = Annotated[
    int | None, typer.Option("--max-calls", min=1, help="Most model calls one check may make.")
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option("--max-tokens", min=1, help="Most prompt+completion tokens one check may use."),
]
MaxSecondsOpt = Annotated[
    float | None,
    typer.Option("--max-seconds", min=0.001, help="Most wall seconds one check may take."),
]
MaxCostOpt = Annotated[
    float | None, typer.Option("--max-cost", min=0, help="Most US dollars one check may spend.")
]
# What a whole run (a batch, a benchmark, a reproduction) may spend.
RunCallsOpt = Annotated[
    int | None, typer.Option("--run-max-calls", min=1, help="Most model calls of the run.")
]
RunTokensOpt = Annotated[
    int | None, typer.Option("--run-max-tokens", min=1, help="Most tokens of the whole run.")
]
RunSecondsOpt = Annotated[
    float | None,
    typer.Option("--run-max-seconds", min=0.001, help="Most wall seconds of the whole run."),
]
RunCostOpt = Annotated[
    float | None, typer.Option("--run-max-cost", min=0, help="Most US dollars of the whole run.")
]

_CODES: tuple[tuple[type[Exception], int], ...] = (
    (BadInputError, 2),
    (ConfigError, 3),
    (SourceUnavailableError, 4),
    (ModelOutputError, 5),
    (BudgetExceededError, 6),
)


def exit_code(exc: BaseException) -> int:
    """The documented exit code for an error: the first matching class, else 1."""
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return 1  # any other verity error, or an unexpected one recorded in a batch


def say(style: str, message: object) -> None:
    """One line on stderr in a colour; the text is shown as it is, never as markup."""
    from verity.render import text  # imports the domain models: not for `verity --help`

    err.print(text(message, style))


def say_error(exc: object, prefix: str = "error") -> None:
    """An error (or its message) as one line on stderr: ``error: <message>``."""
    from verity.render import text

    err.print(Text.assemble((f"{prefix}:", "bold red"), " ", text(exc)))


Limits = tuple[int | None, int | None, float | None, float | None]


def budgets(settings: Settings, limits: Limits, run_limits: Limits) -> tuple[Budget, Budget]:
    """A check's and a run's budgets: the settings' tables with the options over them.

    A dollar limit on a model with no known price is said to be toothless.
    """
    budget = budget_from(settings.budget, *limits)
    run = budget_from(settings.run_budget, *run_limits)
    warn_unpriced((budget, run), settings.model)
    return budget, run


def warn_unpriced(budgets: Sequence[Budget], model: ModelSettings) -> None:
    """Say so when a dollar limit is set for a model whose price is not known: it cannot bite."""
    if any(b.cost is not None for b in budgets) and model.known_price() is None:
        say(
            "yellow",
            f"warning: {model.spec} has no known price, so a cost limit cannot stop its "
            f'calls (set one with [prices."{model.spec}"] in verity.toml); the other limits '
            "still hold",
        )


def budget_from(
    base: Budget,
    calls: int | None,
    tokens: int | None,
    seconds: float | None,
    cost: float | None,
) -> Budget:
    """``base`` (the settings' ``[budget]`` or ``[run_budget]``) with the options given over it.

    A value out of range is bad input (exit 2), as any option's is.
    """
    from pydantic import ValidationError

    from verity.llm.budget import Budget

    given = {"calls": calls, "tokens": tokens, "seconds": seconds, "cost": cost}
    try:
        return Budget.model_validate(
            {**base.model_dump(), **{k: v for k, v in given.items() if v is not None}}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInputError(f"budget {where}: {first['msg']}") from exc


def with_grounding(
    settings: Settings, grounding: str | None, checker: str | None = None
) -> Settings:
    """The settings with ``--grounding`` and ``--grounding-checker`` applied (None: as set)."""
    if grounding is not None and grounding not in ("off", "on", "strict"):
        raise BadInputError(f"--grounding must be on, strict or off, not {grounding!r}")
    if checker is not None and checker != "model" and not checker.startswith("nli:"):
        raise BadInputError(f"--grounding-checker must be model or nli:DIR, not {checker!r}")
    update = {"grounding": grounding, "grounding_checker": checker}
    return settings.model_copy(update={k: v for k, v in update.items() if v is not None})


def warn(method: object) -> None:
    """Say on stderr what makes this run differ from the method's paper (e.g. no web)."""
    said = getattr(method, "warnings", None)
    for message in said() if callable(said) else ():
        say("yellow", f"warning: {message}")
