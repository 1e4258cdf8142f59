"""The material ZoFia's agents read: the multi-source information matrix as prompt text.

The matrix has four quadrants (paper section 3): what the article itself says (in-news),
what the model already knows, encyclopaedic background (Wikipedia) and recent evidence
(the web). Agents see only the quadrants their role allows: the linguist reads the
article; the domain expert adds Wikipedia; the debaters and the judge get everything,
including the other agents' reports.

Blocks always come in the same order so that prompts over one article share their start.
Every text from outside (the article, each passage, each agent's answer) sits in its own
data block (`verity.llm.step.data_block`), so one cannot pose as another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verity.domain import Article, Evidence
from verity.llm.step import Delimited, data_block


def clip(text: str, max_chars: int) -> str:
    """At most ``max_chars`` characters, marked with `` ...`` when cut."""
    return text if len(text) <= max_chars else text[:max_chars].rstrip() + " ..."


def fit_text(text: str, max_tokens: int | None, count: Callable[[str], int]) -> str:
    """The longest run of whole words from the start of ``text`` within ``max_tokens``.

    A cut text ends with `` ...``. None means no limit. Binary search over the number of
    words keeps the tokenizer calls to about log2(words).
    """
    words = text.split()
    whole = " ".join(words)
    if max_tokens is None or count(whole) <= max_tokens:
        return whole
    low, high = 0, len(words)  # low words always fit; high words never do
    while high - low > 1:
        mid = (low + high) // 2
        if count(" ".join(words[:mid]) + " ...") <= max_tokens:
            low = mid
        else:
            high = mid
    return " ".join(words[:low]) + " ..."


def article_block(article: Article, text: str) -> Delimited:
    """The article (``text``: all of it or the part that fits) with its title and date."""
    published = article.date.isoformat() if article.date else None
    block = data_block("article", text, title=article.title, published=published)
    return Delimited(f"News article:\n{block}")


def passages_block(heading: str, tag: str, passages: Sequence[Evidence], max_chars: int) -> str:
    """Passages numbered with a tag (``W1``, ``S1``), each in its own data block."""
    if not passages:
        return f"{heading}: none found."
    lines = [f"{heading}:"]
    for i, ev in enumerate(passages, start=1):
        block = data_block("passage", clip(ev.text, max_chars), title=ev.title, url=ev.url)
        lines.append(f"[{tag}{i}] {block}")
    return Delimited("\n".join(lines))


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
        return Delimited(f"{self.article}\n\n{self.wikipedia}")

    def pool(self, reports: str) -> str:
        """Everything: the whole evidence pool the debate is held over."""
        parts = [self.article, self.wikipedia, self.web]
        if reports:
            parts.append(reports)
        return Delimited("\n\n".join(parts))
