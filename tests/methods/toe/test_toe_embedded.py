"""ToE end to end on the embedded model and an offline source (it runs; quality is not asked).

A 135M model cannot be expected to judge well; what must hold is that every stage of
Algorithm 1 runs on real answers, and the tree and trace come out well formed.
"""

from __future__ import annotations

import pytest

from verity.domain import CLAIM_LABELS, Claim


@pytest.mark.integration
def test_lite_preset_grows_a_well_formed_tree() -> None:
    import verity

    method = verity.load_method("toe/lite", sources=("offline-wiki",))
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris."))
    trace = verdict.trace.model_dump()
    assert verdict.label in CLAIM_LABELS and verdict.confidence is not None
    root = trace["tree"][0]
    assert root["status"] == "evaluated" and root["features"] is not None
    assert 0.0 <= root["v"] <= 1.0 and 0.0 <= root["r"] <= 1.0
    assert trace["stop_reason"] in (
        "queue empty",
        "T_max reached",
        "root converged",
        "root decisive",
    )
    assert 1 <= trace["iterations_used"] <= 3  # the lite preset's T_max
    assert trace["action_counts"]["wiki"] >= 1  # the one tool there is
    assert "web" in trace["masked_actions"] and "reddit" in trace["masked_actions"]
    steps = {call["step"] for call in trace["calls"]}
    assert {"toe.analyze", "toe.judge"} <= steps
    assert "ToE verdict" in trace["markdown"]
    assert verdict.usage.llm_calls == len(trace["calls"])
