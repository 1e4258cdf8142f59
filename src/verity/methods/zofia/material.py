"""The material ZoFia's agents read: the multi-source information matrix as prompt text.

The matrix has four quadrants (paper section 3): what the article itself says (in-news),
what the model already knows, encyclopaedic background (Wikipedia) and recent evidence
(the web). Agents see only the quadrants their role allows: the linguist reads the
article; the domain expert adds Wikipedia; the debaters and the judge get everything,
including the other agents' reports.

Blocks always come in the same order so that prompts over one article share their start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verity.domain import Article, Evidence


def truncate_words(text: str, max_words: int) -> str:
    """At most ``max_words`` words, marked with `` ...`` when cut."""
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]) + " ..."


def clip(text: str, max_chars: int) -> str:
    """At most ``max_chars`` characters, marked with `` ...`` when cut."""
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + " ..."


def article_block(article: Article, max_words: int) -> str:
    """The article with its title and date."""
    lines = ["News article"]
    if article.title:
        lines.append(f"Title: {article.title}")
    if article.date:
        lines.append(f"Published: {article.date.isoformat()}")
    lines.append(f"Text: {truncate_words(article.text, max_words)}")
    return "\n".join(lines)


def passages_block(heading: str, tag: str, passages: Sequence[Evidence], max_chars: int) -> str:
    """Passages numbered with a tag (``W1``, ``S1``), or a line saying there are none."""
    if not passages:
        return f"{heading}: none found."
    lines = [f"{heading}:"]
    for i, ev in enumerate(passages, start=1):
        head = ev.title or ev.source
        lines.append(f"[{tag}{i}] {head}: {clip(ev.text, max_chars)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Material:
    """Prompt blocks for one article; each agent reads a prefix of `full`."""

    article: str
    wikipedia: str
    web: str

    def linguist(self) -> str:
        """In-news information only."""
        return self.article

    def expert(self) -> str:
        """The article and Wikipedia."""
        return f"{self.article}\n\n{self.wikipedia}"

    def pool(self, reports: str) -> str:
        """Everything: the whole evidence pool the debate is held over."""
        parts = [self.article, self.wikipedia, self.web]
        if reports:
            parts.append(reports)
        return "\n\n".join(parts)
