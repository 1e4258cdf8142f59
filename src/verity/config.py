"""Settings from command-line options, then a TOML file, then environment variables.

    settings = load_settings(overrides={"method": "direct"}, config_file=Path("verity.toml"))

A ``verity.toml`` looks like this (every key optional)::

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

Environment variables: ``VERITY_METHOD``, ``VERITY_MODEL``, ``VERITY_BASE_URL``,
``VERITY_API_KEY_ENV``, ``VERITY_SOURCES`` (comma-separated), ``VERITY_CONFIG`` (a TOML
path). Secrets are never stored in settings, only the name of the variable holding them.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verity.errors import BadInputError, ConfigError
from verity.llm.spec import ModelSettings

DEFAULT_CONFIG_FILE = "verity.toml"


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
    return found


def _from_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise BadInputError(f"cannot read config file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BadInputError(f"config file {path} is not valid TOML: {exc}") from exc


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
    """Settings with command-line overrides over the TOML file over environment variables.

    The file is ``config_file`` if given, else ``$VERITY_CONFIG``, else ``verity.toml`` in
    the working directory when it exists. Overrides use the file's shape
    (``{"model": {"spec": "local"}}``); keys whose value is None are ignored.
    """
    env = os.environ if env is None else env
    layered = _from_env(env)
    path = config_file or (Path(env["VERITY_CONFIG"]) if env.get("VERITY_CONFIG") else None)
    if path is None:
        default = (cwd or Path.cwd()) / DEFAULT_CONFIG_FILE
        path = default if default.is_file() else None
    if path is not None:
        layered = _merge(layered, _from_file(path))
    layered = _merge(layered, _drop_none(overrides or {}))
    try:
        return Settings.model_validate(layered)
    except ValidationError as exc:
        where = f" in {path}" if path else ""
        raise ConfigError(f"invalid settings{where}: {exc}") from exc


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
