"""`verity check --document` for real: the installed command, the embedded model, rag.

The small model finds few or no claims in these sentences (it votes most of them not
verifiable), so the claim checks below may have nothing to look at; what this proves is
that the command reads every sentence with the real model and writes a whole result.
Claims with spans and verdicts end to end are tested against a scripted endpoint
(tests/test_cli_document.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verity.bench.datasets import data_dir
from verity.domain import CLAIM_LABELS
from verity.errors import DatasetError
from verity.extraction.sentences import split_document

pytestmark = pytest.mark.integration


def test_a_summeval_article_is_checked_claim_by_claim_with_spans(tmp_path: Path) -> None:
    try:
        source = data_dir() / "SummEval" / "summeval.jsonl"
    except DatasetError as exc:
        pytest.skip(str(exc))
    article = json.loads(source.read_text(encoding="utf-8").splitlines()[0])["article"]
    text = article[: split_document(article)[3].end]  # its first four sentences
    path = tmp_path / "article.json"
    path.write_text(json.dumps({"title": "Merson and Townsend", "text": text}), "utf-8")
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("verity")), "check", "--document", str(path),
         "--extractor", "single", "--json", "--output", str(tmp_path / "result.json")],
        capture_output=True, text=True, env=dict(os.environ), timeout=3600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["method"] == "rag" and result["complete"] is True
    assert [n["outcome"] != "failed" for n in result["sentences"]] == [True] * 4
    assert all(
        n["selection"].endswith("of 1 answers found a verifiable fact") for n in result["sentences"]
    )
    for claim in result["claims"]:
        first = claim["spans"][0]
        assert text[first["start"] : first["end"]] == claim["sentence"]
        assert claim["label"] in {label.value for label in CLAIM_LABELS}
        assert claim["verdict"]["claim"] == claim["text"]
    counted = sum(result["summary"]["counts"].values())
    assert counted == len(result["claims"]) == result["summary"]["claims"]
    assert (tmp_path / "result.json").exists()
