"""A grounded verdict in a real headless Chromium: sentences marked, links to their passages.

The server is `verity serve`'s app on a free loopback port over a fake executor whose
checks answer with the grounded ``rag`` record of data/verdict_grounded.json (see
test_views_grounding.py for how it was made). The page, its stylesheet and its links are
the real ones. Chromium is Debian's package (``make browser``); without it this fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# The one module-scoped Chromium fixture, shared rather than written again.
from test_browser import WAIT_MS, browser  # noqa: F401
from test_views_grounding import GroundedExecutor

pytestmark = pytest.mark.integration


@pytest.fixture
def page(
    browser: Any,  # noqa: F811
    make_service: Callable[..., Any],
    serve_live: Any,
) -> Iterator[Any]:
    """A fresh page on a server whose every check gives the grounded verdict."""
    with serve_live(make_service(GroundedExecutor())) as url:
        context = browser.new_context(base_url=url)
        context.set_default_timeout(WAIT_MS)
        try:
            yield context.new_page()
        finally:
            context.close()


def _background(page: Any, selector: str) -> str:
    return str(page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor"))


def test_sentences_are_marked_by_status_and_a_citation_opens_its_passage(page: Any) -> None:
    page.goto("/")
    page.fill("#claim", "The Eiffel Tower is in Paris.")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/checks/[0-9a-f]{32}$"))
    page.wait_for_selector("#verdict")

    assert page.get_attribute("#sentence-1", "class") == "sentence g-supported"
    assert page.get_attribute("#sentence-2", "class") == "sentence g-contradicted"
    assert page.get_attribute("#sentence-4", "class") == "sentence g-unsupported"
    assert page.get_attribute("#sentence-5", "class") == "sentence g-no_claim"
    assert page.get_attribute("#sentence-6", "class") == "sentence g-unchecked"
    assert page.inner_text("#sentence-2") == "Its construction ended in 1899 [3]."
    # The status is said in words after the sentence; the colour differs by status too.
    said = page.inner_text("#sentence-2 + .g-tag")
    assert said.strip() == "contradicted: [3]"
    supported, contradicted = _background(page, "#sentence-1"), _background(page, "#sentence-2")
    assert supported != contradicted and "rgba(0, 0, 0, 0)" not in (supported, contradicted)

    assert page.is_visible("#ungrounded")
    assert page.inner_text("#ungrounded").startswith("UNGROUNDED")
    assert page.inner_text("#grounding-warning") == (
        "Warning: the explanation argues against REFUTED."
    )
    assert "(share 0.50)" in page.inner_text("#grounding-summary")

    # [3] is the second passage the verdict keeps: the link goes there and it is the target.
    page.click("#sentence-2 + .g-tag a")
    page.wait_for_url(re.compile(r"#evidence-2$"))
    target = page.locator(".passage:target")
    assert target.count() == 1 and target.get_attribute("id") == "evidence-2"
    assert "History of the Eiffel Tower" in target.locator(".title").inner_text()
    assert "cited as [3]" in target.inner_text()
    box = target.bounding_box()
    viewport = page.viewport_size
    assert box is not None and 0 <= box["y"] < viewport["height"]  # scrolled into view
