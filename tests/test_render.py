"""Human-readable output: an article is named by its title, else the start of its text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from verity import render
from verity.domain import Article, Claim, Evidence, Label, ModelCall, Trace, Verdict


def test_article_heading() -> None:
    assert render.article_heading(Article(title="  Tower\n sold ", text="Body.")) == "Tower sold"
    text = "word " * 30
    heading = render.article_heading(Article(text=text))
    assert heading == ("word " * 16).strip() + " ..."  # 80 characters, then the mark
    assert render.article_heading(Article(text="Short\n\nbody.")) == "Short body."


def test_verdict_names_the_article_but_not_a_claim() -> None:
    console = Console(record=True, width=120)
    article = Article(title="[Breaking] Tower sold", text="Body.")
    render.verdict(console, Verdict(label=Label.FAKE, method="direct", subject=article))
    shown = console.export_text()
    assert shown.splitlines()[0] == "Article: [Breaking] Tower sold"  # brackets are not markup
    assert "FAKE  confidence n/a  (direct)" in shown
    console = Console(record=True, width=120)
    claim = Claim(text="Paris is in France.")
    render.verdict(console, Verdict(label=Label.SUPPORTED, method="rag", subject=claim))
    assert console.export_text().startswith("SUPPORTED")


# -- untrusted text is shown as text -------------------------------------------------------

MARKUP = [
    "[/]", "[bold red]x[/bold red]", "[link=file:///etc/passwd]y[/link]", "\\[", "[", "[/x]",
    "\\\\[b]", "ends with \\", ":smile: :warning:", "[@click=quit]z[/]",
]  # fmt: skip


def _shown(verdict: Verdict) -> str:
    console = Console(record=True, width=200, force_terminal=True)
    render.verdict(console, verdict)
    return console.export_text()


@pytest.mark.parametrize("markup", MARKUP)
def test_markup_in_any_field_prints_as_written(markup: str) -> None:
    evidence = Evidence(
        text=f"text {markup}", title=f"title {markup}", source=f"src {markup}",
        url=f"https://x.example/{markup}",
    )  # fmt: skip
    verdict = Verdict(
        label=Label.FAKE,
        method=f"m{markup}",
        explanation=f"because {markup}.",
        evidence=(evidence,),
        subject=Article(title=f"T {markup}", text="Body."),
    )
    shown = _shown(verdict)
    for written in (f"T {markup}", f"(m{markup})", f"because {markup}.", f"title {markup}",
                    f"(src {markup})", f"text {markup}"):  # fmt: skip
        assert written in shown


@pytest.mark.parametrize(
    ("name", "sgr"),
    # Colours apart from the truth labels' green, red, yellow and magenta: cyan and blue
    # (ANSI SGR 36 and 34, bold being 1).
    [("CHECK_WORTHY", "\x1b[1;36m"), ("NOT_CHECK_WORTHY", "\x1b[1;34m")],
)
def test_a_check_worthiness_label_has_its_own_colour(name: str, sgr: str) -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=120)
    verdict = Verdict(label=Label(name), method="m", subject=Claim(text="Crime rose 12%."))
    render.verdict(console, verdict)
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"{sgr}{name}" in shown


def test_terminal_control_sequences_are_removed() -> None:
    nasty = "ok\x1b]0;owned\x07 \x1b[2J\x1b[31mred\x1b[0m \x9b1m\x07bell\x00nul\x7f tab\there\nline"
    assert render.clean(nasty) == "ok red bellnul tab\there\nline"
    verdict = Verdict(
        label=Label.SUPPORTED,
        method="rag",
        explanation=nasty,
        evidence=(Evidence(text=nasty, title=nasty, source="web"),),
        subject=Claim(text="x"),
    )
    console = Console(file=io.StringIO(), width=200, force_terminal=True, color_system=None)
    render.verdict(console, verdict)
    raw = console.file.getvalue()
    assert "\x1b]" not in raw and "\x07" not in raw and "\x9b" not in raw and "\x00" not in raw
    assert "\x1b[2J" not in raw


def _cut(explanation: str, finish: str | None) -> Verdict:
    call = ModelCall(step="s", backend="b", model="m", messages=(), output="", finish_reason=finish)
    return Verdict(
        label=Label.SUPPORTED, method="rag", explanation=explanation,
        trace=Trace(calls=(call,)), subject=Claim(text="x"),
    )  # fmt: skip


def test_an_explanation_cut_at_the_token_limit_ends_on_its_last_full_sentence() -> None:
    cut = _cut("The tower is in Paris [1]. It was built in 1889 for the", "length")
    assert render.shown_explanation(cut) == "The tower is in Paris [1]." + render.CUT_MARK
    assert "for the" in cut.to_json_dict()["explanation"]  # the record keeps every word
    assert render.shown_explanation(_cut("No sentence ends here", "length")) == (
        "No sentence ends here" + render.CUT_MARK
    )
    whole = "The tower is in Paris. It was built in 1889."
    assert render.shown_explanation(_cut(whole, "length")) == whole
    assert render.shown_explanation(_cut("Ends without a stop", "stop")) == "Ends without a stop"
    assert render.CUT_MARK in _shown(cut)


def test_a_lone_surrogate_from_a_model_prints_as_a_replacement() -> None:
    verdict = Verdict(
        label=Label.SUPPORTED, method="rag", explanation="odd \ud800 text", subject=Claim(text="x")
    )
    console = Console(file=io.StringIO(), width=100)
    render.verdict(console, verdict)
    shown = console.file.getvalue()
    shown.encode("utf-8")  # strict: a surrogate would raise here, as on a real terminal
    assert "odd \ufffd text" in shown
