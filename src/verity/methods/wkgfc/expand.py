"""Beam-search expansion of the subgraph, expand-and-prune (paper section 4.2).

One hop from the frontier: the candidate relations (out of and into the frontier) are
ranked by the LLM for relevance to the claim and the top ``k`` kept; each kept relation is
followed, and when it yields more than ``k`` facts the LLM keeps the ``k`` most useful.
The entities those facts reach, and that no hop has started from yet, are the next
frontier; the rest is pruned. A kept fact the subgraph already holds (the initial
retrieval reads every statement of the seeds) still leads the beam on. A hop costs at
most 1 + k LLM calls, so N hops and a verdict cost at most N + kN + 1 (21 at k = N = 4).
A graph that cannot be reached ends the hop, which still counts against N.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verity.errors import ModelOutputError, SourceUnavailableError
from verity.kg.base import Direction, KnowledgeGraph, Relation, Triple
from verity.kg.facts import fact_text
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.prompts import PRUNE_FACTS, RANK_RELATIONS
from verity.methods.wkgfc.subgraph import Subgraph


def valid_choices(chosen: Sequence[int], n: int, k: int) -> list[int]:
    """1-based numbers within 1..n, first occurrences only, at most ``k``, as 0-based."""
    kept: list[int] = []
    for number in chosen:
        if 1 <= number <= n and number - 1 not in kept:
            kept.append(number - 1)
        if len(kept) == k:
            break
    return kept


def _relation_line(i: int, direction: Direction, rel: Relation) -> str:
    arrow = "outgoing" if direction == "out" else "incoming"
    return f"[{i}] {rel.label or '?'} ({rel.pid}), {arrow}, {rel.count}"


def _reached(fact: Triple, direction: Direction) -> str | None:
    """The entity a fact leads to from the frontier, when it is an item."""
    if direction == "in":
        return fact.subject
    if fact.object_kind == "entity" and fact.object.startswith("Q"):
        return fact.object
    return None


def expand_hop(
    sub: Subgraph,
    claim: str,
    graph: KnowledgeGraph,
    model: ModelClient,
    *,
    k: int,
    limit: int,
    log: CallLog,
) -> dict[str, Any]:
    """Grow ``sub`` by one hop in place; return the record of the hop for the trace."""
    record: dict[str, Any] = {"hop": sub.hops + 1, "frontier": list(sub.frontier)}
    if not sub.frontier:
        record["stopped"] = "empty frontier"
        return record
    frontier = sub.frontier[:200]
    try:
        _hop(sub, frontier, claim, graph, model, k=k, limit=limit, log=log, record=record)
    except SourceUnavailableError as exc:
        record["stopped"] = f"graph unavailable: {exc}"
    sub.expanded.update(frontier)
    sub.hops += 1
    return record


def _hop(
    sub: Subgraph,
    frontier: list[str],
    claim: str,
    graph: KnowledgeGraph,
    model: ModelClient,
    *,
    k: int,
    limit: int,
    log: CallLog,
    record: dict[str, Any],
) -> None:
    candidates: list[tuple[Direction, Relation]] = [
        *(("out", r) for r in graph.relations(frontier, "out")),
        *(("in", r) for r in graph.relations(frontier, "in")),
    ]
    record["candidates"] = len(candidates)
    if not candidates:
        record["stopped"] = "no relations"
        sub.frontier = record["next_frontier"] = []
        return
    labels = graph.labels(frontier)
    try:
        ranked = RANK_RELATIONS.run(
            model,
            log=log,
            claim=claim,
            entities=", ".join(f"{labels.get(q, '?')} ({q})" for q in frontier),
            relations="\n".join(
                _relation_line(i, d, r) for i, (d, r) in enumerate(candidates, start=1)
            ),
            k=k,
        )
        picked = valid_choices(ranked.chosen, len(candidates), k)
    except ModelOutputError:
        picked = []
    if not picked:
        # No usable ranking: keep the most used relations, so the hop still happens.
        record["fallback"] = "most used relations"
        by_use = sorted(range(len(candidates)), key=lambda i: -candidates[i][1].count)
        picked = by_use[:k]
    record["relations"] = [
        {
            "pid": candidates[i][1].pid,
            "label": candidates[i][1].label,
            "direction": candidates[i][0],
        }
        for i in picked
    ]
    next_frontier: dict[str, None] = {}
    kept_facts: list[Triple] = []
    for i in picked:
        direction, rel = candidates[i]
        facts = graph.follow(frontier, [rel.pid], direction, limit=limit)
        if len(facts) > k:
            facts = _prune(facts, claim, model, k=k, log=log)
        kept_facts.extend(facts)
        for fact in facts:
            target = _reached(fact, direction)
            if target is not None and target not in sub.expanded and target not in frontier:
                next_frontier.setdefault(target)
    record["kept"] = [fact_text(f) for f in sub.add(kept_facts)]
    record["known"] = len(kept_facts) - len(record["kept"])
    sub.frontier = record["next_frontier"] = list(next_frontier)


def _prune(
    facts: list[Triple], claim: str, model: ModelClient, *, k: int, log: CallLog
) -> list[Triple]:
    numbered = "\n".join(f"[{i}] {fact_text(f)}" for i, f in enumerate(facts, start=1))
    try:
        choice = PRUNE_FACTS.run(model, log=log, claim=claim, facts=numbered, k=k)
        picked = valid_choices(choice.chosen, len(facts), k)
    except ModelOutputError:
        picked = []
    # Without a usable choice, the first k (the graph's own order) stand in.
    return [facts[i] for i in picked] if picked else facts[:k]
