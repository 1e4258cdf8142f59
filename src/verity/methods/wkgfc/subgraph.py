"""The evidence subgraph WKGFC grows: seed entities, the facts kept and the frontier.

    graph = Subgraph(seeds=[EntityMatch("Q76", "Barack Obama", None, 1.0, "label", "Obama")])
    graph.add([Triple("Q76", "Barack Obama", "P26", "spouse", "Q13133", "Michelle Obama")], hop=1)
    graph.ranked(relevance, "Obama's wife is Michelle.")   # every fact, closest first

Facts keep their QIDs and PIDs, so a verdict can cite them and anyone can look them up.
Prompts show the facts ranked together by relevance to the claim, whichever hop found
them, so that a deep expansion never pushes the claim's own facts out; only the model's
context cuts the list (`verity.methods.wkgfc.context`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verity.kg.base import EntityMatch, Triple
from verity.kg.facts import fact_text

# Scores each text against the claim, higher is closer.
Relevance = Callable[[str, Sequence[str]], Sequence[float]]


def fact_key(fact: Triple) -> tuple[str, str, str]:
    """What makes two facts the same statement."""
    return (fact.subject, fact.pid, fact.object)


def reached(fact: Triple) -> list[str]:
    """The items a fact names (its subject, and its object when that is an item)."""
    found = [fact.subject]
    if fact.object_kind == "entity" and fact.object.startswith("Q"):
        found.append(fact.object)
    return found


@dataclass
class Subgraph:
    """Seeds, facts in the order found, and the entities the next hop starts from."""

    seeds: list[EntityMatch] = field(default_factory=list)
    facts: list[Triple] = field(default_factory=list)
    frontier: list[str] = field(default_factory=list)
    hops: int = 0  # hops run, by the initial retrieval and the agent together
    expanded: set[str] = field(default_factory=set)  # entities a hop has started from
    hop_of: dict[tuple[str, str, str], int] = field(default_factory=dict)
    _scores: dict[tuple[str, str, str], float] = field(default_factory=dict, repr=False)

    def add(self, facts: Iterable[Triple], *, hop: int = 0) -> list[Triple]:
        """Add facts not already held; return the new ones."""
        new = []
        for fact in facts:
            key = fact_key(fact)
            if key not in self.hop_of:
                self.hop_of[key] = hop
                self.facts.append(fact)
                new.append(fact)
        return new

    def has(self, subject: str, pid: str, obj: str) -> bool:
        """True when the statement is already in the subgraph."""
        return (subject, pid, obj) in self.hop_of

    def entities(self) -> list[str]:
        """Every item mentioned, seeds first."""
        found = dict.fromkeys(s.qid for s in self.seeds)
        for fact in self.facts:
            for qid in reached(fact):
                found.setdefault(qid)
        return list(found)

    def labels(self) -> dict[str, str]:
        """Labels of the items mentioned, as the graph gave them."""
        names = {s.qid: s.label for s in self.seeds}
        for f in self.facts:
            if f.subject_label:
                names.setdefault(f.subject, f.subject_label)
            if f.object_kind == "entity" and f.object_label:
                names.setdefault(f.object, f.object_label)
        return names

    def expandable(self) -> list[str]:
        """Items no hop has started from yet, frontier first, then in order of mention."""
        found = dict.fromkeys(q for q in self.frontier if q not in self.expanded)
        for qid in self.entities():
            if qid not in self.expanded:
                found.setdefault(qid)
        return list(found)

    def ranked(self, relevance: Relevance, claim: str) -> list[Triple]:
        """Every fact, closest to the claim first; ties keep the order found.

        Scores are computed once per fact and kept, so the order of known facts never
        changes between the policy's steps.
        """
        missing = [f for f in self.facts if fact_key(f) not in self._scores]
        if missing:
            scores = relevance(claim, [fact_text(f) for f in missing])
            for fact, score in zip(missing, scores, strict=True):
                self._scores[fact_key(fact)] = float(score)
        order = sorted(range(len(self.facts)), key=lambda i: -self._scores[fact_key(self.facts[i])])
        return [self.facts[i] for i in order]

    def to_trace(self) -> dict[str, Any]:
        """Seeds and facts with their ids and the hop that found each."""
        return {
            "seeds": [
                {"qid": s.qid, "label": s.label, "matched": s.matched, "text": s.matched_text}
                for s in self.seeds
            ],
            "facts": [
                {
                    "subject": f.subject,
                    "subject_label": f.subject_label,
                    "pid": f.pid,
                    "property_label": f.property_label,
                    "object": f.object,
                    "object_label": f.object_label,
                    "object_kind": f.object_kind,
                    "hop": self.hop_of[fact_key(f)],
                }
                for f in self.facts
            ],
            "hops": self.hops,
        }
