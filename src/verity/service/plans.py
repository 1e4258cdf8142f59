"""What a request runs with: its method, models, sources and settings (`plan`).

    chosen = plan(request, settings)     # Plan(method='rag', model=..., ...)
    chosen.key()                         # the key of the executor's cache of methods

Apart from `verity.service.execute` so that the document runner can plan without
importing the executor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from verity.api import resolve_method
from verity.config import Settings
from verity.llm.spec import ModelSettings, parse_spec
from verity.methods.base import settings_for
from verity.service.requests import CheckRequest


@dataclass(frozen=True)
class Plan:
    """Everything needed to build the method a request asks for; the key of the cache."""

    method: str
    model: ModelSettings
    roles: dict[str, ModelSettings] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    grounding: str = "off"

    def key(self) -> str:
        """A stable text naming this plan (settings in sorted order)."""
        return json.dumps(
            {
                "method": self.method,
                "model": self.model.model_dump(mode="json"),
                "roles": {r: m.model_dump(mode="json") for r, m in sorted(self.roles.items())},
                "sources": self.sources,
                "settings": self.settings,
                "grounding": self.grounding,
            },
            sort_keys=True,
            default=str,
        )


def request_model(
    spec: str | None, defaults: Settings
) -> tuple[ModelSettings, dict[str, ModelSettings]]:
    """The model settings and per-role models for a request's ``model`` (None: the server's).

    A named model replaces the per-role models, as ``--model`` does on the command line;
    it keeps the server's endpoint and generation settings, except that an embedded model
    takes no endpoint, and it is priced as its own spec (`verity.config.Settings.prices`).
    """
    base = defaults.model
    if spec is None or spec == base.spec:
        return base, dict(defaults.roles)
    backend, _ = parse_spec(spec)
    model = defaults.with_model(spec)
    if backend == "local":
        model = model.model_copy(update={"base_url": None})
    return model, {}


def plan(request: CheckRequest, defaults: Settings) -> Plan:
    """The method, model, sources and settings a request runs with, under these defaults."""
    name = resolve_method(request.method_name(defaults.method), request.kind())
    model, roles = request_model(request.model, defaults)
    return Plan(
        method=name,
        model=model,
        roles=roles,
        sources=tuple(request.sources or defaults.sources),
        settings={**settings_for(name, defaults.methods), **request.settings},
        grounding=request.grounding or defaults.grounding,
    )
