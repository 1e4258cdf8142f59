"""The web pages in a real headless Chromium, over the real app, service and method.

The server is `verity serve`'s app on a free loopback port; its checks run ``rag`` for
real over a small BM25 corpus, with the model a loopback OpenAI-compatible endpoint
(`faults.latency.LatencyEndpoint`). The endpoint holds its answer until the test opens a
gate, so a test sees the check's progress arrive before the verdict without timing it.
Chromium is Debian's package (``make browser``); without it these tests fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from faults.latency import LatencyEndpoint

pytestmark = pytest.mark.integration

OUTER_LIMIT = 60.0  # seconds; only ends a test that hangs for good
WAIT_MS = int(OUTER_LIMIT * 1000)
CORPUS = "ui-browser"
DOCUMENTS = [
    {
        "title": "Eiffel Tower",
        "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
        "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "date": "2021-06-01",
    },
    {
        "title": "Paris",
        "text": "Paris is the capital and largest city of France.",
        "url": "https://en.wikipedia.org/wiki/Paris",
        "date": "2020-01-15",
    },
]
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)> is in Paris."
# What the model answers to a claim with markup: model text is from outside too.
ANSWER_MARKUP = "<script>alert(3)</script><b>bold</b>"


def chromium() -> str:
    """Debian's Chromium binary (the /usr/bin/chromium wrapper script is a fallback)."""
    for candidate in (
        os.environ.get("VERITY_CHROMIUM"),
        "/usr/lib/chromium/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("Chromium is not installed: `make browser` installs Debian's package")


class GatedJudge:
    """The model's answers to rag's judgement: held until ``gate`` is set.

    To a claim with markup in it, the explanation carries markup of its own, so that text
    which came from a model is on the page too.
    """

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
        if not self.gate.wait(OUTER_LIMIT):
            return None
        hostile = "alert" in str(messages[-1].get("content", ""))
        return {
            "explanation": "[1] places the tower in Paris." + (ANSWER_MARKUP if hostile else ""),
            "label": "SUPPORTED",
            "confidence": 0.9,
            "cited": [1],
        }


@dataclass
class Site:
    """The running server and the model behind its checks."""

    url: str
    judge: GatedJudge


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _serve(service: Any) -> Iterator[str]:
    """The app over ``service`` with uvicorn in a thread, on a free loopback port."""
    import uvicorn

    from verity.service.app import create_app

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        started = threading.Event()
        for _ in range(int(OUTER_LIMIT / 0.05)):
            if server.started or not thread.is_alive():
                break
            started.wait(0.05)
        if not server.started:
            raise RuntimeError("uvicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        service.begin_shutdown()  # open event streams end, so the shutdown does not wait
        server.should_exit = True
        thread.join(OUTER_LIMIT)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.core import Service, ServiceSettings
    from verity.service.execute import LocalExecutor
    from verity.service.jobs import JobStore
    from verity.sources.corpus import build_corpus

    folder = tmp_path_factory.mktemp("ui")
    documents = folder / "documents.jsonl"
    documents.write_text("\n".join(json.dumps(d) for d in DOCUMENTS) + "\n", encoding="utf-8")
    build_corpus(documents, CORPUS)
    judge = GatedJudge()
    with LatencyEndpoint(delay=0.2, answer=judge) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        defaults = Settings(method="rag", model=model, sources=(f"corpus:{CORPUS}",))
        store = JobStore(folder / "jobs.sqlite")
        service = Service(
            ServiceSettings(defaults=defaults, workers=1),
            store=store,
            executor=LocalExecutor(defaults),
        )
        try:
            with _serve(service) as url:
                yield Site(url=url, judge=judge)
        finally:
            judge.gate.set()
            store.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for this module (its loop must not outlive the module: later
    tests start event loops of their own in this thread)."""
    from playwright.sync_api import sync_playwright

    path = chromium()
    with sync_playwright() as playwright:
        # Chromium's sandbox cannot start as root (CI containers): it is turned off there.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = playwright.chromium.launch(executable_path=path, headless=True, args=args)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, site: Site) -> Iterator[Any]:
    """A fresh page; every dialog it opens is recorded (and dismissed)."""
    context = browser.new_context(base_url=site.url, accept_downloads=True)
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
        context.close()


def submit_claim(page: Any, claim: str) -> None:
    page.goto("/")
    page.fill("#claim", claim)
    page.click("button[type=submit]")


def finished(page: Any) -> None:
    """Wait until the check's page shows its verdict or its error."""
    page.wait_for_selector("#verdict, .job-error")


# -- a check from the form to its verdict ------------------------------------------------


def test_progress_arrives_live_then_the_verdict_and_evidence(page: Any, site: Site) -> None:
    site.judge.gate.clear()  # the model holds its answer: the check stops mid-call
    submit_claim(page, "The Eiffel Tower is in Paris.")
    page.wait_for_url(re.compile(r"/checks/[0-9a-f]{32}$"))
    page.wait_for_selector("#progress li.kind-call-start")
    assert page.locator("#verdict").count() == 0
    assert page.locator("#progress li.kind-retrieval").count() == 1
    assert page.is_visible("#waiting")
    page.evaluate("window.stillTheSamePage = true")
    site.judge.gate.set()
    page.wait_for_selector("#verdict")
    # The last events and the verdict came through the stream, without a reload.
    assert page.evaluate("window.stillTheSamePage") is True
    # The judge's call, then the grounding's after the check's end (on for the service).
    assert page.locator("#progress li.kind-call-end").count() == 2
    assert page.locator("#progress li.kind-check-end").count() == 1
    assert page.inner_text("#status") == "done" and page.is_hidden("#waiting")
    assert page.inner_text("#verdict-label") == "SUPPORTED"
    assert "confidence 0.90" in page.inner_text(".verdict .confidence")
    assert "[1] places the tower in Paris." in page.inner_text(".verdict .explanation")
    first = page.locator(".evidence-list .passage").first
    link = first.locator(".title a")
    assert link.inner_text() == "Eiffel Tower"
    assert link.get_attribute("href") == "https://en.wikipedia.org/wiki/Eiffel_Tower"
    assert link.get_attribute("rel") == "noopener noreferrer nofollow"
    assert first.locator("time").inner_text() == "2021-06-01"
    assert "wrought-iron lattice tower" in first.locator("blockquote").inner_text()
    assert "model calls" in page.inner_text("#usage")


def test_the_permalink_works_without_script(browser: Any, page: Any, site: Site) -> None:
    site.judge.gate.clear()
    submit_claim(page, "Paris is the capital of France.")
    page.wait_for_url(re.compile(r"/checks/[0-9a-f]{32}$"))
    context = browser.new_context(java_script_enabled=False)
    context.set_default_timeout(WAIT_MS)
    try:
        plain = context.new_page()
        plain.goto(page.url)
        assert plain.locator("#verdict").count() == 0
        assert plain.inner_text("#status") in ("queued", "running")
        site.judge.gate.set()
        # The page reloads itself while the check runs; the last load has the verdict.
        plain.wait_for_selector("#verdict")
        assert plain.inner_text("#verdict-label") == "SUPPORTED"
        assert plain.locator("#progress li").count() >= 4  # start, search, call, end
        assert plain.locator(".evidence-list .passage").count() >= 1
    finally:
        site.judge.gate.set()
        context.close()


def test_the_trace_downloads_as_json(page: Any) -> None:
    submit_claim(page, "The Eiffel Tower is made of iron.")
    finished(page)
    with page.expect_download() as caught:
        page.click("text=Trace (JSON)")
    download = caught.value
    record = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert download.suggested_filename.startswith("verity-")
    assert record["claim"] == "The Eiffel Tower is made of iron."
    assert record["label"] == "SUPPORTED" and record["trace"]["calls"]


def test_the_history_lists_the_check_and_links_to_it(page: Any) -> None:
    submit_claim(page, "The tower stands in the capital of France.")
    finished(page)
    permalink = page.url
    page.goto("/history")
    row = page.locator("#history tr", has_text="The tower stands in the capital of France.")
    assert row.count() == 1
    assert "SUPPORTED" in row.inner_text() and "done" in row.inner_text()
    row.locator("a").click()
    page.wait_for_url(permalink)
    assert page.inner_text("#verdict-label") == "SUPPORTED"


# -- bad input and hostile text -----------------------------------------------------------


def test_an_empty_claim_shows_the_error_by_the_form(page: Any) -> None:
    submit_claim(page, "   ")
    error = page.wait_for_selector("#form-error")
    assert "The claim is empty" in error.inner_text()
    assert "claim" in page.inner_text("#form-error .field")
    assert page.locator("form.check-form").count() == 1  # the form, ready to fix


def test_a_model_the_server_does_not_offer_is_refused_with_the_ones_it_does(page: Any) -> None:
    page.goto("/")
    page.fill("#claim", "The Eiffel Tower is in Paris.")
    page.fill("#model", "openai:something-else")
    page.click("button[type=submit]")
    error = page.wait_for_selector("#form-error")
    assert "not offered" in error.inner_text()
    assert "openai:m" in page.inner_text("#form-error .valid")
    assert page.input_value("#claim") == "The Eiffel Tower is in Paris."  # kept to retry


def test_a_url_to_a_loopback_address_fails_and_the_page_says_why(page: Any) -> None:
    page.goto("/")
    page.click("label[for=kind-url]")
    page.fill("#url", "http://127.0.0.1/")
    page.click("button[type=submit]")
    page.wait_for_selector(".job-error")
    message = page.inner_text(".job-error")
    assert "The check failed" in message and "127.0.0.1" in message
    assert "bad_input" in message
    assert page.inner_text("#status") == "failed"


def test_markup_in_a_claim_is_shown_as_text_and_never_runs(page: Any) -> None:
    submit_claim(page, MARKUP)
    finished(page)
    assert page.inner_text("h1.subject") == MARKUP
    assert ANSWER_MARKUP in page.inner_text(".verdict .explanation")  # as the model sent it
    assert page.locator("script:not([src])").count() == 0
    assert page.locator("img").count() == page.locator(".verdict b").count() == 0
    page.goto("/history")
    assert page.locator("#history a", has_text=MARKUP).count() >= 1
    assert page.locator("img").count() == 0
    assert page.dialogs == []
