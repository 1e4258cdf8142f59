"""kg-local: a `verity.kg.base.KnowledgeGraph` over a local pyoxigraph store; no network.

The store holds a graph in Wikidata's RDF vocabulary (see `verity.kg.store` for the files
it reads and how it is persisted), so the SPARQL templates of `verity.kg.templates` run
here unchanged from the Wikidata Query Service. Names are linked with the label and alias
index of `verity.kg.names`.

The source spec ``kg-local`` is the default graph (``$VERITY_KG_FILE``, else
``../shared/kg/wikidata_subset.nt.gz``); ``kg-local:NAME`` a store loaded with ``verity kg
load FILE --name NAME``.

    kg = LocalGraph()                               # the default graph
    kg.link("Barack Obama", k=1)[0].qid            # 'Q76'
    kg.neighbours(["Q76"], "out", limit=20)
    LocalGraph("mine").relations(["Q30"], "in")     # a store loaded before
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from verity.errors import BadInputError, ConfigError, SourceUnavailableError
from verity.kg.base import Direction, EntityMatch, QueryRecord
from verity.kg.follow import follow_rows, row_term
from verity.kg.keyorder import store_keeps_this_order
from verity.kg.names import DEFAULT_FUZZY_THRESHOLD, NameIndex
from verity.kg.sparql import Row, SparqlGraph
from verity.kg.store import (
    DEFAULT_STORE,
    NAMES_DB,
    STORE_DB,
    STORE_FORMAT,
    StoreInfo,
    check_store_name,
    ensure_store,
    fingerprint,
    kg_file,
    pyoxigraph_version,
    read_manifest,
    store_folder,
    store_info,
)

if TYPE_CHECKING:
    import pyoxigraph

# Answers kept per graph (most recently used), each of at most so many rows: a few MB.
KEPT_ANSWERS = 512
KEPT_ROWS = 2_000


class LocalGraph(SparqlGraph):
    """A `verity.kg.base.KnowledgeGraph` over a local pyoxigraph store; no network.

    ``LocalGraph()`` is the default graph (see the module documentation);
    ``LocalGraph("mine")`` a store loaded before; ``LocalGraph("mine", file=path)`` the
    store ``mine`` holding ``path``, loaded now if it does not. Construction only checks
    that the file or store exists; the store opens (or is built) on first use or
    `warm_up`, once, and ``origin`` then says ``"built"`` or ``"loaded"``. Thread-safe.

    `link` uses the name index of `verity.kg.names`: QID, exact label (score 1.0), exact
    alias (0.9), then fuzzy (up to 0.8), each tier by degree.

        kg = LocalGraph()
        kg.link("Tom Hanks", k=1)[0].qid       # 'Q2263'
        kg.follow(["Q76"], ["P69"], "out")     # where Barack Obama studied
    """

    def __init__(
        self,
        store: str = DEFAULT_STORE,
        *,
        file: Path | None = None,
        root: Path | None = None,
        name: str | None = None,
        fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
    ) -> None:
        super().__init__()
        if not 0.0 <= fuzzy_threshold <= 100.0:
            raise ConfigError(f"fuzzy_threshold must be within [0, 100], got {fuzzy_threshold}")
        self.store_name = check_store_name(store)
        self.root = root
        self.fuzzy_threshold = fuzzy_threshold
        self.name = name or ("kg-local" if store == DEFAULT_STORE else f"kg-local:{store}")
        if file is not None:
            self.file: Path | None = Path(file).expanduser().resolve()
            if not self.file.is_file():
                raise ConfigError(f"knowledge graph file not found: {self.file}")
        elif store == DEFAULT_STORE:
            self.file = kg_file()
        else:
            self.file = None
            store_info(store, root=root)  # a ConfigError now rather than at the first query
        self.origin: Literal["built", "loaded"] | None = None
        self.info: StoreInfo | None = None
        self._lock = threading.Lock()
        self._store: pyoxigraph.Store | None = None
        self._names: NameIndex | None = None
        # One-property follows are read from the indexes (`verity.kg.follow`) when the
        # store holds IRIs in the order that module merges them in; ``index_reads =
        # False`` runs them as SPARQL, for comparisons (same rows, more time).
        self.index_reads = True
        self._index_order = False
        # The store is read-only while open: a query's rows stay its answer. Checks of
        # claims about the same entities ask the same relations of the same hubs again.
        self._answers: OrderedDict[str, list[Row]] = OrderedDict()
        self._answers_lock = threading.Lock()

    def warm_up(self) -> None:
        """Open the store now, building it first if it is missing or stale."""
        self._open()

    def close(self) -> None:
        """Close the store and the name index; the next call opens them again."""
        with self._lock:
            if self._names is not None:
                self._names.close()
            self._store, self._names = None, None
        with self._answers_lock:
            self._answers.clear()

    def _open(self) -> pyoxigraph.Store:
        store = self._store
        if store is None:
            with self._lock:
                store = self._store
                if store is None:
                    store = self._store = self._open_locked()
        return store

    def _open_locked(self) -> pyoxigraph.Store:
        import pyoxigraph

        info = ensure_store(self.store_name, self.file, self.root)
        try:
            # Read-only: any number of processes can share the store.
            store = pyoxigraph.Store.read_only(str(info.path / STORE_DB))
        except OSError as exc:
            raise SourceUnavailableError(
                f"cannot open the knowledge graph store {info.path}: {exc}; "
                f"rebuild it with: verity kg load FILE --name {self.store_name}"
            ) from exc
        self.info, self.origin = info, info.origin
        self._index_order = store_keeps_this_order(store)
        return store

    def _names_index(self) -> NameIndex:
        names = self._names
        if names is None:
            self._open()
            with self._lock:
                names = self._names
                if names is None:
                    names = self._names = NameIndex(
                        store_folder(self.store_name, self.root) / NAMES_DB
                    )
        return names

    def link(self, text: str, k: int = 5) -> list[EntityMatch]:
        """At most ``k`` items the name ``text`` may refer to, best first.

        LocalGraph().link("Barry Obama", k=1)[0].matched   # 'alias'
        """
        if not text.strip():
            raise BadInputError("the name to link is empty")
        if k < 1:
            raise BadInputError(f"k must be at least 1, got {k}")
        names = self._names_index()
        start = time.perf_counter()
        try:
            found = names.find(text, k, fuzzy_threshold=self.fuzzy_threshold)
        except (sqlite3.Error, ValueError) as exc:
            raise SourceUnavailableError(
                f"the name index {names.path} is unreadable: {exc}; "
                f"rebuild it with: verity kg load FILE --name {self.store_name} --force"
            ) from exc
        self.queries.record(QueryRecord("link", "search", time.perf_counter() - start, len(found)))
        return found

    def _select(self, query: str) -> tuple[list[Row], bool]:
        """The query's rows, from the answers kept in this process when it ran before."""
        with self._answers_lock:
            kept = self._answers.get(query)
            if kept is not None:
                self._answers.move_to_end(query)
                return list(kept), True
        rows = self._query(query)
        if len(rows) <= KEPT_ROWS:
            with self._answers_lock:
                self._answers[query] = rows
                while len(self._answers) > KEPT_ANSWERS:
                    self._answers.popitem(last=False)
        return list(rows), False

    def _query(self, query: str) -> list[Row]:
        import pyoxigraph

        store = self._open()
        try:
            solutions = store.query(query)
            if not isinstance(solutions, pyoxigraph.QuerySolutions):
                raise SourceUnavailableError("expected SELECT results from the local store")
            variables = [v.value for v in solutions.variables]
            rows: list[Row] = [
                {n: row_term(term) for n in variables if (term := solution[n]) is not None}
                for solution in solutions
            ]
        except OSError as exc:
            raise SourceUnavailableError(f"the local knowledge graph failed: {exc}") from exc
        return rows

    def _follow_rows(
        self, seeds: list[str], pid: str, direction: Direction, limit: int
    ) -> list[Row] | None:
        """The template's rows read from the indexes (`verity.kg.follow`), or None.

        pyoxigraph runs a one-property follow as a scan of every statement of the property;
        the indexes give the same rows in far less time (docs/kg.md).
        """
        store = self._open()
        if not (self.index_reads and self._index_order):
            return None
        try:
            return follow_rows(store, seeds, pid, direction, limit)
        except OSError as exc:
            raise SourceUnavailableError(f"the local knowledge graph failed: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        """The store, its source file (path, size, modification time) and versions."""
        if self.file is not None and self.file.is_file():
            source: dict[str, Any] = fingerprint(self.file)
        else:
            manifest = read_manifest(store_folder(self.store_name, self.root)) or {}
            source = dict(manifest.get("source", {}))
        return {
            "type": "kg-local",
            "name": self.name,
            "store": self.store_name,
            "source": source,
            "pyoxigraph": pyoxigraph_version(),
            "store_format": STORE_FORMAT,
            "fuzzy_threshold": self.fuzzy_threshold,
        }
