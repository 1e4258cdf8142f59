"""Human-readable terminal output for the CLI.

Every string that comes from outside verity's own code (claims, articles, model answers,
web pages, file and source names, error messages that quote them) is shown as text, never
interpreted. It never enters a markup string: `text` makes a rich ``Text`` of it (which
rich does not parse), after `clean` has removed terminal control sequences. So ``[/]``
in an explanation prints as ``[/]``, and an escape sequence in a web page does nothing.

    console.print(Text.assemble(("Title: ", "bold"), text(title)))
"""

from __future__ import annotations

import os
import re
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from verity.domain import FACTUAL_STATUSES, Article, Grounding, Label, Usage, Verdict
from verity.errors import ConfigError
from verity.redact import redact_url

# ESC sequences (CSI, OSC up to BEL or ST, and two-byte escapes), then any remaining C0
# control but tab and newline, DEL and the C1 controls: a web page or a model answer can
# carry them, and a terminal would act on them (move the cursor, set the title, hide text).
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: object) -> str:
    r"""The text without terminal control sequences (tab and newline kept).

    clean("ok]0;pwned done")   # 'ok done'
    """
    # A lone surrogate (a model may send one, JSON-escaped) cannot be written to a
    # terminal at all: it is shown as the replacement character.
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", str(text)))


def text(value: object, style: str = "") -> Text:
    """Untrusted text as a rich ``Text``: cleaned, styled, never read as markup or emoji."""
    return Text(clean(value), style=style)


LABEL_COLOURS = {
    Label.SUPPORTED: "green",
    Label.REAL: "green",
    Label.REFUTED: "red",
    Label.FAKE: "red",
    Label.NOT_ENOUGH_INFO: "yellow",
    Label.CONFLICTING: "magenta",
    # Check-worthiness says nothing of truth: colours apart from the true/false ones.
    Label.CHECK_WORTHY: "cyan",
    Label.NOT_CHECK_WORTHY: "blue",
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
        console.print(Text.assemble(("Article: ", "bold"), text(article_heading(v.subject))))
    colour = LABEL_COLOURS.get(v.label, "white")
    confidence = "n/a" if v.confidence is None else f"{v.confidence:.2f}"
    console.print(
        Text.assemble(
            (v.label.value, f"bold {colour}"), f"  confidence {confidence}  (", text(v.method), ")"
        )
    )
    if v.explanation:
        console.print(text(shown_explanation(v)))
    if v.grounding is not None:
        grounding(console, v.grounding, v.label.value)
    if v.evidence:
        console.print(Text("\nEvidence", style="bold"))
        for i, ev in enumerate(v.evidence, start=1):
            where = ev.url or ev.id or ""
            console.print(
                Text.assemble(
                    f"[{i}] ",
                    text(ev.title or ev.source, "bold"),
                    " (",
                    text(ev.source),
                    ") ",
                    text(where),
                )
            )
            snippet = ev.text if len(ev.text) <= 300 else ev.text[:300].rstrip() + " ..."
            console.print(text(f"    {snippet}", "dim"))
    console.print("\n" + usage_line(v.usage), style="dim")


_MARKS = {"contradicted": ("contradicted", "bold red"), "unsupported": ("not supported", "yellow")}


def grounding(console: Console, g: Grounding, label: str) -> None:
    """How the explanation stands on what it cites: a warning, then the sentences at fault.

    A verdict is never relabelled: a flagged one keeps its label, and says why it should
    not be taken at its word.
    """
    if g.error:
        console.print(text(f"Grounding not checked: {g.error}", "dim"))
        return
    if g.consistent_with_label is False:
        console.print(text(f"warning: the explanation argues against {label}", "bold red"))
    if g.mode == "strict" and g.flags:
        console.print(
            text(f"UNGROUNDED ({', '.join(g.flags)}): read this verdict with care", "bold red")
        )
    for sentence in g.sentences:
        mark = _MARKS.get(sentence.status)
        if mark is None:
            continue
        cites = f" (cites {', '.join(sentence.cites)})" if sentence.cites else ""
        console.print(Text.assemble((f"  {mark[0]}: ", mark[1]), text(sentence.text + cites)))
    factual = [s for s in g.sentences if s.status in FACTUAL_STATUSES]
    supported = sum(s.status == "supported" for s in factual)
    console.print(
        text(
            f"grounded: {supported} of {len(factual)} factual sentence(s) supported by what "
            f"they cite, checked by {g.checker}",
            "dim",
        )
    )


def usage_line(u: Usage) -> str:
    """A check's calls, tokens, time and cost on one line."""
    from verity.llm.prices import cost_phrase

    return (
        f"{u.llm_calls} model call(s), {u.critical_calls} one after another, "
        f"{u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f} s in the model, "
        f"{u.wall_seconds:.1f} s in all, {cost_phrase(u)}"
    )


_SENTENCE_END = re.compile(r"""[.!?…]["')\]]*(?=\s|$)""")
CUT_MARK = " [cut at the token limit]"


def shown_explanation(v: Verdict) -> str:
    """The explanation to print; cut to its last full sentence if the model was cut off.

    The model's final call stopping at ``max_tokens`` (finish reason ``length``) leaves
    the explanation mid-sentence; the screen shows the sentences that are whole and says
    so. The JSON output and the trace keep the text as it came.
    """
    text = v.explanation.strip()
    last = v.trace.calls[-1] if v.trace.calls else None
    if last is None or last.finish_reason != "length" or _SENTENCE_END.search(text[-4:]):
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return (text[: ends[-1]] if ends else text) + CUT_MARK


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
        text(f"{key_env} {'set' if os.environ.get(key_env) else 'not set'}"),
    )
    console.print(table)
    roles = Table("role", "model", "base url")
    roles.add_row(
        "default", text(settings.model.spec), text(redact_url(settings.model.base_url or ""))
    )
    for role, spec in settings.roles.items():
        roles.add_row(text(role), text(spec.spec), text(redact_url(spec.base_url or "")))
    console.print(roles)


def methods(console: Console, infos: Any) -> None:
    """Every registered method: its paper, what it checks and its named variants."""
    table = Table("method", "paper", "checks", "variants")
    for info in infos:
        if info.error:
            table.add_row(text(info.name), text(info.error, "red"), "", "")
            continue
        kinds = ", ".join(f"{kind}s" for kind in info.accepts)
        variants = ", ".join(f"{info.name}/{v}" for v in info.variants)
        table.add_row(text(info.name), text(info.paper), text(kinds), text(variants))
    console.print(table)


def sources(console: Console, settings: Any) -> None:
    """Every registered source with whether it can be used now."""
    from verity.sources.registry import source_status

    table = Table("source", "what", "status")
    for name, what, status in source_status():
        table.add_row(text(name), text(what), text(status))
    console.print(table)
    console.print(text(f"configured: {', '.join(settings.sources)}"))


def corpus_info(console: Console, err: Console, info: Any) -> None:
    """What an index build did, with every skipped line."""
    for bad in getattr(info, "skipped", ()):
        err.print(text(f"skipped: {bad}", "yellow"))
    console.print(
        text(
            f"indexed {info.documents} document(s) as {info.passages} passage(s) "
            f"into corpus {info.name!r} ({info.path}); use --source corpus:{info.name}"
        )
    )
