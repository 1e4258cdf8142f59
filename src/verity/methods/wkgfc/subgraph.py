"""The evidence subgraph WKGFC grows: seed entities, the facts kept and the frontier.

    graph = Subgraph(seeds=[EntityMatch("Q76", "Barack Obama", None, 1.0, "label", "Obama")])
    graph.add([Triple("Q76", "Barack Obama", "P26", "spouse", "Q13133", "Michelle Obama")])
    graph.numbered()   # '[T1] Barack Obama (Q76) | spouse (P26) | Michelle Obama (Q13133)'

Facts keep their QIDs and PIDs, so a verdict can cite them and anyone can look them up.
A prompt shows at most a fixed number of facts: those found by expansion always, the
initial retrieval's (ordered by relevance to the claim) filling the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verity.kg.base import EntityMatch, Triple
from verity.kg.facts import fact_text


def fact_key(fact: Triple) -> tuple[str, str, str]:
    """What makes two facts the same statement."""
    return (fact.subject, fact.pid, fact.object)


@dataclass
class Subgraph:
    """Seeds, facts in the order found, and the entities the next hop starts from."""

    seeds: list[EntityMatch] = field(default_factory=list)
    facts: list[Triple] = field(default_factory=list)
    frontier: list[str] = field(default_factory=list)
    hops: int = 0
    initial: int = 0  # how many of ``facts`` the initial retrieval found
    expanded: set[str] = field(default_factory=set)  # entities a hop has started from
    _seen: set[tuple[str, str, str]] = field(default_factory=set, repr=False)

    def add(self, facts: Iterable[Triple]) -> list[Triple]:
        """Add facts not already held; return the new ones."""
        new = []
        for fact in facts:
            key = fact_key(fact)
            if key not in self._seen:
                self._seen.add(key)
                self.facts.append(fact)
                new.append(fact)
        return new

    def has(self, subject: str, pid: str, obj: str) -> bool:
        """True when the statement is already in the subgraph."""
        return (subject, pid, obj) in self._seen

    def entities(self) -> list[str]:
        """Every item mentioned, seeds first."""
        found = dict.fromkeys(s.qid for s in self.seeds)
        for fact in self.facts:
            found.setdefault(fact.subject)
            if fact.object_kind == "entity" and fact.object.startswith("Q"):
                found.setdefault(fact.object)
        return list(found)

    def shown(self, limit: int | None = None) -> list[Triple]:
        """The facts a prompt shows: every expansion fact first, initial ones fill up.

        Kept in found order, so ``[T<n>]`` numbers are stable between the policy's steps
        as long as nothing new is found.
        """
        if limit is None or len(self.facts) <= limit:
            return list(self.facts)
        later = self.facts[self.initial :][:limit]
        return [*self.facts[: limit - len(later)], *later]

    def numbered(self, limit: int | None = None) -> str:
        """The facts as ``[T1] ...`` lines (those `shown`), for prompts."""
        shown: Sequence[Triple] = self.shown(limit)
        if not shown:
            return "(no facts yet)"
        return "\n".join(f"[T{i}] {fact_text(f)}" for i, f in enumerate(shown, start=1))

    def to_trace(self) -> dict[str, Any]:
        """Seeds and facts with their ids."""
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
                }
                for f in self.facts
            ],
            "hops": self.hops,
        }
