"""Beam-search expansion of the subgraph, expand-and-prune (paper sections 4.2 and 5.6).

One hop starts from the beam (at most ``k`` entities): the relations out of and into
them are ranked by the LLM for relevance to the claim and the top ``k`` kept (one call,
"N calls for pruning at each hop"); each kept relation is followed, and when it reaches
more than ``k`` entities the LLM keeps the ``k`` most worth following (one call per kept
relation, "k x N calls for entity expansion pruning"). The beam then takes ``k`` of the
pruned facts in all, turn by turn from the relations in their rank order, and the items
those facts reach are the next hop's beam ("at each hop, k entities to expand"). So a
hop costs at most 1 + k decisions, N hops and a verdict at most N + kN + 1 (21 at
k = N = 4); repair rounds of a decision are counted apart (`calls_by_step`).

The k pruning decisions of a hop run at once (`verity.schedule`): each reads only its own
relation's statements, which were fetched before any of them was asked, and the beam
merges their answers in rank order afterwards, as a sequential run does. A hop's path is
then two decisions long whatever k is: the ranking, then the prunings together. The two
SPARQL templates (out, in) and the reads of the kept relations are independent queries
too, sent at once, in worker threads so that a check's event loop never waits on the graph.

A relation all of whose statements around the beam are held already (the one the beam
arrived by, read backwards) is not offered: it could bring nothing new, and a model that
picks it would end the schedule early (``held_relations`` counts them).

What is cut, and recorded in the hop's trace: a relation is read up to ``limit``
statements (the graph's own order; ``read`` and ``total`` say how many of how many),
and the lists shown to the model are cut only to fit its context (``shown``).
A graph that cannot be reached ends the hop, which still counts; as every read of a hop
comes before its prunings, such a hop spends no pruning call.

SPARQL queries: 5.6 counts "up to k x N" (one per entity to expand). verity sends each
template once for the whole beam (its entities in one VALUES list) and reads each kept
relation once for the whole beam, so a hop is 2 relation queries and at most k reads:
at most (k + 2) N queries, 24 at k = N = 4 against the paper's 16. A read per relation
keeps ``limit`` per relation, so a relation with thousands of statements cannot crowd
out the others; a listing per entity would cost 2k queries a hop instead of 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verity import schedule
from verity.errors import ModelOutputError, SourceUnavailableError
from verity.kg.base import Direction, KnowledgeGraph, Relation, Triple
from verity.kg.facts import fact_text
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.context import fit_lines, free_tokens
from verity.methods.wkgfc.prompts import PRUNE_FACTS, RANK_RELATIONS
from verity.methods.wkgfc.subgraph import Relevance, Subgraph, fact_key

Candidate = tuple[Direction, Relation]


def valid_choices(chosen: Sequence[int], n: int, k: int) -> list[int]:
    """1-based numbers within 1..n, first occurrences only, at most ``k``, as 0-based."""
    kept: list[int] = []
    for number in chosen:
        if 1 <= number <= n and number - 1 not in kept:
            kept.append(number - 1)
        if len(kept) == k:
            break
    return kept


@dataclass(frozen=True)
class Beam:
    """What a hop needs besides the subgraph: the claim, the graph, the model, k."""

    claim: str
    graph: KnowledgeGraph
    model: ModelClient
    relevance: Relevance
    k: int
    limit: int
    log: CallLog
    context: int | None = None  # the model's context, when its backend cannot tell


@dataclass(frozen=True)
class _Offer:
    """The relations a hop shows the ranker, closest to the claim first."""

    candidates: list[Candidate]
    unread: dict[tuple[Direction, str], int]  # statements not held yet, per relation
    entities: str
    shown: list[str]


@dataclass(frozen=True)
class _Read:
    """One kept relation's statements: as read, the new ones by relevance, their lines."""

    read: list[Triple]
    ordered: list[Triple]
    lines: list[str] | None  # None: k or fewer, nothing to choose


def _relation_line(i: int, direction: Direction, rel: Relation, unread: int) -> str:
    arrow = "outgoing" if direction == "out" else "incoming"
    return f"[{i}] {rel.label or '?'} ({rel.pid}), {arrow}, {unread}"


def _held(sub: Subgraph, start: Sequence[str]) -> dict[tuple[Direction, str], int]:
    """How many statements of each (direction, property) around ``start`` are held already."""
    starts = set(start)
    held: dict[tuple[Direction, str], int] = {}
    for fact in sub.facts:
        if fact.subject in starts:
            held[("out", fact.pid)] = held.get(("out", fact.pid), 0) + 1
        if fact.object in starts:
            held[("in", fact.pid)] = held.get(("in", fact.pid), 0) + 1
    return held


def _target(fact: Triple, direction: Direction) -> str | None:
    """The entity a fact leads to from the beam, when it is an item."""
    if direction == "in":
        return fact.subject
    if fact.object_kind == "entity" and fact.object.startswith("Q"):
        return fact.object
    return None


def _by_relevance(beam: Beam, texts: Sequence[str]) -> list[int]:
    """Indices of ``texts``, closest to the claim first (stable on ties)."""
    if len(texts) < 2:
        return list(range(len(texts)))
    scores = beam.relevance(beam.claim, texts)
    return sorted(range(len(texts)), key=lambda i: -float(scores[i]))


async def expand_hop(
    sub: Subgraph, beam: Beam, start: Sequence[str] | None = None
) -> dict[str, Any]:
    """Grow ``sub`` by one hop in place, from ``start`` or the frontier; return its record."""
    chosen = [q for q in (start if start else sub.frontier) if q not in sub.expanded]
    record: dict[str, Any] = {"hop": sub.hops + 1, "from": chosen, "kept": []}
    if not chosen:
        record["stopped"] = "nothing to expand"
        sub.frontier = []  # so that a schedule of hops ends here
        return record
    try:
        await _hop(sub, chosen, beam, record)
    except SourceUnavailableError as exc:
        record["stopped"] = f"graph unavailable: {exc}"
        sub.frontier = [q for q in sub.frontier if q not in chosen]
    sub.expanded.update(chosen)
    sub.hops += 1
    beam.log.milestone(
        "wkgfc.hop",
        f"hop {record['hop']} from {len(chosen)} entities: {len(record['kept'])} new fact(s)",
        hop=record["hop"],
        entities=len(chosen),
        kept=len(record["kept"]),
        stopped="stopped" in record,
    )
    return record


async def _hop(sub: Subgraph, start: list[str], beam: Beam, record: dict[str, Any]) -> None:
    graph, k = beam.graph, beam.k
    outgoing, incoming = await schedule.gather(
        asyncio.to_thread(graph.relations, start, "out"),
        asyncio.to_thread(graph.relations, start, "in"),
    )
    candidates: list[Candidate] = [
        *(("out", r) for r in outgoing),
        *(("in", r) for r in incoming),
    ]
    offer = await asyncio.to_thread(_offer, sub, start, candidates, beam, record)
    if offer is None:
        sub.frontier = record["next_frontier"] = []
        return
    picked = await _rank(offer, beam, record)
    chosen = [offer.candidates[i] for i in picked]
    reads = await schedule.gather(*(asyncio.to_thread(_read, sub, start, c, beam) for c in chosen))
    # Every read is in before any pruning is asked: a graph that fails mid-hop costs no
    # decision, and the calls go out in rank order, as a sequential run sends them.
    per_relation = await schedule.gather(*(_prune(r, beam) for r in reads))
    record["relations"] = [
        {"pid": rel.pid, "label": rel.label, "direction": direction, "total": rel.count,
         "read": len(r.read), "new": len(r.ordered)}
        for (direction, rel), r in zip(chosen, reads, strict=True)
    ]  # fmt: skip
    beam_facts = _round_robin(per_relation, k)
    added = sub.add(beam_facts, hop=sub.hops + 1)
    record["kept"] = [fact_text(f) for f in added]
    next_frontier: dict[str, None] = {}
    for fact, direction in ((f, d) for f in beam_facts for d in _directions(f, start)):
        target = _target(fact, direction)
        if target is not None and target not in sub.expanded and target not in start:
            next_frontier.setdefault(target)
    sub.frontier = record["next_frontier"] = list(next_frontier)


def _offer(
    sub: Subgraph,
    start: list[str],
    candidates: list[Candidate],
    beam: Beam,
    record: dict[str, Any],
) -> _Offer | None:
    """The relations worth offering, ordered and fitted to the ranker's context."""
    record["candidates"] = len(candidates)
    # A relation whose statements are all held already (typically the one the beam
    # arrived by, read backwards) would bring nothing new: it is not offered, and the
    # count shown is of the statements not held yet.
    held = _held(sub, start)
    unread = {(d, r.pid): r.count - held.get((d, r.pid), 0) for d, r in candidates}
    candidates = [(d, r) for d, r in candidates if unread[(d, r.pid)] > 0]
    record["held_relations"] = record["candidates"] - len(candidates)
    if not candidates:
        record["stopped"] = "no relations" if not record["candidates"] else "no new relations"
        return None
    order = _by_relevance(beam, [r.label or r.pid for _, r in candidates])
    candidates = [candidates[i] for i in order]
    # The subgraph already holds the label of every entity it mentions (a seed's, or the
    # one a fact came with): the graph is asked only about a beam entity it never saw,
    # so a hop's queries stay the two templates and the reads (5.6's query count).
    labels = sub.labels()
    mentioned = set(sub.entities())
    unknown = [q for q in start if q not in mentioned]
    if unknown:
        labels |= beam.graph.labels(unknown)
    entities = ", ".join(f"{labels.get(q, '?')} ({q})" for q in start)
    lines = [
        _relation_line(i, d, r, unread[(d, r.pid)]) for i, (d, r) in enumerate(candidates, start=1)
    ]
    room = free_tokens(
        beam.model, RANK_RELATIONS, context=beam.context, claim=beam.claim,
        entities=entities, relations="", k=beam.k,
    )  # fmt: skip
    shown = fit_lines(lines, room, beam.model)
    record["relations_shown"] = len(shown)
    return _Offer(candidates, unread, entities, shown)


async def _rank(offer: _Offer, beam: Beam, record: dict[str, Any]) -> list[int]:
    """The ranker's top k relations (indices into the offer); the most used without one."""
    try:
        ranked = await RANK_RELATIONS.arun(
            beam.model, log=beam.log, claim=beam.claim, entities=offer.entities,
            relations="\n".join(offer.shown), k=beam.k,
        )  # fmt: skip
        picked = valid_choices(ranked.chosen, len(offer.shown), beam.k)
    except ModelOutputError:
        picked = []
    if not picked:
        # No usable ranking: keep the most used relations, so the hop still happens.
        record["fallback"] = "most used relations"
        pairs = [(d, r.pid) for d, r in offer.candidates]
        picked = sorted(range(len(pairs)), key=lambda i: -offer.unread[pairs[i]])[: beam.k]
    return picked


def _read(sub: Subgraph, start: list[str], chosen: Candidate, beam: Beam) -> _Read:
    """One kept relation's statements around the beam, the new ones closest first.

    Only reads the subgraph: no hop adds to it before all its relations are read.
    """
    direction, rel = chosen
    read = beam.graph.follow(start, [rel.pid], direction, limit=beam.limit)
    fresh = [f for f in read if fact_key(f) not in sub.hop_of]
    ordered = [fresh[i] for i in _by_relevance(beam, [fact_text(f) for f in fresh])]
    if len(ordered) <= beam.k:
        return _Read(read, ordered, None)
    room = free_tokens(
        beam.model, PRUNE_FACTS, context=beam.context, claim=beam.claim, facts="", k=beam.k
    )
    lines = fit_lines(
        [f"[{i}] {fact_text(f)}" for i, f in enumerate(ordered, start=1)], room, beam.model
    )
    return _Read(read, ordered, lines)


def _directions(fact: Triple, start: Sequence[str]) -> list[Direction]:
    """How a fact was reached from the beam: out of it, into it, or both."""
    found: list[Direction] = []
    if fact.subject in start:
        found.append("out")
    if fact.object in start:
        found.append("in")
    return found


def _round_robin(lists: Sequence[Sequence[Triple]], k: int) -> list[Triple]:
    """At most ``k`` facts, one from each list in turn, lists in rank order."""
    taken: list[Triple] = []
    depth = 0
    while len(taken) < k and any(depth < len(x) for x in lists):
        for facts in lists:
            if depth < len(facts) and len(taken) < k:
                taken.append(facts[depth])
        depth += 1
    return taken


async def _prune(relation: _Read, beam: Beam) -> list[Triple]:
    """The facts of one relation worth following, best first: the LLM's choice of k.

    With k or fewer there is nothing to choose and no call: they go in order of
    relevance to the claim. Without a usable choice the k closest stand in.
    """
    ordered, lines = relation.ordered, relation.lines
    if lines is None:
        return ordered
    try:
        choice = await PRUNE_FACTS.arun(
            beam.model, log=beam.log, claim=beam.claim, facts="\n".join(lines), k=beam.k
        )
        picked = valid_choices(choice.chosen, len(lines), beam.k)
    except ModelOutputError:
        picked = []
    return [ordered[i] for i in picked] if picked else ordered[: beam.k]
