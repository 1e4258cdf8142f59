"""WKGFC's error analysis (paper 5.7, Table 4): what preceded a wrong verdict."""

from __future__ import annotations

from verity.methods.wkgfc.report import error_rates, error_types


def trace(*steps, forced: bool = False) -> dict:
    """A trace of the named actions after the first observation; "-x" is x refused."""
    actions = [{"action": "initKGRetrieval", "taken": True}]
    actions += [{"action": s.lstrip("-"), "taken": not s.startswith("-")} for s in steps]
    return {"forced_verdict": forced, "actions": actions}


def test_error_types_follow_section_5_7_and_may_overlap() -> None:
    # Expanded, then searched, then ran out of steps: IK and EM at once.
    both = trace("expandKG", "webSearch", "expandKG", forced=True)
    assert error_types(both) == {"insufficient KG", "exceeding max steps"}
    assert error_types(trace("expandKG", "webSearch", "verdict")) == {"insufficient KG"}
    assert error_types(trace("verdict")) == {"over-confidence"}
    # Searched before any expansion, or expanded without searching: neither IK nor OC.
    assert error_types(trace("webSearch", "expandKG", "verdict")) == {"other"}
    assert error_types(trace("expandKG", "verdict")) == {"other"}
    # A refused expansion enhanced nothing: the search after it is not IK.
    assert error_types(trace("-expandKG", "webSearch", "verdict")) == {"other"}
    # 5.7 defines IK by the agent's request for a web retrieval: a search whose sources
    # all failed was requested, so it is IK after an expansion, and an agent that asked
    # for more (and got nothing) is not over-confident.
    assert error_types(trace("expandKG", "-webSearch", "verdict")) == {"insufficient KG"}
    assert error_types(trace("-webSearch", "verdict")) == {"other"}
    assert error_types(trace("-expandKG", "verdict")) == {"other"}
    rates = error_rates([both, trace("verdict"), trace("expandKG", "webSearch", "verdict"),
                         trace("expandKG", "verdict")])  # fmt: skip
    # By hand: IK 2 of 4, EM 1 of 4, OC 1 of 4, other 1 of 4; they sum to 125 %.
    assert rates == {"insufficient KG": 0.5, "exceeding max steps": 0.25,
                     "over-confidence": 0.25, "other": 0.25}  # fmt: skip
    assert error_rates([]) == {}
