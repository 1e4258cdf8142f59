"""Screenshots of the web pages for docs/ui.md, taken in headless Chromium.

    .venv/bin/python bench/screenshots.py [--out docs/img] [--chromium /usr/lib/chromium/chromium]

Starts `verity serve`'s app on a loopback port, in a fresh cache folder, with ``rag``
over a two-document corpus and a loopback OpenAI-compatible endpoint for its model
(`tests/faults/latency.py`), which holds its answer until the script has photographed
the running check. The pages of LoCal, ZoFia, WKGFC and ToE verdicts are those of the
records in tests/service/data/ (real records of each method, made with its scripted fake
model), stored as finished checks. Writes ui-form, ui-running, ui-verdict, ui-local,
ui-zofia, ui-wkgfc, ui-toe and ui-history PNGs, 1280 pixels wide, and prints their paths.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the loopback endpoint lives with the tests

DATA = ROOT / "tests" / "service" / "data"
WIDTH, HEIGHT = 1280, 860
WAIT_MS = 60_000
DOCUMENTS = [
    {
        "title": "Eiffel Tower",
        "text": "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in "
        "Paris, France. It was completed in 1889.",
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


class Judge:
    """rag's model: one fixed judgement, given once ``gate`` is open."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
        self.gate.wait(60)
        return {
            "explanation": "[1] says the Eiffel Tower stands on the Champ de Mars in Paris, "
            "and [2] that Paris is in France.",
            "label": "SUPPORTED",
            "confidence": 0.92,
            "cited": [1, 2],
        }


@contextlib.contextmanager
def serve(service: Any) -> Iterator[str]:
    """The app over ``service`` with uvicorn in a thread, on a free loopback port."""
    import uvicorn

    from verity.service.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    while not server.started and thread.is_alive():
        started.wait(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        service.begin_shutdown()
        server.should_exit = True
        thread.join(60)


def store_verdict(service: Any, name: str) -> str:
    """A fixture record stored as a finished check; its id."""
    from verity.service.requests import CheckRequest

    record = json.loads((DATA / f"verdict_{name}.json").read_text(encoding="utf-8"))
    if "claim" in record:
        request = CheckRequest(claim=record["claim"])
    else:
        title = record["article"]["title"]
        request = CheckRequest.model_validate({"article": {"title": title, "text": title}})
    job = service.store.create(request, method=record["method"])
    run = service.store.start(job.id)
    service.store.finish(job.id, run.runs, record)
    return str(job.id)


def shoot(out: Path, chromium: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from faults.latency import LatencyEndpoint
    from verity.config import Settings
    from verity.llm.spec import ModelSettings
    from verity.service.core import Service, ServiceSettings
    from verity.service.execute import LocalExecutor
    from verity.service.jobs import JobStore
    from verity.sources.corpus import build_corpus

    work = Path(os.environ["VERITY_CACHE_DIR"])
    documents = work / "documents.jsonl"
    documents.write_text("\n".join(json.dumps(d) for d in DOCUMENTS) + "\n", encoding="utf-8")
    build_corpus(documents, "encyclopedia")
    judge = Judge()
    written: list[Path] = []
    with LatencyEndpoint(delay=0.3, answer=judge) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        defaults = Settings(method="rag", model=model, sources=("corpus:encyclopedia",))
        store = JobStore(work / "jobs.sqlite")
        service = Service(
            ServiceSettings(defaults=defaults, workers=1),
            store=store,
            executor=LocalExecutor(defaults),
        )
        with serve(service) as url, sync_playwright() as playwright:
            args = ["--no-sandbox"] if os.geteuid() == 0 else []
            browser = playwright.chromium.launch(executable_path=chromium, args=args)
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.set_default_timeout(WAIT_MS)

            def save(name: str, target: Any = None, full: bool = False) -> None:
                path = out / f"ui-{name}.png"
                if target is None:
                    page.screenshot(path=str(path), full_page=full)
                else:
                    page.locator(target).screenshot(path=str(path))
                written.append(path)

            page.goto(f"{url}/")
            page.fill("#claim", "The Eiffel Tower is in Paris.")
            save("form")
            judge.gate.clear()
            page.click("button[type=submit]")
            page.wait_for_selector("#progress li.kind-call-start")
            save("running")
            judge.gate.set()
            page.wait_for_selector("#verdict")
            page.wait_for_selector("#progress li.kind-check-end")
            save("verdict", full=True)
            for name in ("local", "zofia", "wkgfc", "toe"):
                page.goto(f"{url}/checks/{store_verdict(service, name)}")
                # Every node and iteration open, so the picture shows the whole reasoning.
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                save(name, "#reasoning")
            page.goto(f"{url}/history")
            save("history")
            browser.close()
        store.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="verity-screens-")
    os.environ["VERITY_CACHE_DIR"] = work  # a fresh store and corpus, removed after
    try:
        for path in shoot(args.out, args.chromium):
            print(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
