"""Algorithm 1's control flow with a scripted fake model (control flow only, not quality).

The fake answers each step by its output schema; the sources are in-memory lists. What is
checked is what the algorithm does with the answers: which stop fires, which node goes
next, what the episode may do, what the trace and the verdict say.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from verity.domain import Claim, Evidence, Label
from verity.errors import ConfigError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.methods.toe import weights
from verity.methods.toe.aggnet import AggNet
from verity.methods.toe.evalnet import EvalNet
from verity.methods.toe.method import ToeMethod
from verity.methods.toe.policy import PolicyNet
from verity.testing import FakeChatModel

CLAIM = Claim(text="The city council cut the library budget by half in 2019.")
ANALYSIS = {
    "category": "political",
    "locale": "local",
    "recent_event": False,
    "historical_fact": False,
    "factual_statement": True,
    "opinion": False,
    "prediction": False,
    "background_query": "library budget council",
    "supporting_query": "council halves library budget",
    "counter_query": "library budget rose",
}
TWO = {
    "subclaims": [
        {"text": "The council cut the budget.", "dimension": "core event", "weight": 0.6},
        {"text": "The cut was half.", "dimension": "quantitative accuracy", "weight": 0.2},
    ]
}


class ListSource:
    """Returns ``per_search`` fresh documents per query, numbered across calls."""

    def __init__(self, name: str, per_search: int = 3) -> None:
        self.name, self.per_search, self.queries = name, per_search, []  # type: list[str]
        self.served = 0

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        self.queries.append(query)
        out = []
        for _ in range(min(k, self.per_search)):
            self.served += 1
            out.append(
                Evidence(
                    text=f"{self.name} report {self.served} on {query}",
                    title=f"{self.name} {self.served}",
                    source=self.name,
                    url=f"https://{self.name}.example/{self.served}",
                )
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


class Script:
    """Answers by schema; ``judge`` maps a node text to (v, r), or gives a default."""

    def __init__(
        self,
        judge: Callable[[str], tuple[float, float]],
        decomposition: object = TWO,
        stance: str = "support",
        analysis: dict[str, Any] | None = None,
    ) -> None:
        self.judge, self.decomposition, self.stance = judge, decomposition, stance
        self.analysis = analysis or ANALYSIS
        self.asked: list[str] = []

    def __call__(self, messages, schema) -> str:  # type: ignore[no-untyped-def]
        title = schema["title"]
        self.asked.append(title)
        text = messages[-1].content
        if title == "NodeAnalysis":
            return json.dumps(self.analysis)
        if title == "Cleaned":
            return json.dumps({"statements": ["a relevant fact"]})
        if title == "Assessment":
            return json.dumps(
                {
                    "explanation": "e",
                    "stance": self.stance,
                    "authoritative": False,
                    "primary": True,
                    "relevance": 0.7,
                    "credibility": 0.6,
                }
            )
        if title == "Judgement":
            statement = text.split("<claim>", 1)[1].split("</claim>", 1)[0]
            v, r = self.judge(statement)
            return json.dumps({"explanation": "j", "veracity": v, "reliability": r})
        if title == "Decomposition":
            return json.dumps(self.decomposition)
        if title == "Query":
            return json.dumps({"query": "written query"})
        raise AssertionError(title)


def _toe(
    script: Script, sources: list[ListSource] | None = None, name: str = "toe", **settings: Any
) -> ToeMethod:
    models = ModelSet(ModelClient(FakeChatModel(script)))
    found = sources if sources is not None else [ListSource("news"), ListSource("offline-wiki")]
    method = load_method(name, models=models, sources=found, **settings)
    assert isinstance(method, ToeMethod)
    return method


def _trace(verdict: Any) -> dict[str, Any]:
    return verdict.trace.model_dump()


def test_a_decisive_root_stops_after_the_first_iteration() -> None:
    script = Script(lambda _: (0.1, 0.9))
    verdict = _toe(script).verify(CLAIM)
    trace = _trace(verdict)
    assert trace["stop_reason"] == "root decisive" and trace["iterations_used"] == 1
    assert verdict.label == Label.REFUTED and verdict.confidence == pytest.approx(0.9)
    # The root is always expanded (Alg. 1); decisive, it prunes its sub-claims unevaluated.
    statuses = [n["status"] for n in trace["tree"]]
    assert statuses == ["evaluated", "pruned", "pruned"]
    assert [n["weight"] for n in trace["tree"][1:]] == pytest.approx([0.75, 0.25])  # 0.6:0.2
    assert script.asked.count("Judgement") == 1 and script.asked.count("Decomposition") == 1


def test_the_root_converges_once_both_children_agree() -> None:
    def judge(text: str) -> tuple[float, float]:
        return (0.5, 0.5) if text == CLAIM.text else (0.5, 0.9)

    trace = _trace(_toe(Script(judge)).verify(CLAIM))
    # Root self (0.5, 0.5); one child: coverage halves r to 0.45; both: r = 0.9.
    assert [pytest.approx(x) for x in trace["root_history"]] == [
        [0.5, 0.5],
        [0.5, 0.45],
        [0.5, 0.9],
    ]
    assert trace["stop_reason"] == "root converged"
    assert [n["expanded"] for n in trace["tree"]] == [True, False, False]  # children r >= 0.7


def test_t_max_stops_the_loop() -> None:
    trace = _trace(_toe(Script(lambda _: (0.5, 0.5)), max_iterations=2).verify(CLAIM))
    assert trace["stop_reason"] == "T_max reached" and trace["iterations_used"] == 2


def test_an_empty_queue_stops_the_loop_and_root_only_never_decomposes() -> None:
    script = Script(lambda _: (0.5, 0.5))
    verdict = _toe(script, name="toe/root-only").verify(CLAIM)
    trace = _trace(verdict)
    assert trace["stop_reason"] == "queue empty" and len(trace["tree"]) == 1
    assert "Decomposition" not in script.asked
    assert verdict.label == Label.CONFLICTING  # 0.5 is uncertain; LIAR's choice by default


def test_an_unusable_decomposition_leaves_the_node_unexpanded() -> None:
    same = {
        "subclaims": [
            {"text": "a", "dimension": "core event", "weight": 0.5},
            {"text": "b", "dimension": "core event", "weight": 0.5},
        ]
    }
    trace = _trace(_toe(Script(lambda _: (0.5, 0.5), decomposition=same)).verify(CLAIM))
    assert trace["stop_reason"] == "queue empty"
    assert "1 usable sub-claim" in trace["tree"][0]["note"]


def test_an_episode_stops_at_ten_documents() -> None:
    sources = [ListSource(n) for n in ("news", "offline-wiki", "factcheck:offline", "arxiv")]
    trace = _trace(_toe(Script(lambda _: (0.1, 0.9)), sources=sources).verify(CLAIM))
    root = trace["tree"][0]
    assert len(root["evidence"]) == 10
    assert [a["new"] for a in root["actions"]] == [3, 3, 3, 1, 0]
    assert root["actions"][-1]["tool"] == "stop"


def test_an_episode_stops_at_the_step_budget() -> None:
    sources = [
        ListSource(n, per_search=1)
        for n in ("news", "offline-wiki", "factcheck:offline", "arxiv", "social", "reddit")
    ]
    # A recent scientific claim: the heuristic plans seven tools, the budget allows five.
    recent = ANALYSIS | {"category": "scientific", "recent_event": True}
    script = Script(lambda _: (0.1, 0.9), analysis=recent)
    trace = _trace(_toe(script, sources=sources).verify(CLAIM))
    tools = [a["tool"] for a in trace["tree"][0]["actions"]]
    assert len(tools) == 6 and tools[-1] == "stop"  # 5 searches (Tab. I), then stop
    assert len(trace["tree"][0]["evidence"]) == 5


def test_queries_background_then_supporting_and_counter_for_the_counter_tool() -> None:
    news, wiki = ListSource("news"), ListSource("offline-wiki")
    _toe(Script(lambda _: (0.1, 0.9)), sources=[news, wiki]).verify(CLAIM)
    # Heuristic: web first (no fact-check source here), the counter search once something
    # supports the claim, then Wikipedia with the supporting query.
    assert news.queries == ["library budget council", "library budget rose"]
    assert wiki.queries == ["council halves library budget"]


def test_per_action_mode_asks_for_a_query_per_tool() -> None:
    script = Script(lambda _: (0.1, 0.9))
    news = ListSource("news")
    _toe(script, sources=[news], query_mode="per-action").verify(CLAIM)
    assert set(news.queries) == {"written query"} and script.asked.count("Query") >= 1


def test_table_three_ablation_masks_its_group() -> None:
    sources = [ListSource(n) for n in ("news", "offline-wiki", "factcheck:offline")]
    method = _toe(Script(lambda _: (0.1, 0.9)), sources=sources, name="toe/no-factcheck")
    trace = _trace(method.verify(CLAIM))
    assert {"factcheck", "wiki", "social", "reddit", "arxiv"} <= set(trace["masked_actions"])
    assert trace["action_counts"]["factcheck"] == trace["action_counts"]["wiki"] == 0
    assert method.to_dict()["variant_kind"].startswith("paper ablation")
    assert (
        _toe(Script(lambda _: (0.5, 0.5)), name="toe/rule-agg")
        .to_dict()["variant_kind"]
        .startswith("component variant")
    )
    # Untrained, the default settings are not the paper's method: the three stand-ins are
    # named (§III-B's policy, §III-C's network, §III-D's aggregation network are trained).
    assert _toe(Script(lambda _: (0.5, 0.5))).to_dict()["variant_kind"] == (
        "untrained: heuristic policy, LLM-judge scoring, rule aggregation"
    )


def test_an_untrained_verdict_names_what_ran() -> None:
    verdict = _toe(Script(lambda _: (0.1, 0.9))).verify(CLAIM)
    named = "untrained: heuristic policy, LLM-judge scoring, rule aggregation"
    assert _trace(verdict)["variant_kind"] == named
    assert verdict.explanation.endswith(f"Run as: {named}.")


def test_trace_records_the_tree_and_the_markdown_escapes_model_text() -> None:
    nasty = {
        "subclaims": [
            {
                "text": "[click](http://evil.example) # heading",
                "dimension": "core event",
                "weight": 0.5,
            },
            {"text": "![img](x)", "dimension": "entity identity", "weight": 0.5},
        ]
    }
    verdict = _toe(Script(lambda _: (0.1, 0.9), decomposition=nasty)).verify(CLAIM)
    text = _trace(verdict)["markdown"]
    assert "\\[click\\]\\(http://evil.example\\) \\# heading" in text
    assert "![img]" not in text
    root = _trace(verdict)["tree"][0]
    assert root["features"]["category"] == "political" and root["v_self"] == 0.1
    assert all(ev.stance is not None for ev in verdict.evidence)


def test_uncertain_label_follows_the_dataset() -> None:
    method = _toe(Script(lambda _: (0.5, 0.5)), max_depth=1)
    method.use_dataset("check-covid")
    assert method.verify(CLAIM).label == Label.NOT_ENOUGH_INFO


def _save_all(folder: Path) -> None:
    torch.manual_seed(0)
    for part, net in (("evalnet", EvalNet()), ("policy", PolicyNet()), ("aggnet", AggNet())):
        weights.save(net, folder, part, {"train_ids": ["liar-train:7", "liar-train:9"]})


def test_trained_weights_replace_the_judge_and_the_heuristic(tmp_path: Path) -> None:
    _save_all(tmp_path)
    script = Script(lambda _: (0.5, 0.5))
    method = _toe(script, weights=str(tmp_path), max_iterations=3)
    assert method.components() == {
        "evaluator": "network",
        "policy": "network",
        "aggregation": "network",
    }
    assert method.excluded_ids() == {("liar-train", "7"), ("liar-train", "9")}
    trace = _trace(method.verify(CLAIM))
    assert "Judgement" not in script.asked  # the network scores every node
    assert set(trace["weights_used"]) == {"evalnet", "policy", "aggnet"}
    # The untrained networks are undecided (r near 0.5): the root's sub-claims are reached
    # and the aggregation network, not the rule, combines them.
    root = trace["tree"][0]
    assert trace["iterations_used"] == 3 and root["aggregated_by"] == "network"
    rewards = [a["reward"] for n in trace["tree"] for a in n["actions"] if a["tool"] != "stop"]
    assert rewards and all(r is not None for r in rewards)  # Eq. 5 needs the network
    # A variant still forces its component.
    assert (
        _toe(script, name="toe/llm-eval", weights=str(tmp_path)).components()["evaluator"]
        == "llm-judge"
    )


def test_only_three_trained_networks_make_the_papers_method(tmp_path: Path) -> None:
    torch.manual_seed(0)
    weights.save(EvalNet(), tmp_path, "evalnet", {"train_ids": ["liar-train:1"]})
    partly = _toe(Script(lambda _: (0.5, 0.5)), weights=str(tmp_path))
    assert partly.variant_kind() == (
        "partly trained: heuristic policy, rule aggregation in place of the network"
    )
    _save_all(tmp_path)
    method = _toe(Script(lambda _: (0.5, 0.5)), weights=str(tmp_path))
    config = method.to_dict()
    assert config["variant_kind"] == "paper"
    for part in ("evalnet", "policy", "aggnet"):
        file = tmp_path / f"{part}.pt"
        assert config["weights_used"][part] == {
            "path": str(file),
            "sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
            "train_ids": 2,
        }
    verdict = method.verify(CLAIM)
    assert _trace(verdict)["variant_kind"] == "paper" and "Run as" not in verdict.explanation
    # A trained Table III ablation is the paper's ablation, nothing more.
    masked = _toe(Script(lambda _: (0.5, 0.5)), name="toe/no-arxiv", weights=str(tmp_path))
    assert masked.variant_kind() == "paper ablation (Table III, tools masked on the same policy)"


def test_a_tampered_weights_file_is_refused(tmp_path: Path) -> None:
    _save_all(tmp_path)
    (tmp_path / "policy.pt").write_bytes(b"not the weights")
    with pytest.raises(ConfigError, match="checksum"):
        _toe(Script(lambda _: (0.5, 0.5)), weights=str(tmp_path))


def test_asking_for_a_network_without_weights_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="verity train toe"):
        _toe(Script(lambda _: (0.5, 0.5)), policy="network")


def test_a_search_brings_at_most_three_results_whatever_the_sources() -> None:
    # Two web sources answer the same search: §IV-A's cap holds for the search, not per source.
    sources = [ListSource("news"), ListSource("ddgs")]
    trace = _trace(_toe(Script(lambda _: (0.1, 0.9)), sources=sources).verify(CLAIM))
    first = trace["tree"][0]["actions"][0]
    assert first["tool"] == "web" and first["found"] == 3
