"""Web evidence into the graph's schema (paper section 4.3).

Each kept passage is turned into subject-property-object statements by the LLM. A
statement is aligned where it can be: its subject and object to items of the subgraph
(by label) or of the graph (by exact label or alias), its property by label to one the
subgraph uses or one the graph has for that subject. Then:

- aligned and already a graph fact: skipped (4.3: "If a triplet already exists in the
  KG, it is skipped"), recorded in the trace only;
- aligned and new: a web fact, marked with its passage, never stored as a graph fact;
- a known subject with something unaligned: an annotation on that entity;
- nothing known: dropped, recorded in the trace;
- a web fact or annotation an earlier passage of the episode already gave: ``already
  read``, recorded in the trace only, so the augmented graph holds each statement once.

A passage is read as far as the prompts show it (``chars``: a web passage's or a given
passage's characters), cut further only to fit the extractor's context: the statements
come from the same text the policy and the judge read.

A web fact for a (subject, property) the graph has values for carries those values, so
the verdict sees both and neither overrides the other silently. They are shown as what
the graph has rather than as a conflict: many properties (child, award received) take
several values.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from verity import schedule
from verity.domain import Evidence
from verity.errors import ModelOutputError, SourceUnavailableError
from verity.kg.base import KnowledgeGraph, Triple
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Step
from verity.methods.wkgfc.context import fit_text, free_tokens
from verity.methods.wkgfc.subgraph import Subgraph

# verity's cap on the entities listed for the extractor: a subgraph of N hops at k = 4
# mentions a few dozen; the cap only guards the prompt against a very wide graph.
MAX_ENTITIES = 100

# The statuses whose statements the prompts show (the augmented graph's web part).
SHOWN = ("web fact", "annotation")


class Statement(BaseModel):
    """One statement read from a passage, in words."""

    subject: str
    property: str
    object: str


class Statements(BaseModel):
    """The statements of a passage that bear on the claim."""

    statements: list[Statement]


EXTRACT_STATEMENTS = Step(
    name="wkgfc.extract_statements",
    instruction=(
        "You turn a web passage into simple facts (subject, property, object) that bear on "
        "a claim. Name entities as the known entities are named when they are the same; "
        "use short property names such as 'place of birth' or 'spouse'."
    ),
    template=(
        "Claim: {claim}\n\nKnown entities: {entities}\n\nPassage: {passage}\n\n"
        "List at most {n} facts."
    ),
    output=Statements,
)


@dataclass
class WebFact:
    """A statement from the web, aligned to the graph as far as it goes."""

    subject: str
    property: str
    object: str
    passage: str
    subject_qid: str | None = None
    pid: str | None = None
    object_qid: str | None = None
    status: str = "dropped"
    graph_values: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The statement for prompts, ids where aligned, marked as from the web."""
        s = f"{self.subject} ({self.subject_qid})" if self.subject_qid else self.subject
        p = f"{self.property} ({self.pid})" if self.pid else self.property
        o = f"{self.object} ({self.object_qid})" if self.object_qid else self.object
        note = f"; graph has: {', '.join(self.graph_values)}" if self.graph_values else ""
        return f"{s} | {p} | {o} [web: {self.passage}{note}]"

    def key(self) -> tuple[str, str, str]:
        """What makes two statements the same: ids where aligned, else the words."""
        return (
            self.subject_qid or self.subject.strip().casefold(),
            self.pid or self.property.strip().casefold(),
            self.object_qid or self.object.strip().casefold(),
        )

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return dict(self.__dict__)


def _index_labels(sub: Subgraph) -> tuple[dict[str, str], dict[str, str]]:
    """Case-folded labels to QIDs and to PIDs, from the subgraph's own facts."""
    items: dict[str, str] = {s.label.casefold(): s.qid for s in sub.seeds}
    props: dict[str, str] = {}
    for f in sub.facts:
        if f.subject_label:
            items.setdefault(f.subject_label.casefold(), f.subject)
        if f.object_label and f.object_kind == "entity":
            items.setdefault(f.object_label.casefold(), f.object)
        if f.property_label:
            props.setdefault(f.property_label.casefold(), f.pid)
    return items, props


def _graph_properties(graph: KnowledgeGraph | None, subject: str) -> dict[str, str]:
    """Case-folded labels of the properties the graph has for ``subject``, to PIDs."""
    if graph is None:
        return {}
    try:
        relations = graph.relations([subject], "out")
    except SourceUnavailableError:
        return {}  # out of reach: align against the subgraph alone
    return {r.label.casefold(): r.pid for r in relations if r.label}


def _graph_values(graph: KnowledgeGraph | None, subject: str, pid: str) -> list[Triple]:
    """The graph's statements of ``subject`` for ``pid``."""
    if graph is None:
        return []
    try:
        return graph.follow([subject], [pid], "out", limit=50)
    except SourceUnavailableError:
        return []


def align(
    statement: Statement, passage: str, sub: Subgraph, graph: KnowledgeGraph | None
) -> WebFact:
    """Align one statement to the subgraph (labels) and the graph (linking, relations)."""
    items, props = _index_labels(sub)
    fact = WebFact(statement.subject, statement.property, statement.object, passage)

    def item(name: str) -> str | None:
        found = items.get(name.strip().casefold())
        if found is None and graph is not None and name.strip():
            try:
                matches = graph.link(name, k=1)
            except SourceUnavailableError:
                return None
            # Only an exact label or alias: a fuzzy guess would invent a graph entity.
            if matches and matches[0].matched in ("label", "alias", "id"):
                found = matches[0].qid
        return found

    fact.subject_qid = item(statement.subject)
    fact.object_qid = item(statement.object)
    if fact.subject_qid is None:
        return fact
    wanted = statement.property.strip().casefold()
    fact.pid = props.get(wanted) or _graph_properties(graph, fact.subject_qid).get(wanted)
    if not (fact.pid and fact.object_qid):
        fact.status = "annotation"
        return fact
    values = [f for f in sub.facts if f.subject == fact.subject_qid and f.pid == fact.pid]
    values += _graph_values(graph, fact.subject_qid, fact.pid)
    same = [v for v in values if v.object == fact.object_qid]
    if same:
        fact.status = "already in graph"
        return fact
    fact.status = "web fact"
    shown = dict.fromkeys(
        f"{v.object_label} ({v.object})" if v.object_label else v.object for v in values
    )
    fact.graph_values = list(shown)
    return fact


async def fuse(
    passages: Sequence[Evidence],
    claim: str,
    sub: Subgraph,
    graph: KnowledgeGraph | None,
    model: ModelClient,
    *,
    per_passage: int,
    chars: int,
    log: CallLog,
    context: int | None = None,
    earlier: Sequence[WebFact] = (),
) -> list[WebFact]:
    """Statements from every passage, aligned; one LLM call per passage.

    The extractor is told every entity of the current subgraph (up to ``MAX_ENTITIES``,
    seeds first), so that it names them as the graph does. Passages are read at once:
    each call sees one passage and the same entities, alignment only reads the subgraph,
    and the statements are listed passage by passage in the order given. A statement
    that one of ``earlier`` (or an earlier passage here) already gave is ``already read``.
    """
    names = sub.labels()
    known = [q for q in sub.entities() if q in names][:MAX_ENTITIES]
    entities = ", ".join(f"{names[q]} ({q})" for q in known) or "(none)"
    room = await asyncio.to_thread(
        free_tokens, model, EXTRACT_STATEMENTS, context=context, claim=claim,
        entities=entities, passage="", n=per_passage,
    )  # fmt: skip

    async def read(ev: Evidence) -> list[WebFact]:
        text = await asyncio.to_thread(fit_text, ev.text[:chars], room, model)
        try:
            found = await EXTRACT_STATEMENTS.arun(
                model, log=log, claim=claim, entities=entities, passage=text, n=per_passage
            )
        except ModelOutputError:
            return []
        statements = found.statements[:per_passage]
        # Alignment asks the graph (linking, relations): a worker thread's work.
        return await asyncio.to_thread(
            lambda: [align(s, ev.ref or ev.title, sub, graph) for s in statements]
        )

    by_passage = await schedule.gather(*(read(ev) for ev in passages))
    seen = {f.key() for f in earlier if f.status in SHOWN}
    facts = [fact for found in by_passage for fact in found]
    for fact in facts:
        if fact.status in SHOWN:
            if fact.key() in seen:
                fact.status = "already read"
            seen.add(fact.key())
    return facts
