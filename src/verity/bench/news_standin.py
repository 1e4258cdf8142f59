"""``bench-news``: local news text standing in for the open web on the article datasets.

Offline, the article datasets (``politifact``, ``politifact-pp``, ``gossipcop``) give a
method only the configured sources, by default ``offline-wiki``: no web source at all, so
ZoFia's web quadrant stays empty, which is the paper's "w/o Open Web" ablation. In the
``open`` setting, when no configured source is a web source, the runner adds this corpus:

    standin = news_standin("politifact", data_dir())
    standin.source      # CorpusSource "corpus:bench-news", indexed once per dataset
    standin.manifest    # documents kept, excluded and why (stored in the run manifest)

Documents: the distinct CNN/DailyMail source articles of SummEval (100, each repeated
there for 16 summaries) and the human-written PolitiFact++ articles (``HR.json`` and
``HF.json``: title and text). The machine-written MR and MF files are left out: they are
not text anyone found on the web. A document carries an id derived from its text, its
title and its text, nothing else: no label, no file name, no URL and no date (none of
these files has a publication date, and a date cutoff keeps undated passages).

Every document that is, or nearly is, an article of the dataset under test (all its
splits, not only the sample) is dropped: an equal normalised title, or at least
`NEAR_COPY_SHARE` of the word `SHINGLE_WORDS`-gram shingles of the document found in one
benchmark article, or of that article found in the document. For ``politifact-pp`` the
whole PolitiFact++ part is dropped. What is left is news text, which the paper's web query
excludes (news sites and fact-checkers), so results with it are neither the paper's web
setting nor its w/o-web ablation: a named substitute, recorded in the manifest.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verity.bench.loaders.common import DataReader, as_records, at_row, str_field, write_atomic
from verity.errors import DatasetError
from verity.paths import cache_path
from verity.sources.base import PageSource, Source
from verity.sources.corpus import CorpusSource, build_corpus, list_corpora

STANDIN_CORPUS = "bench-news"
# The datasets whose subject is a news article, where the paper retrieves from the web.
NEWS_DATASETS = ("politifact", "politifact-pp", "gossipcop")
SHINGLE_WORDS = 8
# Half of the shingles: a reposted article keeps far more than half of its 8-word runs
# (boilerplate and a changed headline do not move it much), while two different stories
# on the same event share a few quotes and names, well below half.
NEAR_COPY_SHARE = 0.5
SUMMEVAL = "summeval"
POLITIFACT_PP = "politifact-pp"
# Part of the cached files' names: a change of selection or format gets new files.
_FORMAT = "1"
_WORD = re.compile(r"\w+")

NOTE = (
    "news text standing in for the open web: SummEval's CNN/DailyMail source articles and "
    "PolitiFact++'s human-written articles, undated, without URLs or labels. The paper's web "
    "query excludes news sites, so results with it are neither the paper's web setting nor "
    "its w/o Open Web ablation."
)


@dataclass(frozen=True)
class NewsDocument:
    """One candidate document; ``part`` says which collection it came from and stays here."""

    part: str
    title: str
    text: str

    @property
    def key(self) -> str:
        """The text with case, punctuation and spacing ignored: equal keys are one document."""
        return " ".join(words(self.text))

    @property
    def id(self) -> str:
        """An id from the text alone, so it tells nothing of the file or the label."""
        return "news-" + hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Selection:
    """The documents kept and, by reason, how many were dropped."""

    kept: tuple[NewsDocument, ...]
    excluded: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class WebStandin:
    """The indexed stand-in of one dataset and what went into it."""

    source: CorpusSource
    manifest: dict[str, Any]

    @property
    def version(self) -> str:
        """Changes whenever the documents can: the input files or the selection rules."""
        return str(self.manifest["version"])


def words(text: str) -> list[str]:
    """The words of a text, lower-cased, punctuation dropped."""
    return _WORD.findall(text.casefold())


def shingles(text: str, n: int = SHINGLE_WORDS) -> set[int]:
    """Hashes of every run of ``n`` consecutive words; a shorter text is one shingle.

    Python salts string hashes per process: compare shingles within one process only.
    """
    tokens = words(text)
    if len(tokens) < n:
        return {hash(tuple(tokens))} if tokens else set()
    # zip over n shifted views yields every run of n words without slicing in Python.
    return set(map(hash, zip(*(tokens[i:] for i in range(n)), strict=False)))


def has_web_source(sources: Iterable[Source]) -> bool:
    """True when a source is not Wikipedia-like (pages with titles), as ZoFia sorts them."""
    return any(not isinstance(s, PageSource) for s in sources)


def select_documents(
    candidates: Sequence[NewsDocument],
    articles: Sequence[tuple[str, str]],
    *,
    drop_parts: Iterable[str] = (),
    share: float = NEAR_COPY_SHARE,
) -> Selection:
    """The candidates that are not, nor nearly are, one of the ``(title, text)`` articles.

    Reasons, each document counted under the first that applies: ``dataset_under_test``
    (its part is in ``drop_parts``), ``same_title`` (equal normalised title), ``near_copy``
    (``share`` or more of its shingles in one article, or of one article's in it).
    """
    dropped = set(drop_parts)
    excluded = {"dataset_under_test": 0, "same_title": 0, "near_copy": 0}
    titles = {" ".join(words(title)) for title, _ in articles} - {""}
    pending: list[NewsDocument] = []
    for doc in candidates:
        if doc.part in dropped:
            excluded["dataset_under_test"] += 1
        elif titles and " ".join(words(doc.title)) in titles:
            excluded["same_title"] += 1
        else:
            pending.append(doc)

    own = [shingles(doc.text) for doc in pending]
    theirs_all = [shingles(text) for _, text in articles]
    # Only shingles found on both sides matter, and they are few: set intersections (fast)
    # leave the per-shingle counting loops with little to do.
    everywhere = set().union(*theirs_all)
    index: dict[int, list[int]] = {}
    for i, found in enumerate(own):
        for s in found & everywhere:
            index.setdefault(s, []).append(i)
    indexed = set(index)
    near: set[int] = set()
    for theirs in theirs_all:
        shared: Counter[int] = Counter()
        for s in theirs & indexed:
            for i in index[s]:
                shared[i] += 1
        for i, n in shared.items():
            # Both directions: a repost with extra paragraphs still holds the article.
            if n >= share * len(own[i]) or n >= share * len(theirs):
                near.add(i)
    excluded["near_copy"] = len(near)
    kept = tuple(doc for i, doc in enumerate(pending) if i not in near)
    return Selection(kept=kept, excluded=excluded)


# -- reading the files -----------------------------------------------------------------


def _distinct(docs: Iterable[NewsDocument], duplicates: Counter[str]) -> list[NewsDocument]:
    seen: set[str] = set()
    out: list[NewsDocument] = []
    for doc in docs:
        if not doc.key:
            continue
        if doc.key in seen:
            duplicates[doc.part] += 1
            continue
        seen.add(doc.key)
        out.append(doc)
    return out


def _summeval(reader: DataReader) -> list[NewsDocument]:
    name = "summeval.jsonl"
    path = reader.path(name)
    docs = []
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            docs.append(NewsDocument(SUMMEVAL, "", str_field(obj, "article")))
    return docs


def _politifact_pp(reader: DataReader, parts: Sequence[str]) -> list[tuple[str, str]]:
    """(title, text) of every record of the PolitiFact++ files ``parts``."""
    found = []
    for part in parts:
        name = f"{part}.json"
        path = reader.path(name)
        records = reader.json(name)
        if not isinstance(records, dict):
            raise DatasetError(f"{path}: expected a JSON object of records")
        for key, obj in records.items():
            with at_row(path, f"item {key!r}"):
                found.append(
                    (str_field(obj, "title", optional=True), str_field(obj, "text", optional=True))
                )
    return found


def _benchmark_articles(dataset: str, root: Path) -> tuple[list[tuple[str, str]], DataReader]:
    """(title, text) of every article of the dataset, in all its splits and files."""
    if dataset == "politifact":
        reader = DataReader(root, "PolitiFact_SheepDog")
        found = []
        for name in ("politifact_train.jsonl", "politifact_test.jsonl"):
            path = reader.path(name)
            for line, obj in reader.jsonl(name):
                with at_row(path, f"line {line}"):
                    found.append(("", str_field(obj, "text")))
        return found, reader
    if dataset == "politifact-pp":
        reader = DataReader(root, "PolitiFact++_Su2023")
        # The machine-written files rewrite the same stories: near copies count against them.
        return _politifact_pp(reader, ("HF", "HR", "MF", "MR")), reader
    if dataset == "gossipcop":
        reader = DataReader(root, "GossipCop")
        name = "gossipcop_complete_cleaned_less512.csv"
        # Rows without content are not benchmarked, but their titles are the dataset's too.
        found = [
            (row["title"], row["content"])
            for _, row in reader.csv_rows(name, fields=("title", "content"))
        ]
        # The titles of the whole GossipCop release (22,140): the short-article subset is
        # drawn from it, so a title from any of its splits counts.
        name = "all_data.json"
        path = reader.path(name)
        for number, obj in enumerate(as_records(reader.json(name), path)):
            with at_row(path, f"item {number}"):
                found.append((str_field(obj, "text", optional=True), ""))
        return found, reader
    raise DatasetError(f"no web stand-in for dataset {dataset!r}; it serves {NEWS_DATASETS}")


@dataclass(frozen=True)
class _Inputs:
    candidates: list[NewsDocument]
    duplicates: dict[str, int]
    articles: list[tuple[str, str]]
    dataset: str
    version: str
    files: list[str]


def _read_inputs(dataset: str, root: Path) -> _Inputs:
    summeval = DataReader(root, "SummEval")
    pfpp = DataReader(root, "PolitiFact++_Su2023")
    duplicates: Counter[str] = Counter()
    human = [NewsDocument(POLITIFACT_PP, t, x) for t, x in _politifact_pp(pfpp, ("HR", "HF"))]
    candidates = _distinct([*_summeval(summeval), *human], duplicates)
    articles, reference = _benchmark_articles(dataset, root)
    readers = (summeval, pfpp, reference)
    # The version pins every byte read and every rule, so a cached selection is reused
    # only when it would come out the same.
    digest = hashlib.sha256(f"{_FORMAT}|{SHINGLE_WORDS}|{NEAR_COPY_SHARE}|{dataset}".encode())
    for reader in readers:
        digest.update(reader.checksum().encode())
    return _Inputs(
        candidates=candidates,
        duplicates=dict(duplicates),
        articles=articles,
        dataset=dataset,
        version=f"{_FORMAT}-{digest.hexdigest()[:16]}",
        files=sorted({str(p) for reader in readers for p in reader.files}),
    )


def _select(inputs: _Inputs) -> tuple[Selection, dict[str, Any]]:
    drop = (POLITIFACT_PP,) if inputs.dataset == "politifact-pp" else ()
    selection = select_documents(inputs.candidates, inputs.articles, drop_parts=drop)
    record: dict[str, Any] = {
        "corpus": STANDIN_CORPUS,
        "dataset": inputs.dataset,
        "version": inputs.version,
        "documents": len(selection.kept),
        "kept": dict(Counter(doc.part for doc in selection.kept)),
        "candidates": dict(Counter(doc.part for doc in inputs.candidates)),
        "duplicates_merged": inputs.duplicates,
        "excluded": selection.excluded,
        "benchmark_articles": len(inputs.articles),
        "shingle_words": SHINGLE_WORDS,
        "near_copy_share": NEAR_COPY_SHARE,
        "files": inputs.files,
        "dated": False,
        "note": NOTE,
    }
    return selection, record


def standin_documents(dataset: str, root: Path) -> tuple[Selection, dict[str, Any]]:
    """The selected documents for ``dataset`` and the record of how they were chosen.

    Nothing is written or indexed (`news_standin` does that):

        selection, record = standin_documents("gossipcop", data_dir())
        record["documents"], record["excluded"]  # kept, and dropped by reason
    """
    return _select(_read_inputs(dataset, root))


# -- writing and indexing --------------------------------------------------------------


def news_standin(dataset: str, root: Path) -> WebStandin:
    """The ``bench-news`` corpus for ``dataset``, built and indexed on first use.

    Stored under ``<cache>/datasets/bench-news/DATASET/``: the selected documents as
    ``documents-VERSION.jsonl`` (``{id, title, text}``), their record as
    ``documents-VERSION.json``, and the index as corpus ``bench-news`` in that folder
    (the same `build_corpus` that indexes Check-COVID's abstracts). It is rebuilt only when
    the version changes.
    """
    inputs = _read_inputs(dataset, root)
    folder = cache_path("datasets", STANDIN_CORPUS, dataset, "documents").parent
    documents = folder / f"documents-{inputs.version}.jsonl"
    described = folder / f"documents-{inputs.version}.json"
    if documents.is_file() and described.is_file():
        # Where the files are read from may differ from the run that wrote the record.
        record = {**json.loads(described.read_text(encoding="utf-8")), "files": inputs.files}
    else:
        selection, record = _select(inputs)
        # Sorted by id, which comes from the text: the file order says nothing of origin.
        lines = [
            json.dumps({"id": doc.id, "title": doc.title, "text": doc.text}, ensure_ascii=False)
            for doc in sorted(selection.kept, key=lambda d: d.id)
        ]
        write_atomic(documents, "\n".join(lines) + "\n", "the web stand-in")
        # Written last: its presence means the documents file is complete.
        write_atomic(described, json.dumps(record, indent=2) + "\n", "the web stand-in")
    built = {info.name: info for info in list_corpora(folder)}.get(STANDIN_CORPUS)
    if built is None or built.source != str(documents.resolve()):
        build_corpus(documents, STANDIN_CORPUS, root=folder)
    return WebStandin(
        source=CorpusSource(STANDIN_CORPUS, root=folder),
        manifest={**record, "path": str(documents)},
    )
