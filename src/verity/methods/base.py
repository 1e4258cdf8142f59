"""The method protocol and the registry that finds methods by name.

    method = load_method("rag", models=ModelSet(make_model(ModelSettings())),
                         sources=[OfflineWiki()], k=5)
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris."))

Methods register as entry points in the ``verity.methods`` group; the built-in ones are
registered the same way in verity's own ``pyproject.toml``, so a third-party package adds
a method by declaring an entry point and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from verity.domain import Article, Claim, Evidence, Verdict
from verity.errors import ConfigError, UnknownNameError
from verity.llm.spec import ModelSet
from verity.sources.base import Source

GROUP = "verity.methods"


class MethodConfig(BaseModel):
    """Base of every method's own settings; unknown keys are an error, not ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@runtime_checkable
class Method(Protocol):
    """Reaches a verdict on a claim (or an article) using models and sources."""

    name: ClassVar[str]
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]]

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Return the verdict with its evidence, usage and trace.

        ``evidence``, when given, is the evidence to use instead of the method's sources:
        a benchmark's gold evidence, or passages a user supplies. A method that judges
        from the model's knowledge alone ignores it.
        """
        ...

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Async twin of `verify`."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The exact configuration of the method, its models and its sources."""
        ...


@cache
def _registry() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def method_names() -> list[str]:
    """Names of every registered method."""
    return sorted(_registry())


def method_class(name: str) -> type[Any]:
    """The class registered under a name."""
    try:
        entry = _registry()[name]
    except KeyError:
        raise UnknownNameError("method", name, method_names()) from None
    cls: type[Any] = entry.load()
    return cls


def load_method(
    name: str, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any
) -> Method:
    """Build a registered method with its models, sources and own settings."""
    cls = method_class(name)
    try:
        method: Method = cls(models=models, sources=sources, **config)
    except ValidationError as exc:
        raise ConfigError(f"bad settings for method {name!r}: {exc}") from exc
    return method
