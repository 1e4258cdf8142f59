"""The paper's error analysis of WKGFC: what preceded each wrong verdict.

    error_cause(verdict.trace.model_dump())   # 'insufficient graph'
    error_shares([trace, ...])                 # {'step limit': 0.25, ...} over wrong ones

Causes are exclusive and checked in this order, so shares add up to one:

- ``step limit``: the verdict was forced when the steps ran out;
- ``insufficient graph``: the agent searched the web after expanding the graph;
- ``over-confidence``: the verdict came on the initial graph alone, with no expansion
  or search;
- ``other``: anything else (searched the web before any expansion, for instance).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

CAUSES = ("step limit", "insufficient graph", "over-confidence", "other")


def error_cause(trace: Mapping[str, Any]) -> str:
    """The cause a wrong verdict is counted under, from its trace."""
    actions = [a.get("action") for a in trace.get("actions", [])]
    if trace.get("forced_verdict"):
        return "step limit"
    if "webSearch" in actions and "expandKG" in actions[: actions.index("webSearch")]:
        return "insufficient graph"
    if not {"expandKG", "webSearch"} & set(actions):
        return "over-confidence"
    return "other"


def error_shares(wrong: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Share of each cause among the traces of wrong verdicts; empty when there are none."""
    causes = [error_cause(trace) for trace in wrong]
    if not causes:
        return {}
    return {cause: causes.count(cause) / len(causes) for cause in CAUSES}
