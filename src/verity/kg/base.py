"""The knowledge-graph protocol, the facts it returns and the log of the queries it runs.

A knowledge graph maps names to Wikidata entities (`EntityMatch`) and expands entities one
hop at a time into `Triple` facts; `relations` lists the properties found at a hop, so that
a method can keep only the relevant ones with `follow`. Both backends, the live Wikidata
(`verity.kg.wikidata`) and an offline store in Wikidata's vocabulary (`verity.kg.local`),
implement `KnowledgeGraph`.

    kg = make_kg("kg-local")
    obama = kg.link("Barack Obama", k=1)[0]              # EntityMatch(qid='Q76', ...)
    kg.relations([obama.qid], "out")                     # [Relation('P551', 'residence', 4), ...]
    for fact in kg.follow([obama.qid], ["P26"], "out"):
        print(fact.text())                               # Barack Obama | spouse | Michelle Obama
    kg.queries.summary().p95                             # seconds
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from verity import schedule
from verity.errors import BadInputError

Direction = Literal["out", "in"]
"""``out``: statements whose subject is a seed; ``in``: statements whose object is one."""

MatchKind = Literal["id", "label", "alias", "fuzzy"]
"""How a name found its entity: it was the QID, the English label, an alias, or close to one."""

ObjectKind = Literal["entity", "literal", "iri"]
"""What a statement's object is: a Wikidata entity, a value (date, number, text), another IRI."""

#: The most seeds, properties or ids one query takes; more would make a GET URL too long.
MAX_IDS = 200
#: The largest ``limit`` a query accepts.
MAX_LIMIT = 100_000

_QID = re.compile(r"Q[1-9][0-9]{0,11}")
_PID = re.compile(r"P[1-9][0-9]{0,11}")
# Objects can also be properties (P1659 "see also") or lexemes with their senses and forms.
_ENTITY = re.compile(r"[QPL][1-9][0-9]{0,11}(?:-[SF][1-9][0-9]{0,5})?")


def is_qid(value: str) -> bool:
    """True for an item id such as ``Q76``."""
    return _QID.fullmatch(value) is not None


def is_pid(value: str) -> bool:
    """True for a property id such as ``P26``."""
    return _PID.fullmatch(value) is not None


def is_entity_id(value: str) -> bool:
    """True for any Wikidata entity id: item, property, lexeme, sense or form."""
    return _ENTITY.fullmatch(value) is not None


def _checked(values: Iterable[str], ok: Any, what: str, example: str) -> list[str]:
    if isinstance(values, str):
        # A lone "Q76" would otherwise be read as the ids "Q", "7" and "6".
        raise BadInputError(f"give a list of {what}s, not the string {values!r}")
    unique: dict[str, None] = {}
    for value in values:
        if not isinstance(value, str) or not ok(value):
            raise BadInputError(f"not a Wikidata {what}: {value!r} (expected e.g. {example})")
        unique.setdefault(value, None)
    if len(unique) > MAX_IDS:
        raise BadInputError(f"at most {MAX_IDS} {what}s per query, got {len(unique)}")
    return list(unique)


def check_qids(values: Iterable[str]) -> list[str]:
    """The item ids, deduplicated in order; `BadInputError` for anything that is not one.

    Every id is checked before it is put into a query, so no text reaches SPARQL unchecked.

        check_qids(["Q76", "Q30", "Q76"])     # ['Q76', 'Q30']
        check_qids(["Q76 } ?s ?p ?o"])        # BadInputError
    """
    return _checked(values, is_qid, "item id", "Q76")


def check_pids(values: Iterable[str]) -> list[str]:
    """The property ids, deduplicated in order; `BadInputError` for anything that is not one."""
    return _checked(values, is_pid, "property id", "P26")


def check_entity_ids(values: Iterable[str]) -> list[str]:
    """Item or property ids (what `KnowledgeGraph.labels` takes), deduplicated in order."""
    return _checked(values, lambda v: is_qid(v) or is_pid(v), "entity id", "Q76 or P26")


def check_direction(direction: str) -> Direction:
    """``direction`` itself when it is ``"out"`` or ``"in"``; `BadInputError` otherwise."""
    if direction == "out":
        return "out"
    if direction == "in":
        return "in"
    raise BadInputError(f'direction must be "out" or "in", not {direction!r}')


def check_limit(limit: int) -> int:
    """``limit`` when it is within 1..`MAX_LIMIT`; `BadInputError` otherwise."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


@dataclass(frozen=True, slots=True)
class EntityMatch:
    """An entity a name may refer to, with how it matched.

    ``score`` is in [0, 1] and orders the matches of one `KnowledgeGraph.link` call; what
    it means depends on the backend (see `verity.kg.local` and `verity.kg.wikidata`).
    ``matched_text`` is the label or alias that matched.

        EntityMatch("Q76", "Barack Obama", "44th president of the United States", 1.0,
                    "label", "Barack Obama")
    """

    qid: str
    label: str
    description: str | None
    score: float
    matched: MatchKind
    matched_text: str

    def __post_init__(self) -> None:
        if not is_qid(self.qid):
            raise BadInputError(f"not a Wikidata item id: {self.qid!r}")
        if not 0.0 <= self.score <= 1.0:
            raise BadInputError(f"score must be within [0, 1], got {self.score}")


@dataclass(frozen=True, slots=True)
class Triple:
    """One statement: subject item, property, and an entity or a value as object.

    A label is None when the graph has no English label for the entity (many objects of
    the offline graph have none). For a literal, ``object`` is its lexical form and
    ``datatype`` its XSD datatype IRI; for another IRI (a Commons file, say), ``object``
    is the IRI.

        fact = Triple("Q76", "Barack Obama", "P26", "spouse", "Q13133", "Michelle Obama")
        fact.text()     # 'Barack Obama | spouse | Michelle Obama'
    """

    subject: str
    subject_label: str | None
    pid: str
    property_label: str | None
    object: str
    object_label: str | None = None
    object_kind: ObjectKind = "entity"
    datatype: str | None = None

    def __post_init__(self) -> None:
        if not is_qid(self.subject):
            raise BadInputError(f"a triple's subject must be an item id, got {self.subject!r}")
        if not is_pid(self.pid):
            raise BadInputError(f"a triple's property must be a property id, got {self.pid!r}")
        if self.object_kind == "entity" and not is_entity_id(self.object):
            raise BadInputError(f"not a Wikidata entity id: {self.object!r}")

    def text(self) -> str:
        """The statement as ``subject | property | object``, labels where known, else ids."""
        obj = self.object_label or self.object
        return f"{self.subject_label or self.subject} | {self.property_label or self.pid} | {obj}"


@dataclass(frozen=True, slots=True)
class Relation:
    """A property found at a hop and how many statements use it there.

    Relation("P26", "spouse", 1)
    """

    pid: str
    label: str | None
    count: int

    def __post_init__(self) -> None:
        if not is_pid(self.pid):
            raise BadInputError(f"not a Wikidata property id: {self.pid!r}")


# -- query accounting ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """One request a graph made: which template (or ``search``), how long, how many rows."""

    template: str
    kind: Literal["sparql", "search"]
    seconds: float
    rows: int
    ok: bool = True
    cached: bool = False
    # The check that asked (`verity.schedule.check_id`), filled in when recorded.
    check: int | None = None


@dataclass(frozen=True, slots=True)
class QueryStats:
    """Totals over a stretch of `QueryRecord` s; latencies in seconds (0.0 when empty)."""

    queries: int
    sparql: int
    search: int
    failed: int
    cached: int
    total_seconds: float
    p50: float
    p95: float
    by_template: Mapping[str, int] = field(default_factory=dict)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between ranks (numpy's default).

    percentile([1.0, 2.0, 3.0, 4.0], 50)    # 2.5
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class QueryLog:
    """The requests a graph has made, for "queries per claim" and latency percentiles.

    Thread-safe. Take a `mark` before a claim and summarise from it afterwards:

        start = kg.queries.mark()
        ...                                   # the method expands the graph
        stats = kg.queries.summary(since=start)
        stats.sparql, stats.p50, stats.by_template
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[QueryRecord] = []

    def record(self, record: QueryRecord) -> None:
        """Add one request, tagged with the check that asked, if any."""
        if record.check is None and (check := schedule.check_id()) is not None:
            record = dataclasses.replace(record, check=check)
        with self._lock:
            self._records.append(record)

    def mark(self) -> int:
        """A position to pass as ``since`` later."""
        with self._lock:
            return len(self._records)

    def records(self, since: int = 0, *, check: int | None = None) -> tuple[QueryRecord, ...]:
        """The requests from position ``since`` on, oldest first; of one check if given."""
        with self._lock:
            found = self._records[since:]
        return tuple(r for r in found if check is None or r.check == check)

    def summary(self, since: int = 0, *, check: int | None = None) -> QueryStats:
        """Counts and latency percentiles of the requests from position ``since`` on.

        With ``check`` (`verity.schedule.check_id`), only that check's requests: checks
        running at once on one graph then do not count each other's.
        """
        records = self.records(since, check=check)
        seconds = [r.seconds for r in records]
        return QueryStats(
            queries=len(records),
            sparql=sum(r.kind == "sparql" for r in records),
            search=sum(r.kind == "search" for r in records),
            failed=sum(not r.ok for r in records),
            cached=sum(r.cached for r in records),
            total_seconds=sum(seconds),
            p50=percentile(seconds, 50),
            p95=percentile(seconds, 95),
            by_template=dict(Counter(r.template for r in records)),
        )

    def reset(self) -> None:
        """Forget every request."""
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


@runtime_checkable
class KnowledgeGraph(Protocol):
    """Entity linking and one-hop expansion over Wikidata or a graph in its vocabulary.

    Every method takes item ids checked with `check_qids` (property ids with
    `check_pids`); a list may hold at most `MAX_IDS`. ``limit`` caps the statements
    returned (or, for `relations`, the statements counted); which ones are kept when a hop
    has more is up to the store, as no order is imposed (an ORDER BY would make the
    endpoint read every statement of a hub such as Q5 "human" before the first answer).
    """

    name: str
    queries: QueryLog

    def link(self, text: str, k: int = 5) -> list[EntityMatch]:
        """At most ``k`` entities the name ``text`` may refer to, best first."""
        ...

    def neighbours(
        self, qids: Sequence[str], direction: Direction = "out", limit: int = 100
    ) -> list[Triple]:
        """The statements from (``out``) or to (``in``) the seeds, with labels."""
        ...

    def relations(
        self, qids: Sequence[str], direction: Direction = "out", limit: int = 10_000
    ) -> list[Relation]:
        """The properties of the seeds' statements in that direction, most used first."""
        ...

    def follow(
        self,
        qids: Sequence[str],
        pids: Sequence[str],
        direction: Direction = "out",
        limit: int = 100,
    ) -> list[Triple]:
        """Like `neighbours`, keeping only statements with one of the properties ``pids``."""
        ...

    def labels(self, ids: Iterable[str]) -> dict[str, str]:
        """The English label of each item or property id that has one."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The exact configuration of this graph, for run manifests."""
        ...
