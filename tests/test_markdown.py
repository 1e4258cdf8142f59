"""Untrusted text as inert Markdown: the one rule every Markdown report uses."""

from __future__ import annotations

from verity.grounding.report import md as grounding_md
from verity.markdown import md
from verity.methods.common import md as methods_md


def test_every_markup_character_is_escaped_and_the_text_is_one_line() -> None:
    said = "**x** _y_ `z` [a](b) <s> #h | ~ ! + {} & \\ \n  next"
    assert md(said) == (
        "\\*\\*x\\*\\* \\_y\\_ \\`z\\` \\[a\\]\\(b\\) \\<s\\> \\#h \\| \\~ \\! \\+ \\{\\} \\& "
        "\\\\ next"
    )


def test_methods_and_the_grounding_section_share_the_rule() -> None:
    assert methods_md is md and grounding_md is md
