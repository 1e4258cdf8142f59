"""The registry's new specs: arxiv, factcheck, reddit, social and the offline stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verity.errors import ConfigError, MissingKeyError, UnknownNameError
from verity.sources.arxiv import ArxivSource
from verity.sources.base import Source
from verity.sources.corpus import CorpusSource, build_corpus, corpora_root
from verity.sources.factcheck import FactCheckSearch, GoogleFactCheck, OfflineFactCheck
from verity.sources.reddit import RedditSource
from verity.sources.registry import STANDINS, make_source, source_names, source_status
from verity.sources.social import BlueskySource

NEW_NAMES = ("arxiv", "factcheck", "reddit", "social", "news-offline")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder of this test: no stand-in is built there."""
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "GOOGLE_FACTCHECK_API_KEY",
        "REDDIT_CLIENT_ID",
        "REDDIT_CLIENT_SECRET",
        "BLUESKY_HANDLE",
        "BLUESKY_APP_PASSWORD",
        "BRAVE_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


def build_standin(tmp_path: Path, corpus: str, text: str) -> None:
    data = tmp_path / f"{corpus}.jsonl"
    data.write_text(json.dumps({"id": "d1", "title": "T", "text": text}) + "\n", encoding="utf-8")
    build_corpus(data, corpus)  # under the default root: <VERITY_CACHE_DIR>/corpora


def statuses() -> dict[str, str]:
    return {name: status for name, _, status in source_status()}


def test_new_names_are_registered() -> None:
    assert set(NEW_NAMES) <= set(source_names())


def test_live_specs_build_their_sources(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ddgs")
    arxiv = make_source("arxiv")
    assert isinstance(arxiv, ArxivSource) and arxiv.name == "arxiv"
    default = make_source("factcheck")
    assert isinstance(default, FactCheckSearch)
    assert (default.name, default.to_dict()["web"]["type"]) == ("factcheck", "ddgs")
    social = make_source("social")
    assert isinstance(social, BlueskySource) and not social.authenticated

    monkeypatch.setenv("BRAVE_API_KEY", "BSA-x")
    monkeypatch.setenv("SERPER_API_KEY", "serper-x")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-x")
    monkeypatch.setenv("SEARXNG_URL", "https://searx.example.org")
    for provider in ("brave", "serper", "tavily", "searxng", "ddgs"):
        source = make_source(f"factcheck:{provider}")
        assert isinstance(source, FactCheckSearch)
        assert source.name == f"factcheck:{provider}"
        assert source.to_dict()["web"]["type"] == provider

    monkeypatch.setenv("GOOGLE_FACTCHECK_API_KEY", "AIza-x")
    google = make_source("factcheck:google")
    assert isinstance(google, GoogleFactCheck) and google.name == "factcheck:google"
    monkeypatch.setenv("REDDIT_CLIENT_ID", "id")
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", "secret")
    reddit = make_source("reddit")
    assert isinstance(reddit, RedditSource) and reddit.name == "reddit"
    monkeypatch.setenv("BLUESKY_HANDLE", "alice.bsky.social")
    monkeypatch.setenv("BLUESKY_APP_PASSWORD", "app-pass")
    signed_in = make_source("social")
    assert isinstance(signed_in, BlueskySource) and signed_in.authenticated
    for source in (arxiv, default, google, reddit, social):
        assert isinstance(source, Source)


def test_bad_specs_say_what_is_wrong(no_keys: None, cache: Path) -> None:
    with pytest.raises(MissingKeyError, match="GOOGLE_FACTCHECK_API_KEY"):
        make_source("factcheck:google")
    with pytest.raises(MissingKeyError, match="BRAVE_API_KEY"):
        make_source("factcheck:brave")
    with pytest.raises(MissingKeyError, match="REDDIT_CLIENT_ID"):
        make_source("reddit")
    with pytest.raises(ConfigError, match="factcheck takes one of google, offline, brave"):
        make_source("factcheck:politifact")
    with pytest.raises(ConfigError, match="arxiv takes no argument other than offline"):
        make_source("arxiv:2101.00001")
    for name in ("reddit", "social"):
        with pytest.raises(ConfigError, match=f"{name} has no offline stand-in"):
            make_source(f"{name}:offline")
        with pytest.raises(ConfigError, match="takes no argument"):
            make_source(f"{name}:x")
    with pytest.raises(ConfigError, match="news-offline takes no argument"):
        make_source("news-offline:x")
    with pytest.raises(UnknownNameError):
        make_source("twitter")


@pytest.mark.parametrize(
    ("spec", "corpus", "command"),
    [
        ("arxiv:offline", "standin-academic", "verity index build --standin academic"),
        ("factcheck:offline", "standin-factcheck", "verity index build --standin factcheck"),
        ("news-offline", "standin-news", "verity index build --standin news"),
    ],
)
def test_standins_missing_then_built(
    cache: Path, tmp_path: Path, spec: str, corpus: str, command: str
) -> None:
    assert STANDINS[spec][0] == corpus
    with pytest.raises(ConfigError, match=f"{corpus!r}, which is not built: run `{command}`"):
        make_source(spec)
    assert statuses()[spec] == f"not built: {command}"

    build_standin(tmp_path, corpus, "Measles vaccines are safe and effective.")
    assert corpora_root() == cache / "corpora"
    source = make_source(spec)
    assert isinstance(source, CorpusSource)
    assert source.name == spec and source.corpus == corpus
    (hit,) = source.search("measles vaccine", k=3)
    assert hit.source == spec
    assert source.to_dict()["label"] == spec and source.to_dict()["name"] == corpus
    assert statuses()[spec] == f"ready (corpus {corpus})"
    if spec == "factcheck:offline":
        assert isinstance(source, OfflineFactCheck)
        assert source.publishers == ("politifact.com",)
    else:
        assert not hasattr(source, "publishers")


def test_status_rows_of_the_new_sources(
    no_keys: None, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = {name: (what, status) for name, what, status in source_status()}
    assert rows["arxiv"][1] == "ready (needs network)"
    assert rows["factcheck[:PROVIDER]"][1] == "ready (needs network)"
    assert "politifact.com and snopes.com" in rows["factcheck[:PROVIDER]"][0]
    assert rows["factcheck:google"][1] == "GOOGLE_FACTCHECK_API_KEY not set"
    assert "substitute" in rows["factcheck:google"][0]
    assert rows["reddit"][1] == (
        "REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET not set; no offline stand-in"
    )
    assert "Twitter" in rows["social"][0]
    assert rows["social"][1].endswith("no offline stand-in")
    assert "BLUESKY_HANDLE" in rows["social"][1]
    # Registered names are listed once, not again as plug-ins.
    assert [name for name, (what, _) in rows.items() if what == "plug-in"] == [
        "kg-local",
        "wikidata",
    ]

    monkeypatch.setenv("GOOGLE_FACTCHECK_API_KEY", "AIza-x")
    monkeypatch.setenv("REDDIT_CLIENT_ID", "id")
    monkeypatch.setenv("BLUESKY_HANDLE", "alice.bsky.social")
    monkeypatch.setenv("BLUESKY_APP_PASSWORD", "p")
    now = statuses()
    assert now["factcheck:google"] == "GOOGLE_FACTCHECK_API_KEY set"
    assert now["reddit"].startswith("REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET not set")
    assert now["social"] == "ready (needs network; BLUESKY_HANDLE set); no offline stand-in"
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", "s")
    assert statuses()["reddit"] == (
        "REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET set; no offline stand-in"
    )


def test_a_corpus_without_a_label_is_unchanged(tmp_path: Path) -> None:
    plain = CorpusSource("notes", root=tmp_path)
    assert plain.name == "corpus:notes" and plain.label is None
    assert plain.to_dict() == {"type": "corpus", "name": "notes", "root": str(tmp_path)}
    named = CorpusSource("notes", root=tmp_path, label="my-notes")
    assert named.name == "my-notes"
    assert named.to_dict()["label"] == "my-notes"
