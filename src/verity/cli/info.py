"""``verity methods``, ``models`` and ``sources``: what is there and what is ready."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from verity.cli.output import ConfigOpt, out

if TYPE_CHECKING:
    from verity.methods.base import MethodInfo


def methods() -> None:
    """List every method and baseline with its paper, what it checks and its variants.

    A baseline that stands in for part of its published method says so after its paper
    (its ``substitute``), so no one takes the row for the method as published.
    """
    from verity import render
    from verity.methods.base import method_catalog

    render.methods(out, [with_substitute(info) for info in method_catalog()])


def with_substitute(info: MethodInfo) -> MethodInfo:
    """The catalogue entry, its paper followed by ``[substitute: ...]`` when one is declared."""
    from verity.methods.base import method_class

    if info.error:
        return info
    note = str(getattr(method_class(info.name), "substitute", ""))
    return replace(info, paper=f"{info.paper} [substitute: {note}]") if note else info


def models(config: ConfigOpt = None) -> None:
    """List model backends and the models configured for each role."""
    from verity import render
    from verity.config import settings_from_options

    render.models(out, settings_from_options(config))


def sources(config: ConfigOpt = None) -> None:
    """List evidence sources, whether each is ready, and the corpora built."""
    from verity import render
    from verity.config import settings_from_options

    render.sources(out, settings_from_options(config))
