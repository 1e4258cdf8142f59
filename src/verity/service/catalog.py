"""What a server offers: its methods, sources and models, and which of them a request may name.

    methods_info()                                  # every registered method, one line each
    sources_info(("offline-wiki",))                 # every source; offline or not
    models_info("local", ("local", "openai:m"))     # the default and the accepted specs
    requestable_source("corpus:mine", configured=("corpus:mine",))   # True

A request may name any registered method (or ``method/variant``), any model spec the
operator listed with ``--model``, and any source by its bare name or exactly as the
operator configured it. A source's argument (a corpus name, a SearXNG URL) is the
operator's choice, not a client's: an argument can point the server at a URL of the
client's choosing. Models are listed by the operator for the same reason, and because a
``local:PATH`` would load a file of the client's choosing.
"""

from __future__ import annotations

from typing import Any

from verity.api import DEFAULT_METHODS
from verity.domain import Article, Claim
from verity.methods.base import method_class, method_names
from verity.methods.settings import request_fields
from verity.service.budgets import config_class
from verity.service.responses import (
    Kind,
    MethodInfo,
    ModelKind,
    ModelsInfo,
    SourceInfo,
    SourcesInfo,
)
from verity.sources.registry import source_names, source_status

# Specs that need no network (their data is on this machine once installed or built).
OFFLINE_SOURCES = frozenset(
    {
        "offline-wiki",
        "corpus:NAME",
        "arxiv:offline",
        "factcheck:offline",
        "news-offline",
        "kg-local",
    }
)
MODEL_KINDS = (
    ModelKind(spec="local", description="the embedded model (llama.cpp, in the server)"),
    ModelKind(spec="local:PATH", description="a GGUF file on the server (operator's choice)"),
    ModelKind(spec="openai:MODEL", description="an OpenAI-compatible endpoint"),
)


def kind_name(kind: type[Claim] | type[Article]) -> Kind:
    """``claim`` or ``article``."""
    return "claim" if kind is Claim else "article"


def description(cls: type) -> str:
    """A method's one line: its ``description`` attribute, else its docstring's first line."""
    said = getattr(cls, "description", None)
    if isinstance(said, str) and said.strip():
        return said.strip().splitlines()[0]
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def methods_info() -> list[MethodInfo]:
    """Every registered method that loads, with what it checks and its variants."""
    found = []
    for name in method_names():
        try:
            cls = method_class(name)
        except ImportError:
            continue  # a broken plug-in is left out, not an error of the whole list
        accepts = [kind_name(k) for k in getattr(cls, "accepts", ())]
        found.append(
            MethodInfo(
                name=name,
                description=description(cls),
                accepts=accepts,
                variants=[f"{name}/{v}" for v in getattr(cls, "variants", {})],
                default_for=[kind_name(k) for k, m in DEFAULT_METHODS.items() if m == name],
                settings=request_settings(name),
            )
        )
    return found


def request_settings(method: str) -> dict[str, dict[str, Any]]:
    """The JSON schema of each setting a request may give ``method`` (bounds included)."""
    config = config_class(method)
    if config is None:
        return {}
    allowed = request_fields(config)
    properties = config.model_json_schema(mode="validation").get("properties", {})
    return {name: schema for name, schema in properties.items() if name in allowed}


def requestable_source(spec: str, configured: tuple[str, ...]) -> bool:
    """Whether a request may name this source: a bare registered name, or as configured."""
    if spec in configured:
        return True
    name, sep, _ = spec.partition(":")
    return not sep and name in source_names()


def sources_info(configured: tuple[str, ...]) -> SourcesInfo:
    """Every source known here, and the ones a check uses when a request names none."""
    rows = []
    for name, what, status in source_status():
        bare = name.split("[")[0]
        rows.append(
            SourceInfo(
                name=name,
                description=what,
                status=status,
                offline=bare in OFFLINE_SOURCES,
                requestable=requestable_source(bare, configured),
            )
        )
    listed = {row.name.split("[")[0] for row in rows}
    for spec in configured:
        if spec not in listed:  # a configured spec with its argument: corpus:mine
            rows.append(
                SourceInfo(
                    name=spec,
                    description="configured on this server",
                    status="configured",
                    offline=spec.partition(":")[0] in {"corpus", "kg-local"},
                    requestable=True,
                )
            )
    return SourcesInfo(default=list(configured), sources=rows)


def models_info(default: str, accepted: tuple[str, ...]) -> ModelsInfo:
    """The model a check uses when none is named, and every spec a request may name."""
    return ModelsInfo(default=default, accepted=list(accepted), kinds=list(MODEL_KINDS))
