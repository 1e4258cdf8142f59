"""The paper's error analysis of WKGFC (section 5.7, Table 4): what preceded a wrong verdict.

    error_types(verdict.trace.model_dump())   # {'insufficient KG'}
    error_rates([trace, ...])                  # {'insufficient KG': 0.5, ...} over wrong ones

The three observations are the paper's, and like its Table 4 they may overlap (its
HOVER column sums to 168.5 %), so each rate is over all wrong verdicts on its own:

- ``insufficient KG`` (IK): the agent asked for a web search after the graph had been
  enhanced, i.e. after an ``expandKG`` it took (a refused one is no expansion);
- ``exceeding max steps`` (EM): the agent used every step without deciding and the
  verdict was forced;
- ``over-confidence`` (OC): the agent took no retrieval action after the first
  observation and decided on the initial subgraph alone;
- ``other``: none of the three (5.7 names execution errors and expansion without any
  web search); reported so that the rates of every wrong verdict are accounted for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TYPES = ("insufficient KG", "exceeding max steps", "over-confidence")
OTHER = "other"
RETRIEVALS = ("expandKG", "webSearch")


def error_types(trace: Mapping[str, Any]) -> set[str]:
    """The observations a wrong verdict's trace shows; ``{'other'}`` when none."""
    taken = [a.get("action") for a in trace.get("actions", []) if a.get("taken", True)]
    found: set[str] = set()
    if "expandKG" in taken and "webSearch" in taken[taken.index("expandKG") :]:
        found.add("insufficient KG")
    if trace.get("forced_verdict"):
        found.add("exceeding max steps")
    if not set(RETRIEVALS) & set(taken) and not trace.get("forced_verdict"):
        found.add("over-confidence")
    return found or {OTHER}


def error_rates(wrong: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Share of wrong verdicts showing each observation (overlapping); empty when none."""
    found = [error_types(trace) for trace in wrong]
    if not found:
        return {}
    return {name: sum(name in f for f in found) / len(found) for name in (*TYPES, OTHER)}
