"""The public Python API; the CLI and the benchmark harness are thin layers over it.

import verity
verdict = verity.check("The Eiffel Tower is in Paris.")
verdict = verity.check("...", method="direct", model="openai:gpt-4o-mini")
method = verity.load_method("rag", model="local", sources=("offline-wiki",), k=3)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from verity.config import Settings
from verity.domain import Article, Claim, Verdict
from verity.errors import BadInputError
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import Method
from verity.methods.base import load_method as _load_registered
from verity.sources.base import Source
from verity.sources.registry import make_source

_sources: dict[str, Source] = {}
_sources_lock = threading.Lock()


def shared_source(spec: str) -> Source:
    """One instance per source spec per process, so indexes load once."""
    with _sources_lock:
        if spec not in _sources:
            _sources[spec] = make_source(spec)
        return _sources[spec]


def as_subject(value: str | Claim | Article) -> Claim | Article:
    """A claim from plain text; claims and articles pass through."""
    if isinstance(value, Claim | Article):
        return value
    if not isinstance(value, str) or not value.strip():
        raise BadInputError("the claim is empty: give a sentence to check")
    return Claim(text=value)


def _model_settings(model: str | ModelSettings, base_url: str | None) -> ModelSettings:
    if isinstance(model, ModelSettings):
        return model if base_url is None else model.model_copy(update={"base_url": base_url})
    return ModelSettings(spec=model, base_url=base_url)


def load_method(
    name: str = "rag",
    *,
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    roles: Mapping[str, ModelSettings] | None = None,
    **config: Any,
) -> Method:
    """A ready method: its models built from specs, its sources by name."""
    models = ModelSet.from_settings(_model_settings(model, base_url), roles)
    return _load_registered(
        name, models=models, sources=[shared_source(s) for s in sources], **config
    )


def method_from_settings(settings: Settings) -> Method:
    """The method that settings describe (used by the CLI and the benchmark harness)."""
    return load_method(
        settings.method,
        model=settings.model,
        sources=settings.sources,
        roles=settings.roles,
        **settings.methods.get(settings.method, {}),
    )


def check(
    subject: str | Claim | Article,
    *,
    method: str = "rag",
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    **config: Any,
) -> Verdict:
    """Check one claim (or article) and return the verdict with its evidence and trace."""
    target = as_subject(subject)
    built = load_method(method, model=model, base_url=base_url, sources=sources, **config)
    return built.verify(target)


async def acheck(
    subject: str | Claim | Article,
    *,
    method: str = "rag",
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    **config: Any,
) -> Verdict:
    """Async twin of `check`."""
    target = as_subject(subject)
    built = load_method(method, model=model, base_url=base_url, sources=sources, **config)
    return await built.averify(target)
