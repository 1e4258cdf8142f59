"""Each offline stand-in, built from the shared data, answers a query through its spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from verity.bench.standins import ensure_standin
from verity.sources.leakage import GuardedSource
from verity.sources.registry import STANDINS, make_source

DATA = Path("../shared/datasets")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}"),
]

QUERIES = {
    "arxiv:offline": ("hydroxychloroquine covid-19 patients", "Hydroxychloroquine"),
    "factcheck:offline": ("Obama unemployment rate stimulus", "Obama"),
    "news-offline": ("Kardashian divorce", "Kardashian"),
}


@pytest.mark.parametrize("spec", sorted(STANDINS))
def test_a_standin_built_from_the_data_answers_a_query(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    info = ensure_standin(STANDINS[spec][1], DATA.resolve())
    assert info.documents > 300
    source = make_source(spec)
    query, expected = QUERIES[spec]
    hits = source.search(query, k=3)
    assert len(hits) == 3
    assert {hit.source for hit in hits} == {spec}
    assert expected.casefold() in (hits[0].title + hits[0].text).casefold()


def test_the_rulings_are_silenced_where_politifact_is_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    ensure_standin("factcheck", DATA.resolve())
    rulings = make_source("factcheck:offline")
    assert GuardedSource(rulings, exclude_domains=("politifact.com",)).search("Obama") == []
    assert GuardedSource(rulings, exclude_domains=("snopes.com",)).search("Obama", k=2)
