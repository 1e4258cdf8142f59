"""Offline stand-ins for ToE's search tools: BM25 corpora built from the shared datasets.

ToE's agent searches arXiv, fact-checking sites and the web (§III-B). Offline, three
corpora built from the benchmark data stand in for them, and the sources ``arxiv:offline``,
``factcheck:offline`` and ``news-offline`` open them by name:

    info = ensure_standin("academic", data_dir())  # built on first use, then reused
    CorpusSource(info.name).search("saliva test for SARS-CoV-2", k=3)
    standin_record("academic")["files"]            # which files, with their SHA-256

========== ==================== ===================== =====================================
kind       corpus               stands in for         documents
========== ==================== ===================== =====================================
academic   standin-academic     arXiv                 Check-COVID's 347 CORD-19 abstracts
factcheck  standin-factcheck    fact-checking sites   one PolitiFact ruling per LIAR-PLUS
                                                      validation statement
news       standin-news         the web               PolitiFact (SheepDog) and GossipCop
                                                      article texts, labels dropped
========== ==================== ===================== =====================================

No document has a URL or a date: none is in these files, and none is made up. The selected
documents are written once per version (a digest of the input bytes and of these rules) to
``<cache>/datasets/standins/KIND/documents-VERSION.jsonl``, then indexed with
`verity.sources.corpus.build_corpus` as corpus ``standin-KIND`` (under ``<cache>/corpora``
unless ``root`` says otherwise). Beside the corpus's own ``manifest.json``,
``standin.json`` records the input files with their checksums, how many documents were
kept and how many rows were skipped, by reason. The same data gives the same documents,
ids and passages, however often it is built.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verity.bench.loaders.common import (
    DataReader,
    at_row,
    list_field,
    map_label,
    str_field,
    write_atomic,
)
from verity.bench.loaders.liar import TOE_LABELS, statement_id, undo_csv_quoting
from verity.bench.news_standin import NewsDocument
from verity.errors import BadInputError
from verity.paths import cache_path
from verity.sources.corpus import CorpusInfo, build_corpus, corpora_root, list_corpora

# Part of the version: a change of the selection or of the document format gets new files.
_FORMAT = "1"
RECORD_FILE = "standin.json"
CHECK_COVID_CORPUS = "corpus.json"
LIAR_PLUS_VAL = "val2.jsonl"
SHEEPDOG_FILES = ("politifact_train.jsonl", "politifact_test.jsonl")
GOSSIPCOP_FILE = "gossipcop_complete_cleaned_less512.csv"


@dataclass(frozen=True)
class StandinDocuments:
    """The documents of one stand-in, as written for indexing, and the record of them."""

    kind: str
    corpus: str
    documents: tuple[dict[str, str], ...]
    record: dict[str, Any]

    @property
    def version(self) -> str:
        """Changes whenever the documents can: the input bytes or the rules."""
        return str(self.record["version"])


@dataclass
class _Read:
    """What one reader function found: documents, skipped rows by reason, extra counts."""

    documents: list[dict[str, str]]
    readers: list[DataReader]
    skipped: Counter[str]
    counts: dict[str, int]


def _academic(root: Path) -> _Read:
    """Check-COVID's abstracts: id = cord_id, the claims' gold evidence on Check-COVID."""
    reader = DataReader(root, "Check-COVID")
    path = reader.path(CHECK_COVID_CORPUS)
    documents: list[dict[str, str]] = []
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for line, obj in reader.jsonl(CHECK_COVID_CORPUS):
        with at_row(path, f"line {line}"):
            cord_id = str_field(obj, "cord_id").strip()
            sentences = [str(s).strip() for s in list_field(obj, "abstract")]
            text = " ".join(s for s in sentences if s)
            title = str_field(obj, "title", optional=True).strip()
        if not text:
            skipped["empty abstract"] += 1
        elif cord_id in seen:
            skipped["duplicate cord_id"] += 1
        else:
            seen.add(cord_id)
            # The id is the cord_id exactly: the Check-COVID leakage guard drops a claim's
            # own gold abstracts by it.
            documents.append({"id": cord_id, "title": title, "text": text})
    return _Read(documents, [reader], skipped, {})


def ruling_text(statement: str, speaker: str, rating: str, justification: str) -> str:
    r"""A ruling as one document: labelled fields, each its own paragraph.

    A field with nothing in it (no speaker, no justification) is left out:

        ruling_text("Says X.", "jane-doe", "false", "The record shows ...")
        # 'Statement: Says X.\n\nSpeaker: jane-doe\n\nPolitiFact rating: false\n\n...'
    """
    parts = [f"Statement: {statement}"]
    if speaker:
        parts.append(f"Speaker: {speaker}")
    parts.append(f"PolitiFact rating: {rating}")
    if justification:
        parts.append(f"Justification: {justification}")
    return "\n\n".join(parts)


def _factcheck(root: Path) -> _Read:
    """One ruling per LIAR-PLUS validation statement, disjoint from LIAR test."""
    reader = DataReader(root, "LIAR-PLUS")
    path = reader.path(LIAR_PLUS_VAL)
    documents: list[dict[str, str]] = []
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    without = 0
    for line, obj in reader.jsonl(LIAR_PLUS_VAL):
        with at_row(path, f"line {line}"):
            doc_id = statement_id(str_field(obj, "json_file_id"))
            rating = str_field(obj, "label")
            map_label(TOE_LABELS, rating)  # one of LIAR's six ratings, or the row is bad
            statement = undo_csv_quoting(str_field(obj, "claim"))
            speaker = str_field(obj, "originator", optional=True).strip()
            justification = undo_csv_quoting(str_field(obj, "justification", optional=True))
        if not statement or not doc_id:
            skipped["empty statement or id"] += 1
            continue
        if doc_id in seen:
            skipped["duplicate statement id"] += 1
            continue
        seen.add(doc_id)
        if not justification:
            without += 1
        documents.append(
            {
                "id": doc_id,
                "title": f"PolitiFact ruling: {statement}",
                "text": ruling_text(statement, speaker, rating, justification),
            }
        )
    return _Read(documents, [reader], skipped, {"kept_without_justification": without})


def _news(root: Path) -> _Read:
    """Article texts of PolitiFact (SheepDog) and GossipCop; nothing of their labels."""
    sheepdog = DataReader(root, "PolitiFact_SheepDog")
    gossipcop = DataReader(root, "GossipCop")
    candidates: list[NewsDocument] = []
    skipped: Counter[str] = Counter()
    for name in SHEEPDOG_FILES:
        path = sheepdog.path(name)
        for line, obj in sheepdog.jsonl(name):
            with at_row(path, f"line {line}"):
                text = str_field(obj, "text")
            if text.strip():
                candidates.append(NewsDocument("politifact", "", text))
            else:
                skipped["politifact: empty text"] += 1
    for _, row in gossipcop.csv_rows(GOSSIPCOP_FILE, fields=("title", "content")):
        if row["content"].strip():
            candidates.append(NewsDocument("gossipcop", row["title"].strip(), row["content"]))
        else:
            skipped["gossipcop: empty content"] += 1
    kept: dict[str, NewsDocument] = {}
    for doc in candidates:
        if not doc.key:
            skipped[f"{doc.part}: no words"] += 1
        elif doc.id in kept:
            skipped[f"{doc.part}: same text as another article"] += 1
        else:
            kept[doc.id] = doc
    parts = Counter(doc.part for doc in kept.values())
    # Sorted by id, which is a hash of the text: the order tells nothing of file or label.
    documents = [
        {"id": doc.id, "title": doc.title, "text": doc.text}
        for doc in sorted(kept.values(), key=lambda d: d.id)
    ]
    counts = {f"kept_from_{part}": parts[part] for part in ("politifact", "gossipcop")}
    return _Read(documents, [sheepdog, gossipcop], skipped, counts)


@dataclass(frozen=True)
class _Kind:
    corpus: str
    stands_in_for: str
    read: Callable[[Path], _Read]
    note: str


KINDS: dict[str, _Kind] = {
    "academic": _Kind(
        "standin-academic",
        "arXiv (ToE's academic tool)",
        _academic,
        "CORD-19 abstracts of Check-COVID's corpus, undated, without URLs. On Check-COVID "
        "they are the claims' gold evidence: its leakage guard drops each claim's own "
        "abstracts by id (the cord_id).",
    ),
    "factcheck": _Kind(
        "standin-factcheck",
        "fact-checking sites (ToE's PolitiFact and Snopes tool)",
        _factcheck,
        "PolitiFact rulings of LIAR-PLUS's validation split (LIAR's validation statements, "
        "disjoint from LIAR test and train): statement, speaker, rating and justification, "
        "undated, without URLs. The id is PolitiFact's statement id.",
    ),
    "news": _Kind(
        "standin-news",
        "the web (ToE's web and counter-evidence tools)",
        _news,
        "News article texts of FakeNewsNet PolitiFact (SheepDog's train and test) and "
        "GossipCop (short-article subset), fake and real alike, without labels, file "
        "names, URLs or dates; ids are hashes of the text.",
    ),
}


def standin_kinds() -> list[str]:
    """The stand-ins that can be built: ``academic``, ``factcheck``, ``news``."""
    return list(KINDS)


def corpus_name(kind: str) -> str:
    """The corpus a stand-in is indexed as: ``standin-academic`` and so on."""
    return _kind(kind).corpus


def _kind(kind: str) -> _Kind:
    try:
        return KINDS[kind]
    except KeyError:
        known = ", ".join(KINDS)
        raise BadInputError(f"unknown stand-in {kind!r}; choose one of {known}") from None


def standin_documents(kind: str, data_dir: Path) -> StandinDocuments:
    """Read and select the documents of stand-in ``kind``; nothing is written.

    The record says which files (with SHA-256) went in, what was kept and what skipped:

        docs = standin_documents("factcheck", data_dir())
        docs.record["documents"], docs.record["skipped"], docs.documents[0]["id"]
    """
    spec = _kind(kind)
    found = spec.read(data_dir)
    # Paths relative to the data folder: the record does not depend on where it lives.
    files = [
        {"path": f"{reader.folder.name}/{path.name}", "sha256": reader.digest(path.name)}
        for reader in found.readers
        for path in reader.files
    ]
    version = hashlib.sha256(f"{_FORMAT}|{kind}".encode())
    for entry in files:
        version.update(f"|{entry['path']}|{entry['sha256']}".encode())
    record: dict[str, Any] = {
        "kind": kind,
        "corpus": spec.corpus,
        "stands_in_for": spec.stands_in_for,
        "version": f"{_FORMAT}-{version.hexdigest()[:16]}",
        "files": files,
        "documents": len(found.documents),
        **found.counts,
        "skipped": dict(sorted(found.skipped.items())),
        "urls": False,
        "dated": False,
        "note": spec.note,
    }
    return StandinDocuments(kind, spec.corpus, tuple(found.documents), record)


def _documents_file(docs: StandinDocuments) -> Path:
    """The documents as JSONL in the cache, written once per version."""
    target = cache_path("datasets", "standins", docs.kind, f"documents-{docs.version}.jsonl")
    if not target.is_file():
        lines = [json.dumps(doc, ensure_ascii=False) for doc in docs.documents]
        write_atomic(target, "\n".join(lines) + "\n", "the stand-in file")
    return target


def build_standin(kind: str, data_dir: Path, *, root: Path | None = None) -> CorpusInfo:
    """Build (or rebuild) stand-in ``kind`` from the datasets under ``data_dir``.

    ``root`` is the folder of corpora (default ``<cache>/corpora``, where the sources look).

        info = build_standin("news", data_dir())
        info.name, info.documents, info.passages  # 'standin-news', ...
    """
    docs = standin_documents(kind, data_dir)
    source = _documents_file(docs)
    info = build_corpus(source, docs.corpus, root=root)
    record = {**docs.record, "documents_file": str(source)}
    # Written after the corpus: its presence says the corpus was built from these files.
    write_atomic(info.path / RECORD_FILE, json.dumps(record, indent=2) + "\n", "the stand-in file")
    return info


def standin_record(kind: str, *, root: Path | None = None) -> dict[str, Any] | None:
    """What the built stand-in ``kind`` was made from, or None when it is not built."""
    path = corpora_root(root) / _kind(kind).corpus / RECORD_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def ensure_standin(kind: str, data_dir: Path, *, root: Path | None = None) -> CorpusInfo:
    """Stand-in ``kind``, built if it is missing or was built from other data.

    For the bench harness: cheap when the corpus is up to date (the input files are read
    and hashed, nothing is indexed).

        info = ensure_standin("factcheck", data_dir())
        CorpusSource(info.name)
    """
    spec = _kind(kind)
    docs = standin_documents(kind, data_dir)
    built = {info.name: info for info in list_corpora(root)}.get(spec.corpus)
    record = standin_record(kind, root=root)
    # The record lives in the corpus folder, which a rebuild (of any documents) replaces
    # whole: a record of this version means the corpus holds these documents.
    if built is not None and record is not None and record.get("version") == docs.version:
        return built
    return build_standin(kind, data_dir, root=root)


def describe(record: dict[str, Any]) -> list[str]:
    """The record as lines for a terminal: what went in, what was kept and skipped."""
    lines = [f"stand-in for {record['stands_in_for']}: corpus {record['corpus']}"]
    lines += [f"  from {f['path']} (sha256 {f['sha256']})" for f in record["files"]]
    lines.append(f"  documents kept: {record['documents']:,}")
    for key, value in record.items():
        if key.startswith("kept_"):
            lines.append(f"  {key.replace('_', ' ')}: {value:,}")
    for reason, count in record["skipped"].items():
        lines.append(f"  skipped ({reason}): {count:,}")
    lines.append(f"  {record['note']}")
    return lines
