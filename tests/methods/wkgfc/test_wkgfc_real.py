"""WKGFC for real: the installed command, the embedded model and the offline Wikidata subset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verity.errors import ConfigError
from verity.kg.store import kg_file

pytestmark = pytest.mark.integration


def test_check_with_the_offline_graph_returns_actions_and_a_subgraph_with_ids() -> None:
    try:
        kg_file()
    except ConfigError as exc:
        pytest.skip(f"the offline Wikidata subset is not here: {exc}")
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("verity")),
            "check",
            "Barack Obama is married to Michelle Obama.",
            "--method",
            "wkgfc",
            "--source",
            "kg-local",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        # The run ends when it ends (an event); on a loaded machine that can take long.
        # The limit only stops a run that hangs for good.
        timeout=3600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["label"] in ("SUPPORTED", "REFUTED")
    trace = record["trace"]
    assert trace["actions"][0]["action"] == "initKGRetrieval"
    assert "Q76" in trace["actions"][0]["observation"]["seeds"]
    facts = {f"{f['subject']}|{f['pid']}|{f['object']}" for f in trace["subgraph"]["facts"]}
    # The first observation is the pruned N-hop subgraph: at most k = 4 facts a hop.
    hops = trace["actions"][0]["observation"]["hops"]
    assert hops and all(len(hop["kept"]) <= 4 for hop in hops)
    assert 0 < len(facts) <= 4 * len(hops) + 4 * 4  # the agent may add up to 4 hops
    # Cited graph evidence is a fact of the subgraph, by its ids.
    cited = [e["id"] for e in record["evidence"] if e.get("id") and "|P" in e["id"]]
    assert set(cited) <= facts
    calls = trace["model_calls"]
    assert record["usage"]["llm_calls"] == calls["decisions"] + calls["repairs"]
    assert trace["sparql_queries"] >= 2
    assert trace["actions"][-1]["action"] == "verdict"


def test_kg_only_keeps_the_papers_call_bound_on_the_local_graph() -> None:
    """Section 5.6: N + kN + 1 decisions (21 at k = N = 4); repairs are counted apart."""
    try:
        kg_file()
    except ConfigError as exc:
        pytest.skip(f"the offline Wikidata subset is not here: {exc}")
    import verity

    verdict = verity.check(
        "Barack Obama is married to Michelle Obama.",
        method="wkgfc/kg-only",
        sources=["kg-local"],
    )
    trace = verdict.trace.model_dump()
    calls = trace["model_calls"]
    k = n = 4
    assert calls["decisions"] <= n + k * n + 1 == 21
    steps = calls["by_step"]
    hops = trace["actions"][0]["observation"]["hops"]
    # One ranking per hop, at most k prunings per hop, one verdict.
    assert steps["wkgfc.rank_relations"]["decisions"] == len(hops) <= n
    assert steps.get("wkgfc.prune_entities", {"decisions": 0})["decisions"] <= k * len(hops)
    assert steps["wkgfc.verdict"]["decisions"] == 1
    repairs = sum(c["attempts"] - 1 for c in trace["calls"])
    assert calls["repairs"] == repairs
    assert verdict.usage.llm_calls == calls["decisions"] + repairs
    assert [a["action"] for a in trace["actions"]] == ["initKGRetrieval"]
