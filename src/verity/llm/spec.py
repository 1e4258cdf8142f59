"""Model spec strings and per-role model sets.

make_model(ModelSettings(spec="local"))
make_model(ModelSettings(spec="local:/models/llama-3.1-8b.Q4_K_M.gguf"))
make_model(ModelSettings(spec="openai:gpt-4o-mini"))
make_model(ModelSettings(spec="openai:llama3.1", base_url="http://localhost:11434/v1"))

models = ModelSet(default=make_model(...), roles={"decomposer": make_model(...)})
models.for_role("judge")        # the default model, its calls labelled "judge"
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verity.errors import ConfigError, UnknownNameError
from verity.llm.base import ChatBackend, GenParams
from verity.llm.cache import ResponseCache
from verity.llm.client import ModelClient
from verity.llm.prices import Price, shipped_price
from verity.paths import cache_path

BACKENDS = ("local", "openai")


class ModelSettings(BaseModel):
    """Everything needed to build one model client; saved in run manifests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    spec: str = "local"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    seed: int | None = 0
    max_concurrency: int | None = Field(
        default=None,
        ge=1,
        description="calls in flight at once; unset, 8 per check the run has in flight",
    )
    timeout: float = Field(
        default=120.0,
        gt=0,
        description="openai models: seconds one attempt may take, the whole answer included",
    )
    retries: int = Field(default=3, ge=0)
    retry_backoff: float = Field(
        default=0.5, ge=0, description="openai models: the first wait before a retry, seconds"
    )
    max_response_bytes: int = Field(
        default=8 * 2**20, ge=1, description="openai models: the largest answer body accepted"
    )
    structured_mode: str = "auto"
    n_ctx: int = Field(default=4096, ge=256, description="local models: context window")
    repeat_penalty: float = Field(default=1.1, ge=1.0, description="local models only")
    threads: int | None = Field(default=None, ge=1, description="local models: CPU threads")
    cache: bool = True
    price: Price | None = Field(
        default=None,
        description="this model's price per million tokens; unset, verity's shipped price "
        "for a hosted model at its provider's endpoint (verity.llm.prices), else unknown",
    )

    def known_price(self) -> Price | None:
        """The price calls to this model are charged at: the one set, else a shipped one.

        The endpoint is the one the backend will call: ``base_url``, else
        ``$OPENAI_BASE_URL``, else OpenAI's own.
        """
        endpoint = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        return self.price or shipped_price(self.spec, endpoint)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``backend[:name]`` into its parts, checking the backend exists."""
    backend, _, name = spec.strip().partition(":")
    if backend not in BACKENDS:
        raise UnknownNameError("model backend", backend or spec, list(BACKENDS))
    if backend == "openai" and not name:
        raise ConfigError("an openai model spec names the model: openai:MODEL")
    return backend, name


def make_backend(settings: ModelSettings) -> ChatBackend:
    """The backend a spec names (built cheaply; local weights load on first call)."""
    backend, name = parse_spec(settings.spec)
    if backend == "local":
        from verity.llm.local_gguf import LocalBackend

        if settings.base_url:
            raise ConfigError("--base-url is for openai:MODEL specs, not for local models")
        return LocalBackend(
            name or None,
            n_ctx=settings.n_ctx,
            repeat_penalty=settings.repeat_penalty,
            threads=settings.threads,
        )
    from verity.llm.openai_compat import OpenAIBackend

    return OpenAIBackend(
        name,
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        timeout=settings.timeout,
        structured_mode=settings.structured_mode,
        # The SDK retries, so ModelClient does not (OpenAIBackend.retries_itself).
        retries=settings.retries,
        retry_backoff=settings.retry_backoff,
        max_response_bytes=settings.max_response_bytes,
    )


_shared_cache: dict[str, ResponseCache] = {}


def default_cache() -> ResponseCache:
    """The process-wide answer cache in the verity cache directory."""
    path = cache_path("llm", "answers.sqlite")
    return _shared_cache.setdefault(str(path), ResponseCache(path))


def make_model(settings: ModelSettings, *, role: str = "default") -> ModelClient:
    """A model client with the caching, limits and retries the settings ask for."""
    return ModelClient(
        make_backend(settings),
        cache=default_cache() if settings.cache else None,
        params=GenParams(
            temperature=settings.temperature, max_tokens=settings.max_tokens, seed=settings.seed
        ),
        max_concurrency=settings.max_concurrency,
        retries=settings.retries,
        role=role,
        price=settings.known_price(),
    )


class ModelSet:
    """The model for each agent role of a method, with one default for the rest."""

    def __init__(
        self, default: ModelClient, roles: Mapping[str, ModelClient] | None = None
    ) -> None:
        self.default = default
        self.roles = dict(roles or {})

    def for_role(self, role: str) -> ModelClient:
        """The model configured for this role, else the default labelled with the role."""
        chosen = self.roles.get(role)
        return chosen.with_role(role) if chosen else self.default.with_role(role)

    def clients(self) -> list[ModelClient]:
        """Every distinct client: the default and each role's own."""
        return [self.default, *self.roles.values()]

    def follow(self, checks: int) -> list[str]:
        """Let every client take the calls of ``checks`` checks at once; what caps it."""
        said = (client.follow(checks) for client in self.clients())
        return [line for line in said if line]

    def to_dict(self) -> dict[str, Any]:
        """Configuration of every model, for run manifests."""
        return {
            "default": self.default.to_dict(),
            "roles": {role: client.to_dict() for role, client in self.roles.items()},
        }

    @classmethod
    def from_settings(
        cls, default: ModelSettings, roles: Mapping[str, ModelSettings] | None = None
    ) -> ModelSet:
        """Build every client from settings."""
        return cls(
            make_model(default),
            {role: make_model(s, role=role) for role, s in (roles or {}).items()},
        )
