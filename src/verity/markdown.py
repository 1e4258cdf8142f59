r"""Untrusted text as inert Markdown, for every Markdown rendering verity writes.

    md("**bold** <script>")   # '\*\*bold\*\* \<script\>'

One line (whitespace collapsed), every Markdown and HTML markup character escaped, ``&``
included so that no entity is formed: the text shows as itself wherever the Markdown is
rendered. Methods' trace reports and the grounding section share it.
"""

from __future__ import annotations

import re

_MARKUP = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")
_SPACE = re.compile(r"\s+")


def md(text: object) -> str:
    """Untrusted text as inert Markdown: one line, every markup character escaped."""
    return _MARKUP.sub(r"\\\1", _SPACE.sub(" ", str(text)).strip())
