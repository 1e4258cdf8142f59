"""Human-readable terminal output for the CLI."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from verity.domain import Article, Label, Verdict
from verity.errors import ConfigError

_COLOURS = {
    Label.SUPPORTED: "green",
    Label.REAL: "green",
    Label.REFUTED: "red",
    Label.FAKE: "red",
    Label.NOT_ENOUGH_INFO: "yellow",
    Label.CONFLICTING: "magenta",
}


def article_heading(article: Article, width: int = 80) -> str:
    """How an article is named on screen: its title, else the start of its text."""
    if article.title.strip():
        return " ".join(article.title.split())
    text = " ".join(article.text.split())
    return text if len(text) <= width else text[:width].rstrip() + " ..."


def verdict(console: Console, v: Verdict) -> None:
    """The article checked, if any; label, confidence, explanation, evidence and cost."""
    if isinstance(v.subject, Article):
        # The article came from a file: say which one the verdict is about.
        console.print(f"[bold]Article:[/] {escape(article_heading(v.subject))}", highlight=False)
    colour = _COLOURS.get(v.label, "white")
    confidence = "n/a" if v.confidence is None else f"{v.confidence:.2f}"
    console.print(f"[bold {colour}]{v.label.value}[/]  confidence {confidence}  ({v.method})")
    if v.explanation:
        console.print(v.explanation, highlight=False)
    if v.evidence:
        console.print("\n[bold]Evidence[/]")
        for i, ev in enumerate(v.evidence, start=1):
            where = ev.url or ev.id or ""
            console.print(
                f"[{i}] [bold]{ev.title or ev.source}[/] ({ev.source}) {where}", highlight=False
            )
            snippet = ev.text if len(ev.text) <= 300 else ev.text[:300].rstrip() + " ..."
            console.print(f"    {snippet}", highlight=False, style="dim")
    u = v.usage
    console.print(
        f"\n{u.llm_calls} model call(s), {u.prompt_tokens}+{u.completion_tokens} tokens, "
        f"{u.seconds:.1f} s in the model",
        style="dim",
    )


def models(console: Console, settings: Any) -> None:
    """The backends, the embedded model, and the configured model per role."""
    from verity.llm.local_gguf import embedded_model_path

    table = Table("spec", "what", "status")
    try:
        path = embedded_model_path()
        status = "ready" if path.is_file() else f"missing: {path}"
    except ConfigError as exc:
        status = str(exc)
    table.add_row("local", "embedded SmolLM2-135M-Instruct (llama.cpp, in process)", status)
    table.add_row("local:/path/model.gguf", "any GGUF file (llama.cpp, in process)", "")
    key_env = settings.model.api_key_env
    table.add_row(
        "openai:MODEL",
        "any OpenAI-compatible endpoint (--base-url for Ollama, vLLM, llama.cpp, ...)",
        f"{key_env} {'set' if os.environ.get(key_env) else 'not set'}",
    )
    console.print(table)
    roles = Table("role", "model", "base url")
    roles.add_row("default", settings.model.spec, settings.model.base_url or "")
    for role, spec in settings.roles.items():
        roles.add_row(role, spec.spec, spec.base_url or "")
    console.print(roles)


def sources(console: Console, settings: Any) -> None:
    """Every registered source with whether it can be used now."""
    from verity.sources.registry import source_status

    table = Table("source", "what", "status")
    for name, what, status in source_status():
        table.add_row(name, what, status)
    console.print(table)
    console.print(f"configured: {', '.join(settings.sources)}")


def corpus_info(console: Console, err: Console, info: Any) -> None:
    """What an index build did, with every skipped line."""
    for bad in getattr(info, "skipped", ()):
        err.print(f"[yellow]skipped: {bad}[/]", highlight=False)
    console.print(
        f"indexed {info.documents} document(s) as {info.passages} passage(s) "
        f"into corpus {info.name!r} ({info.path}); use --source corpus:{info.name}",
        highlight=False,
    )
