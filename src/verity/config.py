"""Settings from command-line options, then environment variables, then a TOML file.

    settings = load_settings(overrides={"method": "direct"}, config_file=Path("verity.toml"))

Precedence, highest first: command-line options, environment variables, the TOML file,
the defaults. A ``verity.toml`` looks like this (every key optional)::

    method = "rag"              # unset: rag for claims, zofia for articles
    sources = ["offline-wiki", "wikipedia"]

    [model]                     # the default model for every agent role
    spec = "openai:gpt-4o-mini"
    api_key_env = "OPENAI_API_KEY"
    temperature = 0.0

    [roles.decomposer]          # a different model for one role
    spec = "openai:llama3.1"
    base_url = "http://localhost:11434/v1"

    [methods.rag]               # a method's own settings
    k = 5

    [limits]                    # size limits (verity.limits)
    claim_chars = 2000

    [budget]                    # what one check may spend (verity.llm.budget)
    calls = 60
    cost = 0.10

    [run_budget]                # what a whole batch, benchmark or reproduction may spend
    cost = 20.0

    [prices."openai:my-model"]  # US dollars per million tokens (verity.llm.prices)
    input = 0.20
    output = 0.80

    [service]                   # verity serve only (docs/service.md)
    calls_per_minute = 600      # model calls a minute per API key
    [service.budget]            # the most one check may spend on the server
    calls = 300
    [service.keys.newsroom]     # one key's own ceiling, in place of [service.budget]
    cost = 0.50

Environment variables: ``VERITY_METHOD``, ``VERITY_MODEL``, ``VERITY_BASE_URL``,
``VERITY_API_KEY_ENV``, ``VERITY_SOURCES`` (comma-separated), ``VERITY_MAX_CLAIM_CHARS``
and the other limits of `verity.limits.ENV_VARS`, ``VERITY_CONFIG`` (a TOML path).
Secrets are never stored in settings, only the name of the variable holding them.

Anything wrong with the configuration (a file that cannot be read, is not UTF-8, is not
TOML, or holds an unknown key or a bad value; an environment variable out of shape) is a
`ConfigError`: exit code 3, whatever the kind of mistake.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from verity.errors import ConfigError
from verity.limits import Limits, limits_from_env
from verity.llm.budget import Budget
from verity.llm.prices import Price
from verity.llm.spec import ModelSettings

DEFAULT_CONFIG_FILE = "verity.toml"
# What a check may spend when nothing says otherwise: no check runs without a budget.
# Far above what any method needs on any example of the papers' datasets (ToE's full
# setting makes a few hundred calls a claim), far below a runaway loop's bill.
DEFAULT_BUDGET = Budget(calls=2000, seconds=3600)
# A settings file is a few dozen lines; anything this large is the wrong file.
MAX_CONFIG_BYTES = 1 << 20


class ServiceLimits(BaseModel):
    """What checks may spend on a server: per check, per key, and calls and tokens a minute.

    ``budget`` is every check's ceiling on the server (unset: the ``[budget]`` table);
    ``keys`` gives a key its own ceiling in its place. A request may ask for less, never
    more. ``calls_per_minute`` and ``tokens_per_minute`` bound each key's model calls and
    tokens over any 60 seconds (all checks together when the server has no keys).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: Budget | None = None
    keys: dict[str, Budget] = Field(default_factory=dict)
    calls_per_minute: int | None = Field(default=None, ge=1, le=10_000_000)
    tokens_per_minute: int | None = Field(default=None, ge=1, le=10**11)


class Settings(BaseModel):
    """Everything a ``verity check`` or benchmark run needs to know.

    ``method`` None means the default for what is checked (`verity.api.resolve_method`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str | None = None
    model: ModelSettings = ModelSettings()
    roles: dict[str, ModelSettings] = Field(default_factory=dict)
    sources: tuple[str, ...] = ("offline-wiki",)
    methods: dict[str, dict[str, Any]] = Field(default_factory=dict)
    limits: Limits = Limits()
    budget: Budget = DEFAULT_BUDGET
    run_budget: Budget = Budget()
    prices: dict[str, Price] = Field(default_factory=dict)
    service: ServiceLimits = ServiceLimits()
    # Each verdict's explanation checked against what it cites (`verity.grounding`): on
    # for ``verity check``, batches and the service; ``grounding = "off"`` in a settings
    # file (or ``--grounding off``) restores a check's cost exactly.
    grounding: Literal["off", "on", "strict"] = "on"
    # Who checks it: "model" (the ``grounding`` role's model) or "nli:DIR", a local NLI
    # checkpoint folder (the server's own: a request cannot name one).
    grounding_checker: str = "model"

    @field_validator("budget")
    @classmethod
    def _layered(cls, budget: Budget) -> Budget:
        # A [budget] table that sets one limit keeps the default's others: a cost limit
        # alone would otherwise leave an unpriced model without any limit at all.
        return budget.over(DEFAULT_BUDGET)

    @model_validator(mode="after")
    def _priced(self) -> Settings:
        # A [prices."SPEC"] entry prices every model of that spec, unless one says its own.
        if not self.prices:
            return self
        model = self.priced(self.model)
        roles = {role: self.priced(m) for role, m in self.roles.items()}
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "roles", roles)
        return self

    def priced(self, model: ModelSettings) -> ModelSettings:
        """``model`` with the price of its spec from ``[prices]``, unless it has its own."""
        if model.price is not None or model.spec not in self.prices:
            return model
        return model.model_copy(update={"price": self.prices[model.spec]})

    def with_model(self, spec: str, base: ModelSettings | None = None) -> ModelSettings:
        """``base`` (the default model) with another spec, and that spec's price.

        What a named model runs with: the endpoint and generation settings stay, the price
        is the new spec's, never the old one's.
        """
        model = (base or self.model).model_copy(update={"spec": spec, "price": None})
        return self.priced(model)


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    model: dict[str, Any] = {}
    if env.get("VERITY_METHOD"):
        found["method"] = env["VERITY_METHOD"]
    if env.get("VERITY_SOURCES"):
        found["sources"] = [s.strip() for s in env["VERITY_SOURCES"].split(",") if s.strip()]
    for var, key in (
        ("VERITY_MODEL", "spec"),
        ("VERITY_BASE_URL", "base_url"),
        ("VERITY_API_KEY_ENV", "api_key_env"),
    ):
        if env.get(var):
            model[key] = env[var]
    if model:
        found["model"] = model
    limits = limits_from_env(env)
    if limits:
        found["limits"] = limits
    return found


def _from_file(path: Path) -> dict[str, Any]:
    try:
        if path.exists() and not path.is_file():
            raise ConfigError(f"config file {path} is not a regular file")
        with path.open("rb") as fh:
            blob = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    if len(blob) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid UTF-8 (byte {exc.start + 1})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def load_settings(
    *,
    overrides: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Settings with command-line overrides over environment variables over the TOML file.

    The file is ``config_file`` if given, else ``$VERITY_CONFIG``, else ``verity.toml`` in
    the working directory when it exists. Overrides use the file's shape
    (``{"model": {"spec": "local"}}``); keys whose value is None are ignored.
    """
    env = os.environ if env is None else env
    path = config_file or (Path(env["VERITY_CONFIG"]) if env.get("VERITY_CONFIG") else None)
    if path is None:
        default = (cwd or Path.cwd()) / DEFAULT_CONFIG_FILE
        path = default if default.is_file() else None
    layered = _from_file(path) if path is not None else {}
    layered = _merge(layered, _from_env(env))
    layered = _merge(layered, _drop_none(overrides or {}))
    try:
        return Settings.model_validate(layered)
    except ValidationError as exc:
        where = f" (file {path}, environment and options)" if path else ""
        raise ConfigError(f"invalid settings{where}: {_problems(exc)}") from exc


def settings_from_options(
    config: Path | None,
    *,
    method: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    sources: list[str] | None = None,
) -> Settings:
    """The settings a command runs with, given its command-line options.

    A model named on the command line is the model: it replaces per-role models too.
    """
    overrides: dict[str, Any] = {
        "method": method,
        "sources": sources or None,
        "model": {"spec": model, "base_url": base_url, "api_key_env": api_key_env},
    }
    settings = load_settings(overrides=overrides, config_file=config)
    if model is not None:
        settings = settings.model_copy(update={"roles": {}})
    return settings


def _problems(exc: ValidationError) -> str:
    """Each bad key with what is wrong, without echoing values (they may be secrets)."""
    found = []
    for error in exc.errors()[:10]:
        where = ".".join(str(part) for part in error["loc"]) or "settings"
        found.append(f"{where}: {error['msg']}")
    return "; ".join(found)


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            inner = _drop_none(value)
            if inner:
                cleaned[key] = inner
        elif value is not None:
            cleaned[key] = value
    return cleaned
