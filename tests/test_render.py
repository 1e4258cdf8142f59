"""Human-readable output: an article is named by its title, else the start of its text."""

from __future__ import annotations

from rich.console import Console

from verity import render
from verity.domain import Article, Claim, Label, Verdict


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
