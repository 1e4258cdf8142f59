"""ZoFia end to end on a PolitiFact article with real models: in process and over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verity.bench.datasets import load_dataset
from verity.domain import Article, Label

DATA = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}"),
]


def shortest_article() -> Article:
    """The shortest PolitiFact test article: the real thing, at the least model time."""
    split = load_dataset("politifact", data_dir=DATA)
    subject = min((ex.subject for ex in split.examples), key=lambda a: len(a.text))
    assert isinstance(subject, Article)
    return subject


def test_embedded_model_runs_the_whole_pipeline() -> None:
    import verity

    method = verity.load_method("zofia", sources=("offline-wiki",), max_rounds=2)
    verdict = method.verify(shortest_article())
    trace = verdict.trace.model_dump()
    # The label is the judge's last letter, whatever it was: R, F, or I after the last round.
    judged = [c for c in verdict.trace.calls if c.step == "zofia.judge"]
    letter = judged[-1].parsed["ruling"]
    expected = {"R": Label.REAL, "F": Label.FAKE, "I": Label.NOT_ENOUGH_INFO}[letter]
    assert verdict.label == expected and verdict.confidence is None
    assert len(judged) == trace["debate"]["rounds"] <= 2
    # The embedded model's context is known, so the article was measured with its tokenizer.
    assert trace["article"]["counted_by"] == "the model's tokenizer"
    assert trace["article"]["context_tokens"] == 4096
    assert trace["keywords"]["construction"] == "sc-mmr"
    assert trace["keywords"]["params"]["gamma"] == 0.5
    steps = {c.step for c in verdict.trace.calls}
    assert {"zofia.linguist", "zofia.extract_claims", "zofia.debater"} <= steps
    assert trace["information_matrix"]["empty"][-1] == "web"  # no web source offline
    assert "w/o Open Web" in trace["warnings"][0]
    # The shared article prefix is reused by llama.cpp after the first call.
    assert verdict.usage.cached_tokens > verdict.usage.prompt_tokens / 3
    assert trace["markdown"].startswith("# ZoFia:")


def test_cli_article_against_a_loopback_openai_compatible_server(
    llama_server: str, tmp_path: Path
) -> None:
    article = shortest_article()
    path = tmp_path / "article.json"
    path.write_text(json.dumps({"title": article.title, "text": article.text}))
    config = tmp_path / "verity.toml"
    # The server's context is 2,048 tokens, which an endpoint does not report: say so.
    config.write_text("[methods.zofia]\nmax_rounds = 1\ncontext_tokens = 2048\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("verity")),
            "check",
            "--article",
            str(path),
            "--json",
            "--config",
            str(config),
            "--model",
            "openai:smollm2",
            "--base-url",
            llama_server,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["method"] == "zofia"
    judged = [c for c in record["trace"]["calls"] if c["step"] == "zofia.judge"]
    letter = judged[-1]["parsed"]["ruling"]
    assert record["label"] == {"R": "REAL", "F": "FAKE", "I": "NOT_ENOUGH_INFO"}[letter]
    assert "w/o Open Web" in proc.stderr  # no web source: said on stderr
    calls = record["trace"]["calls"]
    assert {c["backend"] for c in calls} == {"openai"}
    assert record["trace"]["debate"]["max_rounds"] == 1
