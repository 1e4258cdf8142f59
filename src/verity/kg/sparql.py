"""What both backends share: result rows, the SPARQL JSON reader, and the one-hop calls.

`SparqlGraph` implements `neighbours`, `relations`, `follow` and `labels` of
`verity.kg.base.KnowledgeGraph` once, by rendering a template of `verity.kg.templates` and
reading the rows; a backend only supplies ``_select`` (run a query, return its rows) and
``link``, and may answer a one-property ``follow`` without the query (``_follow_rows``:
kg-local reads it from its store's indexes, the same rows in far less time). Rows are
dicts of `Term`, built from the SPARQL 1.1 JSON results format online
(`parse_results_json`) and from pyoxigraph's terms offline, so both backends turn the same
rows into the same facts.

    rows = parse_results_json({"head": {"vars": ["e"]}, "results": {"bindings": [
        {"e": {"type": "uri", "value": "http://www.wikidata.org/entity/Q76"}}]}})
    rows[0]["e"].entity_id()   # 'Q76'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verity.errors import SourceUnavailableError
from verity.kg.base import (
    MAX_IDS,
    Direction,
    EntityMatch,
    QueryLog,
    QueryRecord,
    Relation,
    Triple,
    check_direction,
    check_entity_ids,
    check_pids,
    check_qids,
    is_entity_id,
    is_pid,
    is_qid,
)
from verity.kg.templates import DIRECT, ENTITY, TemplateName, render, template_for

# Live Wikidata writes "unknown value" statements with such IRIs; they carry no fact.
_UNKNOWN_VALUE = "http://www.wikidata.org/.well-known/genid/"


@dataclass(frozen=True, slots=True)
class Term:
    """One RDF term of a result row, as the SPARQL JSON results format describes it."""

    type: Literal["uri", "literal", "bnode"]
    value: str
    lang: str | None = None
    datatype: str | None = None

    def entity_id(self) -> str | None:
        """``Q76`` for ``http://www.wikidata.org/entity/Q76``; None for any other term."""
        if self.type == "uri" and self.value.startswith(ENTITY):
            local = self.value[len(ENTITY) :]
            return local if is_entity_id(local) else None
        return None

    def property_id(self) -> str | None:
        """``P26`` for ``http://www.wikidata.org/prop/direct/P26``; None for any other term."""
        if self.type == "uri" and self.value.startswith(DIRECT):
            local = self.value[len(DIRECT) :]
            return local if is_pid(local) else None
        return None


Row = Mapping[str, Term]

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


def literal_term(value: str, lang: str | None, datatype: str | None) -> Term:
    """A literal as the JSON results format writes it: no datatype for plain or tagged text.

    RDF 1.1 gives every literal a datatype (``xsd:string``, ``rdf:langString``); endpoints
    leave those two out of their JSON, so they are left out here too, whatever the source.
    """
    plain = datatype in (None, _XSD_STRING, _LANG_STRING)
    return Term("literal", value, lang or None, None if plain else datatype)


class _Binding(BaseModel):
    model_config = ConfigDict(extra="ignore")
    # "typed-literal" is the SPARQL 1.0 JSON spelling some endpoints still send.
    type: Literal["uri", "literal", "typed-literal", "bnode"]
    value: str
    lang: str | None = Field(default=None, alias="xml:lang")
    datatype: str | None = None


class _Results(BaseModel):
    model_config = ConfigDict(extra="ignore")
    bindings: list[dict[str, _Binding]]


class _ResultsJson(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: _Results


def parse_results_json(payload: Any, *, service: str = "the SPARQL endpoint") -> list[Row]:
    """The rows of a SELECT answer in the SPARQL 1.1 JSON results format.

    Anything else (an ASK answer, an HTML error page decoded as JSON, a missing
    ``results.bindings``) is `SourceUnavailableError`: the endpoint answered, but not
    with results.
    """
    try:
        parsed = _ResultsJson.model_validate(payload)
    except ValidationError as exc:
        raise SourceUnavailableError(
            f"{service} answered with malformed SPARQL JSON results: {exc}"
        ) from exc
    return [
        {name: _from_binding(b) for name, b in binding.items()}
        for binding in parsed.results.bindings
    ]


def _from_binding(binding: _Binding) -> Term:
    if binding.type in ("literal", "typed-literal"):
        return literal_term(binding.value, binding.lang, binding.datatype)
    return Term("uri" if binding.type == "uri" else "bnode", binding.value)


def triple_from_row(row: Row) -> Triple | None:
    """The fact of a ``neighbours_*`` or ``follow_*`` row; None when it is not one.

    Rows without an item subject or a direct property, and "unknown value" objects, are
    dropped: they cannot become a `Triple`.
    """
    s, p, o = row.get("s"), row.get("p"), row.get("o")
    if s is None or p is None or o is None:
        return None
    subject, pid = s.entity_id(), p.property_id()
    if subject is None or not is_qid(subject) or pid is None:
        return None
    s_label, p_label = _text(row.get("sLabel")), _text(row.get("pLabel"))
    if o.type == "literal":
        return Triple(subject, s_label, pid, p_label, o.value, None, "literal", o.datatype)
    if o.type != "uri" or o.value.startswith(_UNKNOWN_VALUE):
        return None
    entity = o.entity_id()
    if entity is not None:
        return Triple(subject, s_label, pid, p_label, entity, _text(row.get("oLabel")))
    return Triple(subject, s_label, pid, p_label, o.value, None, "iri")


def _text(term: Term | None) -> str | None:
    return term.value if term is not None and term.type == "literal" else None


class SparqlGraph:
    """The one-hop calls of a `KnowledgeGraph`, over any backend that can run a SELECT.

    Subclasses set ``name``, call ``super().__init__()``, and implement ``link``,
    ``to_dict`` and ``_select``, which runs one query and returns its rows and whether
    they came from a cache; ``_follow_rows`` may give a one-property follow's rows without
    running its query. Every query, run or answered so, is timed and recorded in
    ``queries``.

        class InMemory(SparqlGraph):
            def _select(self, query):
                return rows_of(my_store.query(query)), False
    """

    name: str

    def __init__(self) -> None:
        self.queries = QueryLog()

    def link(self, text: str, k: int = 5) -> list[EntityMatch]:
        """At most ``k`` entities the name ``text`` may refer to, best first."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The exact configuration of this graph."""
        raise NotImplementedError

    def neighbours(
        self, qids: Sequence[str], direction: Direction = "out", limit: int = 100
    ) -> list[Triple]:
        """At most ``limit`` statements from (``out``) or to (``in``) the seeds, with labels.

        kg.neighbours(["Q76"], "out", limit=50)   # Barack Obama | spouse | Michelle Obama, ...
        """
        seeds = check_qids(qids)
        way = check_direction(direction)
        if not seeds:
            return []
        name = template_for("neighbours", way)
        return self._triples(name, render(name, seeds=seeds, limit=limit))

    def follow(
        self,
        qids: Sequence[str],
        pids: Sequence[str],
        direction: Direction = "out",
        limit: int = 100,
    ) -> list[Triple]:
        """Like `neighbours`, keeping only statements whose property is one of ``pids``.

        kg.follow(["Q76"], ["P26", "P40"], "out")     # spouse and children only
        """
        seeds, props = check_qids(qids), check_pids(pids)
        way = check_direction(direction)
        if not seeds or not props:
            return []
        name = template_for("follow", way)
        query = render(name, seeds=seeds, pids=props, limit=limit)
        if len(props) == 1:
            read = partial(self._follow_rows, seeds, props[0], way, limit)
            return self._triples(name, query, read)
        return self._triples(name, query)

    def relations(
        self, qids: Sequence[str], direction: Direction = "out", limit: int = 10_000
    ) -> list[Relation]:
        """The properties of the seeds' statements, most used first, counted over ``limit``.

        Ties are broken by property number, so the order does not depend on the store.

            kg.relations(["Q76"], "out")   # [Relation('P551', 'residence', 4), ...]
        """
        seeds = check_qids(qids)
        way = check_direction(direction)
        if not seeds:
            return []
        name = template_for("relations", way)
        found: list[Relation] = []
        for row in self._run(name, render(name, seeds=seeds, limit=limit)):
            p, count = row.get("p"), row.get("count")
            pid = p.property_id() if p is not None else None
            if pid is None or count is None:
                continue
            try:
                number = int(count.value)
            except ValueError as exc:
                raise SourceUnavailableError(
                    f"{self.name} answered a non-numeric count {count.value!r}"
                ) from exc
            found.append(Relation(pid, _text(row.get("pLabel")), number))
        return sorted(found, key=lambda r: (-r.count, int(r.pid[1:])))

    def labels(self, ids: Iterable[str]) -> dict[str, str]:
        """The English label of each item or property id that has one (others are left out).

        kg.labels(["Q76", "P26"])   # {'Q76': 'Barack Obama', 'P26': 'spouse'}
        """
        wanted = list(dict.fromkeys(ids))
        found: dict[str, str] = {}
        # Checked in chunks: `labels` takes any number of ids, a query at most MAX_IDS.
        for start in range(0, len(wanted), MAX_IDS):
            chunk = check_entity_ids(wanted[start : start + MAX_IDS])
            for row in self._run("labels", render("labels", ids=chunk)):
                e, label = row.get("e"), row.get("label")
                entity = e.entity_id() if e is not None else None
                if entity is not None and label is not None:
                    found.setdefault(entity, label.value)
        return found

    def _triples(
        self, name: TemplateName, query: str, read: Callable[[], list[Row] | None] | None = None
    ) -> list[Triple]:
        triples = (triple_from_row(row) for row in self._run(name, query, read))
        return [t for t in triples if t is not None]

    def _run(
        self, name: TemplateName, query: str, read: Callable[[], list[Row] | None] | None = None
    ) -> list[Row]:
        """The rows of ``query``, from ``read`` when it gives them; timed and recorded.

        ``read`` answers the query another way (from a store's indexes); it returns None
        when it cannot, and the query runs. Either way the log holds one query.
        """
        start = time.perf_counter()
        rows: list[Row] = []
        ok, cached = False, False
        try:
            found = read() if read is not None else None
            if found is not None:
                rows = found
            else:
                rows, cached = self._select(query)
            ok = True
            return rows
        finally:
            self.queries.record(
                QueryRecord(
                    template=name,
                    kind="sparql",
                    seconds=time.perf_counter() - start,
                    rows=len(rows),
                    ok=ok,
                    cached=cached,
                )
            )

    def _select(self, query: str) -> tuple[list[Row], bool]:
        """Run a SELECT query; its rows, and True when they were served from a cache."""
        raise NotImplementedError

    def _follow_rows(
        self, seeds: list[str], pid: str, direction: Direction, limit: int
    ) -> list[Row] | None:
        """The rows of a one-property ``follow_*`` query without running it, or None.

        A backend that can read them more cheaply than the query runs (kg-local, from its
        indexes) returns exactly the rows the query would give, in the same order; None
        runs the query.
        """
        return None
