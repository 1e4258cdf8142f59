"""A whole document against an endpoint with a fixed latency: extraction, then its claims at once.

    .venv/bin/python bench/documents.py [--delay 0.5] [--claims 20] [--methods direct,local]

A loopback OpenAI-compatible endpoint (`tests/faults/latency.py`) answers every request
after ``--delay`` seconds. Its answers keep the extractor on its full path: every
sentence is verifiable (3 selection answers), resolvable as it stands (3 disambiguation
answers) and one claim (1 decomposition answer); the claim methods get the answers that
keep them on their usual path (`bench/speed.py`). Each run has a fresh answer cache.

Part 1, for a document of ``--claims`` sentences (one claim each), per method:
- extraction alone (E), and its calls;
- each claim checked alone, one after another: the slowest (S) and the mean;
- the whole document with ``--concurrency`` (default: as many as claims): its wall time
  (D) beside E + S, the least it can take when every claim runs at once. The issue's
  bound is D < 1.5 (E + S).

Part 2, the extractor's cost per 1,000 words on SummEval's first source articles (from
the data folder): calls, prompt and completion tokens (counted by the client's estimate
of what was sent and received, the endpoint's own counts being made up; the answers are
short made-up ones, so the completion side is a floor) and seconds, with 8 sentences
read at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the latency-bound endpoint
sys.path.insert(0, str(ROOT / "bench"))

from faults.latency import LatencyEndpoint  # noqa: E402
from speed import usual_path  # noqa: E402
from verity.api import load_extractor, load_method  # noqa: E402
from verity.documents import check_document  # noqa: E402
from verity.extraction import Document  # noqa: E402
from verity.extraction.sentences import split_document  # noqa: E402
from verity.llm.spec import ModelSettings  # noqa: E402
from verity.nlp.embed import default_encoder  # noqa: E402

_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
FACTS = [
    "The bridge over the river Alder opened in {n}.",
    "Town number {n} has a population of {m} people.",
    "The {n}th mayor of Brill served for {k} years.",
    "Lake {n} is {m} metres deep at its deepest point.",
]


def answers(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    """The extractor's full path for every sentence; the methods' usual path otherwise."""
    props = (schema or {}).get("properties", {})
    found = _SENTENCE.findall(str(messages[-1].get("content", "")))
    sentence = found[-1].strip() if found else "A fact."
    if "verifiable" in props:
        return {"analysis": "It states a fact.", "verifiable": True, "rewritten": ""}
    if "resolvable" in props:
        return {"analysis": "Clear.", "resolvable": True, "decontextualized": sentence}
    if "claims" in props and "analysis" in props:
        return {"analysis": "One fact.", "claims": [sentence]}
    return usual_path(messages, schema)


def document(claims: int) -> Document:
    lines = [
        FACTS[i % len(FACTS)].format(n=1900 + i, m=1000 + 37 * i, k=2 + i % 7)
        for i in range(claims)
    ]
    return Document(text=" ".join(lines), title="Facts about Brill")


def fresh_cache() -> tempfile.TemporaryDirectory[str]:
    cache = tempfile.TemporaryDirectory()
    os.environ["VERITY_CACHE_DIR"] = cache.name
    return cache


def built(method: str, endpoint: LatencyEndpoint, concurrency: int) -> tuple[Any, Any]:
    """The method and its extractor, the models taking ``concurrency`` checks' calls at once
    (what ``verity check --document --concurrency N`` does)."""
    model = ModelSettings(spec="openai:m", base_url=endpoint.base_url)
    chosen = load_method(method, model=model, sources=())
    chosen.models.follow(concurrency)
    return chosen, load_extractor(chosen, merge=False)


def part_one(method: str, doc: Document, concurrency: int, delay: float) -> None:
    with LatencyEndpoint(delay=delay, answer=answers) as endpoint:
        with fresh_cache():
            checker, extractor = built(method, endpoint, concurrency)
            split_document("Loaded once. Before the clock.")  # the sentencizer's one-time load
            started = time.perf_counter()
            found = asyncio.run(extractor.extract(doc))
            extract_s = time.perf_counter() - started
            extract_calls = endpoint.count
        singles: list[float] = []
        with fresh_cache():
            checker, extractor = built(method, endpoint, concurrency)
            for claim in found.claims:
                started = time.perf_counter()
                asyncio.run(checker.averify(claim.as_claim(doc)))
                singles.append(time.perf_counter() - started)
        with fresh_cache():
            checker, extractor = built(method, endpoint, concurrency)
            endpoint.reset()
            started = time.perf_counter()
            result = asyncio.run(check_document(doc, checker, extractor, concurrency=concurrency))
            whole = time.perf_counter() - started
            calls, peak = endpoint.count, endpoint.peak
    slowest = max(singles)
    bound = extract_s + slowest
    failed = sum(r.status != "checked" for r in result.claims)
    print(
        f"{method:8} {len(found.claims):6} {extract_calls:6} {extract_s:8.2f} "
        f"{sum(singles) / len(singles):8.2f} {slowest:8.2f} {whole:8.2f} {bound:8.2f} "
        f"{whole / bound:6.2f} {calls:6} {peak:5} {failed:6}"
    )


def summeval_articles(count: int) -> list[str]:
    folder = Path(os.environ.get("VERITY_DATA_DIR", ROOT.parent / "shared" / "datasets"))
    path = folder / "SummEval" / "summeval.jsonl"
    seen: list[str] = []
    if not path.exists():
        return seen
    for line in path.read_text(encoding="utf-8").splitlines():
        text = json.loads(line).get("article", "")
        if text and text not in seen:
            seen.append(text)
        if len(seen) == count:
            break
    return seen


def part_two(articles: list[str], concurrency: int, delay: float, variant: str) -> None:
    if not articles:
        print("(SummEval not found in the data folder: part 2 skipped)")
        return
    words = calls = prompt = completion = 0
    seconds = 0.0
    with LatencyEndpoint(delay=delay, answer=answers) as endpoint, fresh_cache():
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url)
        extractor = load_extractor(model=model, merge=True, variant=variant)
        default_encoder().encode(["Loaded once."])  # the encoder's one-time load, untimed
        split_document("Loaded once. Before the clock.")
        extractor.concurrency = concurrency
        for text in articles:
            started = time.perf_counter()
            found = asyncio.run(extractor.extract(Document(text=text)))
            seconds += time.perf_counter() - started
            words += len(text.split())
            calls += found.usage.llm_calls
            # The endpoint's own token counts are made up: count what was sent and received
            # with the client's estimate (exact for local models, chars per token else).
            for call in found.trace.calls:
                sent = "".join(m.content for m in call.messages)
                prompt += extractor.model.count_tokens(sent)[0]
                completion += extractor.model.count_tokens(call.output)[0]
    per = 1000 / words
    print(
        f"{variant:8} {len(articles)} SummEval articles, {words} words, {concurrency} sentences "
        "at once: "
        f"per 1,000 words {calls * per:.1f} calls, {prompt * per:,.0f} prompt + "
        f"{completion * per:,.0f} completion tokens, {seconds * per:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--claims", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=0)
    parser.add_argument("--methods", default="direct,local")
    parser.add_argument("--articles", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "loopback")
    concurrency = args.concurrency or args.claims
    doc = document(args.claims)
    print(f"endpoint delay {args.delay:.2f} s; a document of {args.claims} sentences, "
          f"{len(doc.text.split())} words; claims checked {concurrency} at once\n")  # fmt: skip
    heads = ("claims", "ex.cls", "E s", "mean s", "S s", "D s", "E+S s", "D/E+S", "calls",
             "peak", "failed")  # fmt: skip
    widths = (6, 6, 8, 8, 8, 8, 8, 6, 6, 5, 6)
    print(f"{'method':8} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    for method in args.methods.split(","):
        part_one(method, doc, concurrency, args.delay)
    print()
    articles = summeval_articles(args.articles)
    for variant in ("claimify", "single"):
        part_two(articles, 8, args.delay, variant)


if __name__ == "__main__":
    main()
