"""The one error tree of verity.

Every failure a user can cause or meet is a `VerityError`. Each edge (the CLI, later the
HTTP API) translates these into exit codes or status codes in one place; code inside the
package raises the most specific class with ``raise ... from exc``.

    try:
        verity.check("")
    except BadInputError as exc:
        print(exc)
"""

from __future__ import annotations

from typing import Any


class VerityError(Exception):
    """Base class of every error verity raises on purpose.

    A check that fails part-way keeps what it had done: ``usage`` (a `verity.domain.Usage`:
    the calls, tokens and cost already spent) and ``trace`` (a `verity.domain.Trace` of its
    calls and retrievals so far), set where the check ran (`verity.methods.base`); None
    for an error raised before any check began.
    """

    usage: Any = None
    trace: Any = None


class BadInputError(VerityError, ValueError):
    """The caller gave something verity cannot use: an empty claim, a malformed file."""


class ConfigError(VerityError):
    """A setting names something that does not exist or cannot work together."""


class UnknownNameError(ConfigError, KeyError):
    """A method, model backend or source name that no registry knows."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(sorted(known)) or 'none'}")

    def __str__(self) -> str:
        # KeyError would otherwise quote the whole message.
        return str(self.args[0])

    def __reduce__(self) -> tuple[type[UnknownNameError], tuple[str, str, list[str]]]:
        # Rebuilt from its parts, not its message, when it crosses to another process.
        return (type(self), (self.kind, self.name, self.known))


class MissingKeyError(ConfigError):
    """A remote service needs an API key and the named environment variable is unset."""

    def __init__(self, service: str, env_var: str) -> None:
        self.service, self.env_var = service, env_var
        super().__init__(f"{service} needs an API key: set the environment variable {env_var}")

    def __reduce__(self) -> tuple[type[MissingKeyError], tuple[str, str]]:
        return (type(self), (self.service, self.env_var))


class SourceUnavailableError(VerityError):
    """An evidence source or model endpoint could not be reached or answered with an error."""


class ModelOutputError(VerityError):
    """A model's answer could not be validated against the requested schema, even after repair."""

    def __init__(self, message: str, *, raw: str = "") -> None:
        self.raw = raw
        super().__init__(message)

    def __reduce__(self) -> tuple[type[ModelOutputError], tuple[str], dict[str, Any]]:
        return (type(self), (str(self),), dict(self.__dict__))


class BudgetExceededError(VerityError):
    """A limit on what a check may spend was reached: calls, tokens, seconds or money.

    ``limit`` names the limit (``calls``, ``tokens``, ``seconds``, ``cost``, or
    ``context`` for a prompt over the model's window); ``scope`` says whose it was
    (``check``: one check's budget, ``run``: a whole batch or benchmark run's).
    """

    def __init__(self, message: str, *, limit: str = "", scope: str = "check") -> None:
        self.limit, self.scope = limit, scope
        super().__init__(message)

    def __reduce__(self) -> tuple[type[BudgetExceededError], tuple[str], dict[str, Any]]:
        return (type(self), (str(self),), dict(self.__dict__))


class ContextOverflowError(BudgetExceededError):
    """A prompt (with room for its answer) is longer than the model's context window.

    Methods that can do with less (fewer passages, a shorter history) catch this one;
    a check's own budget (`BudgetExceededError`) is never caught by a method.
    """

    def __init__(self, message: str, *, limit: str = "context", scope: str = "check") -> None:
        super().__init__(message, limit=limit, scope=scope)


class DatasetError(BadInputError):
    """A benchmark dataset is missing or malformed."""
