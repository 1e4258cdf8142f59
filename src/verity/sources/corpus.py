"""Your own documents as an evidence source: build a BM25 index once, search it offline.

Input is a JSONL file (one object a line: ``text`` required; ``title``, ``url``, ``date``,
``id`` optional) or a folder of ``.txt``/``.md`` files. Long documents are cut into
sentence-aligned passages (`verity.nlp.text.chunk_text`), indexed with bm25s and stored
under ``<cache>/corpora/NAME`` (or ``ROOT/NAME``). A bad input line is skipped and reported
in `CorpusInfo.skipped` with its file and line number; the build fails only when nothing
valid is left, or at the first bad line with ``strict=True``.

    info = build_corpus(Path("news.jsonl"), "news")
    source = CorpusSource("news")
    source.search("flood defences", k=5, before=date(2021, 1, 1))

`BM25Index` is the bm25s wrapper this module and `verity.sources.offline_wiki` share.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from verity.domain import Evidence
from verity.errors import BadInputError, ConfigError, VerityError
from verity.paths import cache_path, publish_folder
from verity.sources.base import apply_filters
from verity.sources.bm25 import BM25Index, bm25s_version

FORMAT_VERSION = 1
DEFAULT_MAX_WORDS = 120
DEFAULT_OVERLAP_SENTENCES = 1
_TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # the whole name: fullmatch
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Skipped:
    """One input line or file left out of a corpus, and why.

    ``line`` is None when a whole file was left out.

        str(Skipped("news.jsonl", 3, "malformed JSON"))  # 'news.jsonl:3: malformed JSON'
    """

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    """What a corpus holds and what its build left out.

    Returned by `build_corpus` and `list_corpora`:

        info = build_corpus(Path("notes/"), "notes")
        print(info.documents, info.passages, [str(s) for s in info.skipped])
    """

    name: str
    path: Path
    source: str
    documents: int
    passages: int
    skipped: tuple[Skipped, ...] = ()
    built_at: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Document:
    id: str
    text: str
    title: str = ""
    url: str | None = None
    published: date | None = None
    file: str = ""
    line: int | None = None


def corpora_root(root: Path | None = None) -> Path:
    """The folder holding every corpus: ``root``, else ``<cache>/corpora``."""
    return root if root is not None else cache_path("corpora")


def _check_name(name: str, error: type[VerityError] = BadInputError) -> str:
    # A name typed for `index build` is input; one in `--source corpus:NAME` is configuration.
    if not _NAME.fullmatch(name):
        raise error(
            f"corpus name {name!r} must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def _parse_date(raw: Any) -> date | None:
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ValueError(f'"date" must be a string like "2020-01-31", got {type(raw).__name__}')
    text = raw.strip()
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f'unparseable "date" {raw!r}: use ISO 8601 such as "2020-01-31"') from None
    # An aware timestamp is dated in UTC, so a cutoff means the same day everywhere.
    return (moment.astimezone(UTC) if moment.tzinfo else moment).date()


def _optional_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f'"{key}" must be a string, got {type(value).__name__}')
    return value.strip() or None


def _document_from_json(obj: Any, file: str, line: int) -> _Document:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('missing or empty "text"')
    raw_id = obj.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int)):
        raise ValueError(f'"id" must be a string or an integer, got {type(raw_id).__name__}')
    default_id = f"{file}:{line}"
    doc_id = str(raw_id).strip() if raw_id is not None and str(raw_id).strip() else default_id
    return _Document(
        id=doc_id,
        text=text,
        title=_optional_str(obj, "title") or "",
        url=_optional_str(obj, "url"),
        published=_parse_date(obj.get("date")),
        file=file,
        line=line,
    )


def _read_jsonl(path: Path, skipped: list[Skipped]) -> Iterator[_Document]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                skipped.append(Skipped(path.name, number, f"not valid UTF-8 ({exc.reason})"))
                continue
            if not line.strip():
                continue  # blank lines separate nothing and are not errors
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                skipped.append(Skipped(path.name, number, f"malformed JSON ({exc.msg})"))
                continue
            except RecursionError:
                skipped.append(Skipped(path.name, number, "JSON nested too deeply"))
                continue
            try:
                yield _document_from_json(obj, path.name, number)
            except ValueError as exc:
                skipped.append(Skipped(path.name, number, str(exc)))


def _markdown_title(text: str) -> str | None:
    match = _HEADING.search(text)
    return match.group(1).strip() if match else None


def _read_folder(folder: Path, skipped: list[Skipped]) -> Iterator[_Document]:
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in _TEXT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise BadInputError(f"{folder}: no .txt or .md files found")
    for file in files:
        rel = file.relative_to(folder).as_posix()
        try:
            text = file.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            skipped.append(Skipped(rel, None, f"not valid UTF-8 ({exc.reason})"))
            continue
        if not text.strip():
            skipped.append(Skipped(rel, None, "empty file"))
            continue
        title = _markdown_title(text) if file.suffix.lower() != ".txt" else None
        if title is None:
            title = file.stem.replace("_", " ").strip()
        yield _Document(id=rel, text=text, title=title, file=rel)


def build_corpus(
    path: Path,
    name: str,
    *,
    root: Path | None = None,
    max_words: int = DEFAULT_MAX_WORDS,
    overlap_sentences: int = DEFAULT_OVERLAP_SENTENCES,
    strict: bool = False,
) -> CorpusInfo:
    """Read, split, index and store a document collection as corpus ``name``.

    ``path`` is a JSONL file or a folder of ``.txt``/``.md`` files (searched recursively,
    hidden ones ignored). A corpus of the same name is replaced in one step. Bad lines are
    skipped and listed in the result; ``strict=True`` makes the first one an error instead.

        info = build_corpus(Path("news.jsonl"), "news")
        info.documents, info.passages, info.skipped
    """
    from verity.nlp.text import chunk_text

    _check_name(name)
    path = Path(path).expanduser()
    skipped: list[Skipped] = []
    if path.is_dir():
        reader = _read_folder(path, skipped)
    elif path.is_file():
        reader = _read_jsonl(path, skipped)
    else:
        raise BadInputError(f"{path}: no such file or folder")

    documents: list[_Document] = []
    seen: set[str] = set()
    for doc in reader:
        if strict and skipped:
            break
        if doc.id in seen:
            skipped.append(Skipped(doc.file, doc.line, f"duplicate id {doc.id!r}"))
            continue
        seen.add(doc.id)
        documents.append(doc)
    if strict and skipped:
        raise BadInputError(str(skipped[0]))
    if not documents:
        problems = "; ".join(str(s) for s in skipped[:5]) or "the input is empty"
        raise BadInputError(f"{path}: no valid documents to index ({problems})")

    passages: list[dict[str, Any]] = []
    index_texts: list[str] = []
    for doc in documents:
        for number, chunk in enumerate(chunk_text(doc.text, max_words, overlap_sentences), 1):
            passages.append(
                {
                    "id": f"{doc.id}#{number}",
                    "doc_id": doc.id,
                    "title": doc.title,
                    "url": doc.url,
                    "date": doc.published.isoformat() if doc.published else None,
                    "text": chunk,
                }
            )
            # The title is indexed with every passage: it often names the subject.
            index_texts.append(f"{doc.title}\n{chunk}" if doc.title else chunk)

    index = BM25Index.build(index_texts)
    target = corpora_root(root) / name
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "max_words": max_words,
        "overlap_sentences": overlap_sentences,
        "stemmer": index.stemmer,
        "bm25s": bm25s_version(),
    }
    info = CorpusInfo(
        name=name,
        path=target,
        source=str(path.resolve()),
        documents=len(documents),
        passages=len(passages),
        skipped=tuple(skipped),
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        settings=settings,
    )
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=parent))
    try:
        index.save(tmp / "index")
        with (tmp / "passages.jsonl").open("w", encoding="utf-8") as out:
            for passage in passages:
                out.write(json.dumps(passage, ensure_ascii=False) + "\n")
        (tmp / "manifest.json").write_text(
            json.dumps(_manifest(info), ensure_ascii=False, indent=2), encoding="utf-8"
        )
        publish_folder(tmp, target, replace=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return info


def _manifest(info: CorpusInfo) -> dict[str, Any]:
    return {
        "format": FORMAT_VERSION,
        "name": info.name,
        "source": info.source,
        "documents": info.documents,
        "passages": info.passages,
        "skipped": [{"file": s.file, "line": s.line, "reason": s.reason} for s in info.skipped],
        "built_at": info.built_at,
        "settings": info.settings,
    }


def _info_from_manifest(folder: Path) -> CorpusInfo:
    data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return CorpusInfo(
        name=data["name"],
        path=folder,
        source=data.get("source", ""),
        documents=int(data["documents"]),
        passages=int(data["passages"]),
        skipped=tuple(Skipped(s["file"], s.get("line"), s["reason"]) for s in data["skipped"]),
        built_at=data.get("built_at", ""),
        settings=dict(data.get("settings", {})),
    )


def list_corpora(root: Path | None = None) -> list[CorpusInfo]:
    """Every corpus built under ``root`` (default ``<cache>/corpora``), by name.

    Read from each corpus's manifest; nothing is loaded:

        [info.name for info in list_corpora()]
    """
    parent = corpora_root(root)
    if not parent.is_dir():
        return []
    found: list[CorpusInfo] = []
    for folder in sorted(parent.iterdir()):
        if folder.name.startswith(".") or not (folder / "manifest.json").is_file():
            continue
        try:
            found.append(_info_from_manifest(folder))
        except (OSError, ValueError, KeyError):
            continue  # a damaged corpus is not listed; searching it reports the problem
    return found


# -- searching a corpus --------------------------------------------------------------------


class CorpusSource:
    """BM25 search over a corpus built with `build_corpus` (``verity index build``).

    Cheap to construct; the index and passages load on first search (or `warm_up`). Results
    are filtered (date cutoff, excluded domains) while walking down the whole ranking, so
    ``k`` results come back whenever ``k`` passages pass the filters. Thread-safe.

        source = CorpusSource("news")
        for ev in source.search("river flooding", k=3, before=date(2020, 6, 1)):
            print(ev.id, ev.published, ev.score)
    """

    def __init__(self, name: str, *, root: Path | None = None, label: str | None = None) -> None:
        # Checked here, before the name becomes part of a path: "../x" must name nothing.
        self.corpus = _check_name(name, ConfigError)
        # The same spec that names this source on the command line: `--source corpus:NAME`,
        # or the spec a registered corpus goes by (``label``, such as `arxiv:offline`).
        self.name = label or f"corpus:{name}"
        self.label = label
        self.root = root
        self._lock = threading.Lock()
        self._index: BM25Index | None = None
        self._passages: list[dict[str, Any]] = []

    @property
    def path(self) -> Path:
        """The corpus folder."""
        return corpora_root(self.root) / self.corpus

    def _load(self) -> BM25Index:
        if self._index is not None:
            return self._index
        with self._lock:
            if self._index is None:
                folder = self.path
                if not (folder / "manifest.json").is_file():
                    raise ConfigError(
                        f"no corpus named {self.corpus!r} in {folder.parent}; build it with "
                        f"`verity index build PATH --name {self.corpus}`"
                    )
                try:
                    with (folder / "passages.jsonl").open(encoding="utf-8") as handle:
                        passages = [json.loads(line) for line in handle if line.strip()]
                    index = BM25Index.load(folder / "index")
                except (OSError, ValueError, KeyError) as exc:
                    raise ConfigError(
                        f"corpus {self.corpus!r} at {folder} is damaged ({exc}); rebuild it with "
                        f"`verity index build PATH --name {self.corpus}`"
                    ) from exc
                if len(index) != len(passages):
                    raise ConfigError(
                        f"corpus {self.corpus!r} at {folder} is inconsistent; rebuild it"
                    )
                self._passages = passages
                self._index = index
        return self._index

    def warm_up(self) -> None:
        """Load the index and passages now instead of on the first search."""
        self._load()

    def info(self) -> CorpusInfo:
        """The manifest of this corpus."""
        self._load()
        return _info_from_manifest(self.path)

    def _evidence(self, i: int, score: float) -> Evidence:
        p = self._passages[i]
        return Evidence(
            text=p["text"],
            title=p.get("title") or "",
            source=self.name,
            url=p.get("url"),
            id=p["id"],
            score=score,
            published=date.fromisoformat(p["date"]) if p.get("date") else None,
        )

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """The best ``k`` passages for ``query`` by BM25, none dated on or after ``before``."""
        index = self._load()
        if k <= 0 or not query.strip():
            return []
        # A generator: apply_filters stops pulling once it has k passages that pass.
        candidates = (self._evidence(i, score) for i, score in index.ranked(query))
        return apply_filters(candidates, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self) -> dict[str, Any]:
        """The configuration of this source."""
        config: dict[str, Any] = {
            "type": "corpus",
            "name": self.corpus,
            "root": str(self.root) if self.root is not None else None,
        }
        if self.label is not None:
            config["label"] = self.label
        return config
