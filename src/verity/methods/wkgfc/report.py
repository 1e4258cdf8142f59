"""The paper's error analysis of WKGFC (section 5.7, Table 4): what preceded a wrong verdict.

    error_types(verdict.trace.model_dump())   # {'insufficient KG'}
    error_rates([trace, ...])                  # {'insufficient KG': 0.5, ...} over wrong ones

The three observations are the paper's, and like its Table 4 they may overlap (its
HOVER column sums to 168.5 %), so each rate is over all wrong verdicts on its own:

- ``insufficient KG`` (IK): the agent "requests a web retrieval" after the graph had
  been enhanced, i.e. after an ``expandKG`` that was carried out (a refused one enhanced
  nothing). The request is what counts: a search whose sources all failed was still
  requested;
- ``exceeding max steps`` (EM): the agent used every step without deciding and the
  verdict was forced;
- ``over-confidence`` (OC): the agent asked for no retrieval action after the first
  observation and decided on the initial subgraph alone. An agent that asked for more
  and was refused (every web source down) did not decide on the initial graph by choice;
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
    steps = list(trace.get("actions", []))
    requested = [a.get("action") for a in steps]
    enhanced = [
        i for i, a in enumerate(steps) if a.get("action") == "expandKG" and a.get("taken", True)
    ]
    found: set[str] = set()
    if enhanced and "webSearch" in requested[enhanced[0] :]:
        found.add("insufficient KG")
    if trace.get("forced_verdict"):
        found.add("exceeding max steps")
    if not set(RETRIEVALS) & set(requested) and not trace.get("forced_verdict"):
        found.add("over-confidence")
    return found or {OTHER}


def error_rates(wrong: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Share of wrong verdicts showing each observation (overlapping); empty when none."""
    found = [error_types(trace) for trace in wrong]
    if not found:
        return {}
    return {name: sum(name in f for f in found) / len(found) for name in (*TYPES, OTHER)}
