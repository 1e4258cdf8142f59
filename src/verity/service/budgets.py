"""What a request may spend and set: the server's ceilings, and the settings it may name.

    ceiling = ceiling_for(limits, default, key="alice")   # the key's own, else the server's
    budget = settled_budget(request.budget, ceiling)      # ApiError 422 above the ceiling
    check_request_settings("local", {"demos_file": "/x"}) # ApiError 400 server_setting

A request's budget may lower the ceiling, never raise it; the job keeps the budget it was
given (stored with its request), so a job run again after a restart has the same one. A
request may set only the settings its method's config declares as plain data
(`verity.methods.settings`): a setting that names a file, a folder, a checkpoint, a
dataset or a template is the operator's, refused before anything reads it.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from verity.config import ServiceLimits
from verity.llm.budget import LIMITS, Budget
from verity.methods.base import method_class
from verity.methods.settings import request_fields, what_it_names
from verity.service.errors import ApiError

_UNITS = {"calls": "calls", "tokens": "tokens", "seconds": "seconds", "cost": "US dollars"}


def ceiling_for(limits: ServiceLimits, default: Budget, key: str | None) -> Budget:
    """The most a check of ``key`` may spend: the key's own ceiling, else the server's.

    Each table is layered over the next: a limit the key's table leaves out is the
    server's, one the server's leaves out is ``default``'s (the ``[budget]`` table).
    """
    server = limits.budget.over(default) if limits.budget is not None else default
    if key is not None and key in limits.keys:
        return limits.keys[key].over(server)
    return server


def settled_budget(asked: Budget | None, ceiling: Budget) -> Budget:
    """The budget a job runs with: what the request asked, within the ceiling.

    A limit asked above the ceiling is a 422 naming the field and the ceiling (never
    the value sent); a limit not asked is the ceiling's.
    """
    if asked is None:
        return ceiling
    for name in LIMITS:
        mine, top = getattr(asked, name), getattr(ceiling, name)
        if mine is not None and top is not None and mine > top:
            raise ApiError(
                422,
                "invalid",
                f"budget.{name}: at most {top:g} {_UNITS[name]} a check here",
                field=f"budget.{name}",
            )
    return asked.within(ceiling)


def config_class(method: str) -> type[BaseModel] | None:
    """The settings model of a method (a plug-in without one: None)."""
    cls = method_class(method)
    if cls not in _CONFIGS:
        # Once per class: resolving the annotations evaluates each one again, and every
        # request submitted asks for its method's settings model. Two threads that
        # both miss resolve the same answer.
        _CONFIGS[cls] = _resolved_config(cls)
    return _CONFIGS[cls]


_CONFIGS: dict[type[Any], type[BaseModel] | None] = {}


def _resolved_config(cls: type[Any]) -> type[BaseModel] | None:
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation that does not resolve at run time
        return None
    config = hints.get("config")
    return config if isinstance(config, type) and issubclass(config, BaseModel) else None


def check_request_settings(method: str, given: Mapping[str, Any]) -> None:
    """400 ``server_setting`` for a setting a request may not set (naming it, not its value).

    Unknown names are left to the config's own validation (422 ``invalid``); a plug-in
    without a typed config takes no settings from a request at all.
    """
    if not given:
        return
    config = config_class(method)
    if config is None:
        name = sorted(given)[0]
        raise ApiError(
            400,
            "server_setting",
            f"settings.{name}: method {method} takes no settings from a request",
            field=f"settings.{name}",
        )
    allowed = request_fields(config)
    for name in sorted(given):
        field = config.model_fields.get(name)
        if field is None or name in allowed:
            continue
        names = what_it_names(field) or "something only the operator may choose"
        raise ApiError(
            400,
            "server_setting",
            f"settings.{name} names {names}: it is set by the server's operator "
            "(verity.toml), not by a request",
            field=f"settings.{name}",
            valid=sorted(allowed),
        )
