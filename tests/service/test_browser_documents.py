"""A document on the web pages in a real headless Chromium: the tab, live rows, marks, cards.

The server is `verity serve`'s app on a free loopback port with the real `LocalExecutor`:
the claims are extracted by verity's extractor from a loopback OpenAI-compatible
endpoint whose answers are scripted (test_documents_api.FakeModel). Each claim is then
checked by a fake method (`FakeLocalMethod`) that gives LoCal's recorded trace
(data/verdict_local.json), so that each card has a method's reasoning view, and that
holds each check until the test lets it through: the rows are seen to change live.
Chromium is Debian's package (``make browser``); without it this fails.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

# The one module-scoped Chromium fixture, shared rather than written again.
from test_browser import WAIT_MS, browser  # noqa: F401

# The API tests' document and scripted model: the browser checks the same text.
from test_documents_api import SENTENCES, TEXT, FakeModel

from faults.latency import LatencyEndpoint
from verity.domain import Claim, Label, Trace, Verdict

pytestmark = pytest.mark.integration

OUTER_LIMIT = 60.0
LABELS = ["SUPPORTED", "SUPPORTED", "REFUTED"]
HOSTILE = "The <img src=x onerror=alert(1)> dam was finished in 1936. <script>alert(2)</script>"
LOCAL_TRACE = json.loads(
    (Path(__file__).with_name("data") / "verdict_local.json").read_text(encoding="utf-8")
)["trace"]


class FakeLocalMethod:
    """A fake claim method: LoCal's recorded trace, REFUTED for a record, else SUPPORTED.

    Each check waits until a word of its claim is let through (``let``) or all are
    (``open``): a test sees some rows labelled while others are still pending.
    """

    name: ClassVar[str] = "local"
    accepts: ClassVar[tuple[type, ...]] = (Claim,)

    def __init__(self, models: Any) -> None:
        self.models = models  # the extractor shares them, as it would a real method's
        self._through: set[str] = set()
        self._all = True
        self._turn = threading.Condition()

    def hold(self) -> None:
        with self._turn:
            self._all, self._through = False, set()

    def let(self, word: str) -> None:
        with self._turn:
            self._through.add(word)
            self._turn.notify_all()

    def open(self) -> None:
        with self._turn:
            self._all = True
            self._turn.notify_all()

    def _wait(self, text: str) -> None:
        with self._turn:
            self._turn.wait_for(
                lambda: self._all or any(w in text for w in self._through), OUTER_LIMIT
            )

    async def averify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        await asyncio.to_thread(self._wait, subject.text)
        label = Label.REFUTED if "record" in subject.text else Label.SUPPORTED
        return Verdict(label=label, confidence=0.75, explanation="The passages say so [1].",
                       method="local", subject=subject,
                       trace=Trace.model_validate(LOCAL_TRACE))  # fmt: skip

    def verify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        return asyncio.run(self.averify(subject))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeLocalMethod]]:
    from test_browser import _serve

    from verity.config import Settings
    from verity.llm.spec import ModelSet, ModelSettings
    from verity.service.core import Service, ServiceSettings
    from verity.service.execute import LocalExecutor, Plan
    from verity.service.jobs import JobStore

    folder = tmp_path_factory.mktemp("documents-ui")
    with LatencyEndpoint(delay=0.0, answer=FakeModel()) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        method = FakeLocalMethod(ModelSet.from_settings(model))

        class FakeMethodExecutor(LocalExecutor):
            """The real executor, but every plan's method is the fake one."""

            def method(self, chosen: Plan) -> Any:
                return method

        defaults = Settings(model=model, sources=(), grounding="off")
        store = JobStore(folder / "jobs.sqlite")
        service = Service(
            ServiceSettings(defaults=defaults, workers=1),
            store=store,
            executor=FakeMethodExecutor(defaults, merge=False),
        )
        try:
            with _serve(service) as url:
                yield url, method
        finally:
            method.open()
            store.close()


@pytest.fixture
def page(
    browser: Any,  # noqa: F811
    site: tuple[str, FakeLocalMethod],
) -> Iterator[Any]:
    """A fresh page; every dialog it opens is recorded (and dismissed)."""
    context = browser.new_context(base_url=site[0], accept_downloads=True)
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    opened.dialogs = []

    def on_dialog(dialog: Any) -> None:
        opened.dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", on_dialog)
    try:
        yield opened
    finally:
        site[1].open()
        context.close()


def submit_document(page: Any, text: str) -> None:
    page.goto("/")
    page.click("label[for=kind-document]")
    page.fill("#document_title", "The dam")
    page.fill("#document_text", text)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/checks/[0-9a-f]{32}$"))


def wait_text(page: Any, selector: str, expected: str) -> None:
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s); return !!e && e.textContent === t; }",
        arg=[selector, expected],
    )


# -- progress, marks, cards -----------------------------------------------------------


def test_rows_turn_from_pending_to_their_label_as_each_claim_is_checked(
    page: Any, site: tuple[str, FakeLocalMethod]
) -> None:
    method = site[1]
    method.hold()
    submit_document(page, TEXT)
    wait_text(page, "#doc-counter", "0 of 3 claims checked")
    page.evaluate("window.stillTheSamePage = true")
    rows = page.locator("#doc-rows li")
    assert rows.count() == 3
    assert [rows.nth(i).locator(".doc-label").inner_text() for i in range(3)] == ["pending"] * 3
    method.let("finished")
    wait_text(page, "#doc-counter", "1 of 3 claims checked")
    first = page.locator("#doc-rows li").nth(0)
    assert first.locator(".doc-label").inner_text() == "SUPPORTED"
    assert first.locator(".doc-sentence").inner_text() == SENTENCES[0]
    assert "v-supported" in (first.get_attribute("class") or "")
    assert page.locator("#doc-rows li.v-pending").count() == 2
    assert page.inner_text("#status") == "running" and page.locator("#doc-text").count() == 0
    method.open()
    page.wait_for_selector("#doc-text mark")
    assert page.evaluate("window.stillTheSamePage") is True  # live, not reloaded
    assert page.inner_text("#doc-counter") == "3 of 3 claims checked"
    marks = page.locator("#doc-text mark.claim-span")
    assert marks.count() == 3
    for n in range(3):
        mark = marks.nth(n)
        assert mark.inner_text() == SENTENCES[n]
        assert f"v-{LABELS[n].lower()}" in (mark.get_attribute("class") or "")
        assert mark.get_attribute("tabindex") == "0"
        assert mark.get_attribute("aria-label") == f"Claim C{n + 1}: {LABELS[n]}"
    # The opinion was read and left plain: no mark, but in the text.
    assert SENTENCES[3] in page.inner_text("#doc-text")
    legend = page.inner_text("#doc-legend")
    assert "SUPPORTED" in legend and "REFUTED" in legend
    assert "SUPPORTED 2" in page.inner_text("#doc-counts")


def test_a_mark_opens_its_claims_card_by_click_and_by_keyboard(page: Any) -> None:
    submit_document(page, TEXT)
    page.wait_for_selector("#doc-text mark")
    cards = page.locator("#doc-cards details.claim-card")
    assert cards.count() == 3
    assert all(cards.nth(n).get_attribute("open") is None for n in range(3))
    page.locator("#doc-text mark").nth(2).click()
    card = page.locator("#card-3")
    assert card.get_attribute("open") is not None
    assert card.locator(".card-label").inner_text() == "REFUTED"
    assert card.locator(".card-confidence").inner_text() == "0.75"
    assert card.locator(".card-claim").inner_text() == "The dam's builders broke the record."
    assert card.locator(".card-sentence").inner_text() == SENTENCES[2]
    assert "The passages say so [1]." in card.locator(".card-explanation").inner_text()
    # LoCal's own view of its trace, as a single claim's page shows it.
    reasoning = card.locator(".reasoning-local")
    assert reasoning.locator("h2").inner_text() == "LoCal: the program and its answers"
    assert f"#POS = {LOCAL_TRACE['pos']}" in reasoning.inner_text()
    assert page.evaluate("document.activeElement.closest('#card-3') !== null")
    # Keyboard: Enter on one mark, Space on another.
    page.locator("#doc-text mark").nth(0).focus()
    page.keyboard.press("Enter")
    assert page.locator("#card-1").get_attribute("open") is not None
    page.locator("#doc-text mark").nth(1).focus()
    page.keyboard.press(" ")
    assert page.locator("#card-2").get_attribute("open") is not None


def test_markup_in_a_document_is_shown_as_text_and_never_runs(page: Any) -> None:
    submit_document(page, HOSTILE)
    page.wait_for_selector("#doc-text mark")
    assert page.locator("#doc-text mark").first.inner_text() == (
        "The <img src=x onerror=alert(1)> dam was finished in 1936."
    )
    assert "<script>alert(2)</script>" in page.inner_text("#doc-text")
    assert page.locator("img").count() == 0
    assert page.locator("script:not([src])").count() == 0
    page.reload()
    page.wait_for_selector("#doc-text mark")
    assert page.locator("img").count() == 0 and page.locator("script:not([src])").count() == 0
    assert page.dialogs == []


def test_the_report_link_downloads_the_markdown_report(page: Any) -> None:
    submit_document(page, TEXT)
    page.wait_for_selector("#doc-text mark")
    with page.expect_download() as caught:
        page.click("#report-link")
    download = caught.value
    report = Path(download.path()).read_text(encoding="utf-8")
    assert download.suggested_filename.endswith(".md")
    assert report.startswith("# The dam\n")
    assert "### C3: REFUTED (0.75)" in report
