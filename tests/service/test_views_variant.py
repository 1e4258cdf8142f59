"""A verdict whose run is not its paper's method says what ran, next to the method's name."""

from __future__ import annotations

import copy

from test_views import XSS, record, render

from verity.service.views import verdict_view


def test_a_variant_is_shown_beside_the_method_and_the_paper_is_not() -> None:
    named = copy.deepcopy(record("toe"))
    named["trace"]["variant_kind"] = "untrained: heuristic policy, LLM-judge scoring"
    assert verdict_view(named).variant == "untrained: heuristic policy, LLM-judge scoring"
    html = render(named)
    assert '<span class="variant">(untrained: heuristic policy, LLM-judge scoring)</span>' in html

    paper = copy.deepcopy(record("toe"))
    paper["trace"]["variant_kind"] = "paper"
    assert verdict_view(paper).variant == ""
    assert 'class="variant"' not in render(paper)
    # Any method's trace may carry it; a method that says nothing shows nothing.
    local = copy.deepcopy(record("local"))
    assert verdict_view(local).variant == "" and 'class="variant"' not in render(local)
    local["trace"]["variant_kind"] = XSS
    html = render(local)
    assert "<script>" not in html and "&lt;script&gt;" in html
