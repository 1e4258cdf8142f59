"""Offline entity linking: an index of the English labels and aliases of a local graph.

The index is read from the store once, when the store is built (`build_names`), and saved
beside it as a small SQLite file, so that a later process looks a name up without loading
anything (only fuzzy matching reads the list of distinct names, once). A name is looked
up in tiers; within a tier items are ranked by degree (how many direct statements they
take part in), then by QID number:

1. its QID (``"Q76"``), score 1.0;
2. an exact English label, ignoring case, Unicode width and repeated spaces, score 1.0;
3. an exact alias (``skos:altLabel``), score 0.9;
4. only while fewer than ``k`` items were found: the closest labels and aliases by
   rapidfuzz ``fuzz.ratio`` over their words in sorted order (so "Obama Barack" is
   "Barack Obama" and "Barack Obamma" is one letter off), kept from ``fuzzy_threshold``
   (0-100) on, score ``0.8 * similarity / 100``; a label beats an alias at equal
   similarity.

    build_names(store, folder / "names.sqlite", properties=["P26", "P27"])
    index = NameIndex(folder / "names.sqlite")
    index.find("barack obama", k=3)    # [EntityMatch(qid='Q76', ..., matched='label'), ...]
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verity.kg.base import EntityMatch, MatchKind, is_pid, is_qid
from verity.kg.templates import DIRECT, ENTITY, RDFS_LABEL, SCHEMA_DESCRIPTION, SKOS_ALT_LABEL

if TYPE_CHECKING:
    import pyoxigraph

# Bump when the index file changes shape, so that old stores are rebuilt.
NAMES_FORMAT = 1
# 85 accepts a typo or two in a short name ("Barack Obamma" scores 96) but not a
# different name of similar length ("Barack Obama" against "Michelle Obama" scores 69).
DEFAULT_FUZZY_THRESHOLD = 85.0
_LABEL_SCORE, _ALIAS_SCORE, _FUZZY_SCALE = 1.0, 0.9, 0.8
_SPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"[\W_]+")
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    qid TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    description TEXT,
    degree INTEGER NOT NULL
);
CREATE TABLE names (
    entity INTEGER NOT NULL REFERENCES entities(id),
    is_label INTEGER NOT NULL,
    text TEXT NOT NULL,
    exact_key TEXT NOT NULL,
    token_key TEXT NOT NULL
);
"""
_INDEXES = """
CREATE INDEX names_exact ON names(exact_key);
CREATE INDEX names_token ON names(token_key);
"""
# One row per name of an item: what a match needs, in ranking order.
_SELECT = """
SELECT e.qid, e.label, e.description, e.degree, n.is_label, n.text, n.token_key
FROM names AS n JOIN entities AS e ON e.id = n.entity
"""
_ORDER = "ORDER BY n.is_label DESC, e.degree DESC, e.id"


def normalise(name: str) -> str:
    """The key of an exact match: NFKC, case-folded, single spaces, no outer spaces."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", name)).strip().casefold()


def token_key(name: str) -> str:
    """The key of a fuzzy match: the words of ``normalise(name)`` without punctuation, sorted."""
    return " ".join(sorted(_NON_WORD.sub(" ", normalise(name)).split()))


def _select(store: pyoxigraph.Store, query: str) -> Iterator[tuple[str, ...]]:
    import pyoxigraph

    solutions = store.query(query)
    if not isinstance(solutions, pyoxigraph.QuerySolutions):
        raise TypeError("expected SELECT results")
    names = [v.value for v in solutions.variables]
    for solution in solutions:
        yield tuple(str(getattr(solution[n], "value", "")) for n in names)


def build_names(store: pyoxigraph.Store, path: Path, properties: Sequence[str]) -> tuple[int, int]:
    """Write the name index of every item of ``store`` to ``path``; (items, aliases).

    Only items (``wd:Q...``) with an English label are indexed; degree counts the direct
    statements an item is the subject or the object of, over ``properties`` (the ids of
    the ``wdt:`` predicates in the store).
    """
    import pyoxigraph

    item_prefix = f"{ENTITY}Q"

    def strings(predicate: str) -> Iterator[tuple[str, str]]:
        # Filtered here rather than in SPARQL: LANG() and STR() on every row cost more.
        for quad in store.quads_for_pattern(None, pyoxigraph.NamedNode(predicate), None):
            subject, value = quad.subject, quad.object
            if (
                isinstance(value, pyoxigraph.Literal)
                and value.language == "en"
                and isinstance(subject, pyoxigraph.NamedNode)
                and subject.value.startswith(item_prefix)
            ):
                yield subject.value[len(ENTITY) :], value.value

    degrees = _degrees(store, properties)
    descriptions = dict(strings(SCHEMA_DESCRIPTION))
    labels: dict[str, str] = {}
    for qid, label in strings(RDFS_LABEL):
        if is_qid(qid):
            labels.setdefault(qid, label)
    ids = {qid: i for i, qid in enumerate(sorted(labels, key=lambda q: int(q[1:])))}
    db = sqlite3.connect(path)
    try:
        db.executescript(_SCHEMA)
        db.execute("INSERT INTO meta VALUES ('format', ?)", (str(NAMES_FORMAT),))
        db.executemany(
            "INSERT INTO entities VALUES (?, ?, ?, ?, ?)",
            ((i, q, labels[q], descriptions.get(q), degrees.get(q, 0)) for q, i in ids.items()),
        )
        rows = [(ids[q], 1, label) for q, label in labels.items()]
        rows += [(ids[q], 0, alias) for q, alias in strings(SKOS_ALT_LABEL) if q in ids]
        db.executemany(
            "INSERT INTO names VALUES (?, ?, ?, ?, ?)",
            ((i, is_label, text, normalise(text), token_key(text)) for i, is_label, text in rows),
        )
        db.executescript(_INDEXES)
        db.commit()
    finally:
        db.close()
    return len(ids), len(rows) - len(labels)


def _degrees(store: pyoxigraph.Store, properties: Sequence[str]) -> dict[str, int]:
    """How many direct statements each entity is the subject or the object of."""
    if not properties:
        return {}
    # Joining on the few hundred properties is several times faster than testing
    # STRSTARTS(STR(?p), ...) on each of a million statements.
    values = " ".join(f"wdt:{pid}" for pid in properties if is_pid(pid))
    query = (
        f"PREFIX wdt: <{DIRECT}> SELECT ?e (COUNT(*) AS ?n) WHERE {{ VALUES ?p {{ {values} }} "
        "{ ?e ?p ?o } UNION { ?o ?p ?e } } GROUP BY ?e"
    )
    return {e[len(ENTITY) :]: int(n) for e, n in _select(store, query) if e.startswith(ENTITY)}


class NameIndex:
    """Exact and fuzzy lookup of item names in a file `build_names` wrote.

    Opens the file read-only on first use; thread-safe. See the module documentation for
    the ranking.

        index = NameIndex(path)
        index.find("Barry Obama", k=1)[0].matched    # 'alias'
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._token_keys: list[str] | None = None

    def _connection(self) -> sqlite3.Connection:
        # Called with the lock held.
        if self._db is None:
            db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
            try:
                row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            except sqlite3.Error:
                db.close()
                raise
            if row is None or row[0] != str(NAMES_FORMAT):
                db.close()
                raise ValueError(f"{self.path} is not a name index of format {NAMES_FORMAT}")
            # Closed when the index is collected, if `close` was not called first.
            weakref.finalize(self, db.close)
            self._db = db
        return self._db

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._connection().execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the file (it reopens on the next lookup)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def find(
        self, text: str, k: int, *, fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD
    ) -> list[EntityMatch]:
        """At most ``k`` items named ``text``, best first."""
        key = normalise(text)
        if not key or k < 1:
            return []
        found: dict[str, EntityMatch] = {}
        qid = text.strip().upper()
        if is_qid(qid):
            for q, label, description, *_ in self._rows(
                "SELECT qid, label, description FROM entities WHERE qid = ?", (qid,)
            ):
                found[q] = EntityMatch(q, label, description, 1.0, "id", q)
        for q, label, description, _, is_label, name, _ in self._rows(
            f"{_SELECT} WHERE n.exact_key = ? {_ORDER}", (key,)
        ):
            kind: MatchKind = "label" if is_label else "alias"
            score = _LABEL_SCORE if is_label else _ALIAS_SCORE
            found.setdefault(q, EntityMatch(q, label, description, score, kind, name))
        if len(found) < k:
            for q, label, description, similarity, name in self._fuzzy(text, k, fuzzy_threshold):
                score = round(_FUZZY_SCALE * similarity / 100.0, 4)
                found.setdefault(q, EntityMatch(q, label, description, score, "fuzzy", name))
        return list(found.values())[:k]

    def _fuzzy(
        self, text: str, k: int, threshold: float
    ) -> list[tuple[str, str, str | None, float, str]]:
        from rapidfuzz import fuzz, process

        query = token_key(text)
        if not query:
            return []
        # Distinct names first, then every item behind them: many items share a name.
        hits = process.extract(
            query, self._distinct_keys(), scorer=fuzz.ratio, score_cutoff=threshold, limit=4 * k
        )
        similarity = {key: float(score) for key, score, _ in hits}
        if not similarity:
            return []
        marks = ", ".join("?" * len(similarity))
        rows = self._rows(f"{_SELECT} WHERE n.token_key IN ({marks}) {_ORDER}", tuple(similarity))
        # Stable sort: within equal similarity the SQL order (label, degree, id) stays.
        rows.sort(key=lambda row: -similarity[row[6]])
        return [(q, label, desc, similarity[key], name) for q, label, desc, _, _, name, key in rows]

    def _distinct_keys(self) -> list[str]:
        keys = self._token_keys
        if keys is None:
            rows = self._rows("SELECT DISTINCT token_key FROM names WHERE token_key != ''")
            keys = self._token_keys = [row[0] for row in rows]
        return keys
