"""Articles in the baselines' prompts: the judgement contract, the capped text, the query.

    article = Article(title="Moon landing faked", text="...", date=date(2020, 5, 1))
    truncate_words(article.text, 600)   # the text a model is shown
    article_context(article)            # the lines 'Title: ...' and 'Date: 2020-05-01'
    retrieval_query(article)            # 'Moon landing faked': the title, else 1st sentence

The embedded model has a small context window, so the article text shown to a model is
cut to a number of words (a method setting); the retrieval query is short on purpose, as
a whole article makes a poor search query.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Literal

from pydantic import BaseModel, Field

from verity.domain import Article
from verity.methods.common import Confidence
from verity.nlp.text import split_sentences

ArticleLabel = Literal["REAL", "FAKE"]

MAX_QUERY_CHARS = 300
# The first sentence lies in the first paragraph; splitting only the head of a long
# article keeps the query cheap and cannot change where that sentence ends.
_QUERY_HEAD_CHARS = 4 * MAX_QUERY_CHARS
_WORD = re.compile(r"\S+")


class ArticleJudgement(BaseModel):
    """A model's judgement of a news article; the explanation comes first so it can reason.

    No length limits on strings, for the reason `ClaimJudgement` gives.
    """

    explanation: str
    label: ArticleLabel
    confidence: Confidence


class CitedArticleJudgement(ArticleJudgement):
    """An article judgement that names the numbered passages it relies on."""

    cited: list[int] = Field(default_factory=list)


def truncate_words(text: str, max_words: int) -> str:
    """The first ``max_words`` words of ``text`` with its line breaks, ``" ..."`` if cut.

    truncate_words("one two  three", 2)    # 'one two ...'
    """
    words = list(islice(_WORD.finditer(text), max_words + 1))
    if len(words) <= max_words:
        return text.strip()
    return text[: words[max_words - 1].end()].strip() + " ..."


def article_context(article: Article) -> str:
    """Title, date and URL lines for prompts, each where the article has it."""
    lines = []
    if article.title.strip():
        lines.append(f"Title: {article.title.strip()}")
    if article.date:
        lines.append(f"Date: {article.date.isoformat()}")
    if article.url:
        lines.append(f"URL: {article.url}")
    return "".join(line + "\n" for line in lines)


def retrieval_query(article: Article, max_chars: int = MAX_QUERY_CHARS) -> str:
    """What to search for: the title, else the first sentence, at most ``max_chars``.

    retrieval_query(Article(text="The mayor resigned. More soon."))   # 'The mayor resigned.'
    """
    if article.title.strip():
        query = article.title
    else:
        sentences = split_sentences(article.text[:_QUERY_HEAD_CHARS])
        query = sentences[0] if sentences else article.text
    return _cap(query, max_chars)


def _cap(text: str, max_chars: int) -> str:
    """Whitespace collapsed, then cut at the last word boundary within ``max_chars``."""
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    head = flat[: max_chars + 1]
    # A single word longer than the cap is cut inside the word rather than dropped.
    cut = head.rsplit(" ", 1)[0] if " " in head else flat[:max_chars]
    return cut.rstrip()
