"""The bench-news web stand-in: which documents it keeps, and when the runner adds it.

Most tests build a small data folder of their own (the real files' layout, made-up text),
so every exclusion rule is exercised on a case made for it; one test reads the real files.
"""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path
from typing import Any, ClassVar

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.bench.datasets import load_dataset
from verity.bench.news_standin import (
    NEAR_COPY_SHARE,
    NEWS_DATASETS,
    STANDIN_CORPUS,
    NewsDocument,
    has_web_source,
    news_standin,
    select_documents,
    standin_documents,
)
from verity.bench.runner import BenchConfig, prepare, run_id_of
from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.sources.corpus import CorpusSource

REAL_DATA = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()


def text(seed: int, n: int = 120) -> str:
    """Made-up prose: ``n`` words drawn from a large vocabulary, so texts share no 8-gram."""
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(1_000_000)}" for _ in range(n)) + "."


def near_copy(original: str, keep: float, seed: int) -> str:
    """The first ``keep`` share of the words of ``original``, then new words."""
    tokens = original.rstrip(".").split()
    cut = int(len(tokens) * keep)
    return " ".join(tokens[:cut]) + " " + text(seed, len(tokens) - cut)


# The synthetic folder: what each text is, so the tests can say what must be dropped.
SHEEPDOG_TEST = text(1)
SHEEPDOG_TRAIN = text(2)
SHEEPDOG_SHORT = text(3, 30)  # a short article, quoted whole inside a long document
SUMMEVAL_PLAIN = text(10)
SUMMEVAL_EXACT = SHEEPDOG_TEST  # an exact copy of a test article
SUMMEVAL_NEAR = near_copy(SHEEPDOG_TRAIN, 0.7, 11)  # a near copy of a train article
SUMMEVAL_QUOTES = text(12, 100) + " " + SHEEPDOG_SHORT + " " + text(13, 100)
SUMMEVAL_FAR = near_copy(SHEEPDOG_TRAIN, 0.3, 14)  # shares less than half: kept
HR_TITLED = ("Senate passes the budget bill", text(20))
HR_OTHER = ("Governor signs a water law", text(21))
HF_FAKE = ("Celebrity secretly married in Paris!", text(22))
MF_TEXT = text(23)


def write_folder(root: Path) -> Path:
    (root / "SummEval").mkdir(parents=True)
    rows = []
    for article_id, article in enumerate(
        [SUMMEVAL_PLAIN, SUMMEVAL_EXACT, SUMMEVAL_NEAR, SUMMEVAL_QUOTES, SUMMEVAL_FAR]
    ):
        for summary in range(3):  # every article repeated, as in SummEval
            rows.append({"article_id": f"A{article_id}", "summary_id": f"S{summary}",
                         "article": article, "summary": "s", "consistency": 5.0})  # fmt: skip
    (root / "SummEval" / "summeval.jsonl").write_text(
        "\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8"
    )
    pfpp = root / "PolitiFact++_Su2023"
    pfpp.mkdir()

    def records(*items: tuple[str, str]) -> str:
        return json.dumps(
            {
                str(i): {"id": f"politifact{100 + i}", "title": t, "text": x, "description": "d"}
                for i, (t, x) in enumerate(items)
            }
        )

    # HF_FAKE is released in HR as well, as one PolitiFact++ article is: kept once.
    (pfpp / "HR.json").write_text(records(HR_TITLED, HR_OTHER, HF_FAKE), encoding="utf-8")
    (pfpp / "HF.json").write_text(records(HF_FAKE), encoding="utf-8")
    (pfpp / "MF.json").write_text(records(("", MF_TEXT)), encoding="utf-8")
    (pfpp / "MR.json").write_text(records(("", text(24))), encoding="utf-8")
    sheepdog = root / "PolitiFact_SheepDog"
    sheepdog.mkdir()
    (sheepdog / "politifact_test.jsonl").write_text(
        json.dumps({"idx": 0, "text": SHEEPDOG_TEST, "label": 1}) + "\n"
        + json.dumps({"idx": 1, "text": text(4), "label": 0}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    (sheepdog / "politifact_train.jsonl").write_text(
        json.dumps({"idx": 0, "text": SHEEPDOG_TRAIN, "label": 0}) + "\n"
        + json.dumps({"idx": 1, "text": SHEEPDOG_SHORT, "label": 1}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    gossip = root / "GossipCop"
    gossip.mkdir()
    with (gossip / "gossipcop_complete_cleaned_less512.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["id", "title", "content", "label"])
        # A different story under the same title as a PolitiFact++ article (case and
        # punctuation aside): dropped for its title.
        out.writerow(["1", "SENATE passes the budget-bill", text(30), "real"])
        out.writerow(["2", "Star opens a bakery", text(31), "fake"])
    # A title from the whole GossipCop release counts too.
    (gossip / "all_data.json").write_text(
        json.dumps([{"id": "gossipcop-9", "text": HF_FAKE[0], "label": 1, "url": ""}]),
        encoding="utf-8",
    )
    return root


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    return write_folder(tmp_path / "datasets")


def kept_texts(dataset: str, root: Path) -> list[str]:
    selection, _ = standin_documents(dataset, root)
    return [doc.text for doc in selection.kept]


# -- the documents -----------------------------------------------------------------------


def test_gossipcop_keeps_summeval_and_politifact_pp_minus_same_titles(data: Path) -> None:
    selection, record = standin_documents("gossipcop", data)
    # 5 distinct SummEval articles (15 rows); 3 distinct human-written PolitiFact++ ones.
    assert record["candidates"] == {"summeval": 5, "politifact-pp": 3}
    assert record["duplicates_merged"] == {"summeval": 10, "politifact-pp": 1}
    # The CSV title and the all_data.json title each drop one PolitiFact++ article.
    assert record["excluded"] == {"dataset_under_test": 0, "same_title": 2, "near_copy": 0}
    assert {doc.text for doc in selection.kept} == {
        SUMMEVAL_PLAIN, SUMMEVAL_EXACT, SUMMEVAL_NEAR, SUMMEVAL_QUOTES, SUMMEVAL_FAR,
        HR_OTHER[1],
    }  # fmt: skip
    assert record["documents"] == 6 and record["kept"] == {"summeval": 5, "politifact-pp": 1}
    assert record["dated"] is False
    # MF and MR (machine-written) are not candidates.
    assert MF_TEXT not in {doc.text for doc in selection.kept}


def test_politifact_drops_an_exact_copy_a_near_copy_and_a_quoted_article(data: Path) -> None:
    selection, record = standin_documents("politifact", data)
    texts = {doc.text for doc in selection.kept}
    assert SUMMEVAL_EXACT not in texts  # a test-split article
    assert SUMMEVAL_NEAR not in texts  # 70% of a train-split article: all splits count
    assert SUMMEVAL_QUOTES not in texts  # holds a whole (short) train article
    assert SUMMEVAL_FAR in texts  # 30% of an article is a shared passage, not a copy
    assert SUMMEVAL_PLAIN in texts and HR_TITLED[1] in texts and HF_FAKE[1] in texts
    assert record["excluded"] == {"dataset_under_test": 0, "same_title": 0, "near_copy": 3}
    assert record["benchmark_articles"] == 4


def test_politifact_pp_drops_politifact_pp_wholesale(data: Path) -> None:
    selection, record = standin_documents("politifact-pp", data)
    assert {doc.part for doc in selection.kept} == {"summeval"}
    assert record["excluded"]["dataset_under_test"] == 3
    assert record["documents"] == 5
    assert record["benchmark_articles"] == 6  # HF, HR, MF and MR records


def test_the_near_copy_threshold_on_both_sides_of_it() -> None:
    article = text(40, 200)
    # 200 words: 193 shingles. Keeping the first k words shares k - 7 of them.
    above = near_copy(article, 0.56, 41)  # 112 words: 105 / 193 = 0.54
    below = near_copy(article, 0.48, 42)  # 96 words: 89 / 193 = 0.46
    docs = [NewsDocument("summeval", "", above), NewsDocument("summeval", "", below)]
    selection = select_documents(docs, [("", article)])
    assert NEAR_COPY_SHARE == 0.5
    assert [doc.text for doc in selection.kept] == [below]
    assert selection.excluded["near_copy"] == 1
    # A stricter threshold keeps both.
    assert len(select_documents(docs, [("", article)], share=0.6).kept) == 2


def test_a_short_text_is_compared_whole() -> None:
    docs = [NewsDocument("summeval", "", "Breaking: it rained."),
            NewsDocument("summeval", "", "Breaking: it snowed.")]  # fmt: skip
    selection = select_documents(docs, [("", "breaking it RAINED")])
    assert [doc.text for doc in selection.kept] == ["Breaking: it snowed."]


def test_the_corpus_carries_no_label_and_no_hint_of_one(data: Path) -> None:
    standin = news_standin("gossipcop", data)
    lines = Path(standin.manifest["path"]).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == standin.manifest["documents"] == 6
    for record in records:
        assert set(record) == {"id", "title", "text"}  # no label, URL or date
        assert record["id"].startswith("news-")
        for hint in ("HR", "HF", "summeval", "politifact", "fake", "real"):
            assert hint.lower() not in record["id"].lower()
    # Ordered by id, which comes from the text: the order says nothing of origin.
    assert [r["id"] for r in records] == sorted(r["id"] for r in records)
    # Titles are the articles' own; SummEval's articles have none.
    assert {r["title"] for r in records} == {"", HR_OTHER[0]}
    passages = (standin.source.path / "passages.jsonl").read_text(encoding="utf-8")
    assert '"label"' not in passages and "HR.json" not in passages


def test_indexed_once_per_dataset_and_searchable(data: Path) -> None:
    first = news_standin("politifact", data)
    assert isinstance(first.source, CorpusSource) and first.source.name == "corpus:bench-news"
    built = (first.source.path / "manifest.json").stat().st_mtime_ns
    again = news_standin("politifact", data)
    assert again.version == first.version
    assert (again.source.path / "manifest.json").stat().st_mtime_ns == built  # not rebuilt
    other = news_standin("politifact-pp", data)
    assert other.source.path != first.source.path and other.version != first.version
    hits = first.source.search(HR_TITLED[1].split()[5], k=3)
    assert hits and hits[0].title == HR_TITLED[0]
    assert all(h.url is None and h.published is None for h in hits)


def test_web_sources_are_those_without_titled_pages() -> None:
    assert not has_web_source([])
    assert not has_web_source([PageLike()])
    assert has_web_source([PageLike(), WebLike()])
    assert has_web_source([CorpusSource("anything")])


@pytest.mark.skipif(not REAL_DATA.is_dir(), reason=f"benchmark data not at {REAL_DATA}")
def test_real_files_counts_add_up() -> None:
    # Two of the three datasets keep the test near two seconds; gossipcop's rules are the
    # same code, exercised on the synthetic folder above.
    records = {
        name: standin_documents(name, REAL_DATA)[1] for name in ("politifact", "politifact-pp")
    }
    for name, record in records.items():
        candidates = sum(record["candidates"].values())
        assert record["candidates"]["summeval"] == 100, name
        assert record["duplicates_merged"]["summeval"] == 1500, name
        assert record["documents"] + sum(record["excluded"].values()) == candidates, name
    assert records["politifact-pp"]["kept"].get("politifact-pp", 0) == 0
    # SheepDog's articles are FakeNewsNet PolitiFact articles, as PolitiFact++'s are.
    assert records["politifact"]["excluded"]["near_copy"] > 0


# -- when the runner adds it ------------------------------------------------------------


class PageLike:
    """A Wikipedia-like source: titled pages that can be looked up."""

    name = "fake-wiki"

    def search(self, query: str, k: int = 5, **_: Any) -> list[Evidence]:
        return []

    def lookup(self, title: str) -> Evidence | None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"type": "fake-wiki"}


class WebLike:
    """A web search provider: results without page lookup."""

    name = "fake-web"

    def search(self, query: str, k: int = 5, **_: Any) -> list[Evidence]:
        return []

    def to_dict(self) -> dict[str, Any]:
        return {"type": "fake-web"}


class FakeMethod:
    """Records the sources it was built with; says REAL to everything."""

    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)

    def __init__(self, sources: Any) -> None:
        self.sources = list(sources)

    def verify(self, subject: Claim | Article, *, evidence: Any = None) -> Verdict:
        return Verdict(label=Label.REAL, method="fake", subject=subject)

    def to_dict(self) -> dict[str, Any]:
        return {"method": "fake", "sources": [s.to_dict() for s in self.sources]}


def claim_split(name: str) -> DatasetSplit:
    examples = (Example(id="1", subject=Claim(text="The sky is green."), label=Label.REFUTED),)
    return DatasetSplit(
        name=name, examples=examples, labels=(Label.SUPPORTED, Label.REFUTED), files=(),
        checksum="0", description="a claim dataset", label_map={},
    )  # fmt: skip


def prepared(
    root: Path, tmp_path: Path, given: list[Any], *, dataset: str = "politifact", **overrides: Any
) -> tuple[Any, FakeMethod]:
    built: list[FakeMethod] = []

    def build(name: str, sources: Any) -> FakeMethod:
        built.append(FakeMethod(sources))
        return built[-1]

    def load(name: str, **kwargs: Any) -> DatasetSplit:
        return load_dataset(name, **kwargs) if name in NEWS_DATASETS else claim_split(name)

    config = BenchConfig(
        dataset=dataset, methods=("direct",), out=tmp_path / "out", sample=None,
        data_dir=root, **overrides,
    )  # fmt: skip
    run = prepare(config, load=load, build=build, sources=lambda split: list(given))
    run.close()
    return run, built[0]


def test_added_in_the_open_setting_when_no_web_source_is_configured(
    data: Path, tmp_path: Path
) -> None:
    for given in ([PageLike()], []):
        run, method = prepared(data, tmp_path, given)
        names = [s.name for s in method.sources]
        assert names == [*(s.name for s in given), f"corpus:{STANDIN_CORPUS}"]
        standin = run.manifest["web_standin"]
        # 8 distinct candidates; three SummEval articles copy or hold a SheepDog article.
        assert standin["corpus"] == STANDIN_CORPUS and standin["documents"] == 5
        assert standin["excluded"] == {"dataset_under_test": 0, "same_title": 0, "near_copy": 3}
        assert run.manifest["sources"][-1]["name"] == STANDIN_CORPUS


def test_not_added_with_a_web_source_a_claim_dataset_closed_or_turned_off(
    data: Path, tmp_path: Path
) -> None:
    cases: list[tuple[list[Any], dict[str, Any]]] = [
        ([PageLike(), WebLike()], {}),
        ([CorpusSource("my-news")], {}),  # a corpus:NAME source is web text
        ([PageLike()], {"dataset": "liar"}),
        ([PageLike()], {"dataset": "check-covid"}),
        ([PageLike()], {"setting": "closed"}),
        ([PageLike()], {"web_standin": False}),
    ]
    for number, (given, overrides) in enumerate(cases):
        run, method = prepared(data, tmp_path / str(number), given, **overrides)
        assert STANDIN_CORPUS not in {getattr(s, "corpus", "") for s in method.sources}
        assert run.manifest["web_standin"] is None, overrides


def test_the_stand_in_is_part_of_the_run_id(data: Path, tmp_path: Path) -> None:
    with_it, _ = prepared(data, tmp_path / "a", [PageLike()])
    without, _ = prepared(data, tmp_path / "b", [PageLike()], web_standin=False)
    assert with_it.run_id != without.run_id
    # Without the stand-in the id is what it was before the stand-in existed, so stored
    # runs resume.
    ids = without.manifest["sample"]["ids"]
    assert without.run_id == run_id_of(without.config, ids, without.split.checksum)
    version = with_it.manifest["web_standin"]["version"]
    assert with_it.run_id == run_id_of(with_it.config, ids, with_it.split.checksum, version)
