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


class VerityError(Exception):
    """Base class of every error verity raises on purpose."""


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

    def __reduce__(self) -> tuple[type[ModelOutputError], tuple[str], dict[str, str]]:
        return (type(self), (str(self),), {"raw": self.raw})


class BudgetExceededError(VerityError):
    """A configured limit (tokens, calls, steps) was reached."""


class DatasetError(BadInputError):
    """A benchmark dataset is missing or malformed."""
