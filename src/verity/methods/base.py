"""The method protocol and the registry that finds methods by name.

    method = load_method("rag", models=ModelSet(make_model(ModelSettings())),
                         sources=[OfflineWiki()], k=5)
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris."))

A method may offer named variants, presets of its own settings such as the paper's
ablations: ``load_method("zofia/no-debate", ...)`` is ``zofia`` with the settings its
``variants["no-debate"]`` names (explicit settings still win). A benchmark can then run
a method and its ablations side by side under distinct names.

Methods register as entry points in the ``verity.methods`` group; the built-in ones are
registered the same way in verity's own ``pyproject.toml``, so a third-party package adds
a method by declaring an entry point and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    """The class registered under a name (a variant name gives its method's class)."""
    base = name.partition("/")[0]
    try:
        entry = _registry()[base]
    except KeyError:
        raise UnknownNameError("method", base, method_names()) from None
    cls: type[Any] = entry.load()
    return cls


def variant_settings(name: str) -> dict[str, Any]:
    """The settings a ``method/variant`` name stands for; ``{}`` for a plain name."""
    base, _, variant = name.partition("/")
    if not variant:
        return {}
    variants: dict[str, dict[str, Any]] = getattr(method_class(base), "variants", {})
    if variant not in variants:
        raise UnknownNameError(f"variant of {base}", variant, list(variants))
    return dict(variants[variant])


def settings_for(name: str, table: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A method's settings from a ``[methods.*]`` table, for a plain or a variant name.

    For ``zofia/no-debate``: ``[methods.zofia]``, then the variant's preset over it (the
    variant is what was asked for), then ``[methods."zofia/no-debate"]`` over both.
    """
    base = name.partition("/")[0]
    merged = dict(table.get(base, {}))
    if name != base:
        merged |= variant_settings(name) | dict(table.get(name, {}))
    return merged


def load_method(
    name: str, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any
) -> Method:
    """Build a registered method (or a named variant) with its models, sources, settings."""
    cls = method_class(name)
    settings = {**variant_settings(name), **config}
    try:
        method: Method = cls(models=models, sources=sources, **settings)
    except ValidationError as exc:
        raise ConfigError(f"bad settings for method {name!r}: {exc}") from exc
    return method
