"""The stage-2 agents' reports as one block of the debate's evidence pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verity.methods.zofia.agents import DimensionJudgement
from verity.methods.zofia.claims import CheckedClaim
from verity.methods.zofia.material import clip


def reports_block(
    linguist: Mapping[str, DimensionJudgement],
    expert: Mapping[str, Any] | None,
    claims: Sequence[CheckedClaim],
    max_chars: int,
) -> str:
    """Linguist, expert and claim-verification results; empty when every agent is off."""
    parts: list[str] = []
    if linguist:
        lines = ["Linguist's analysis:"]
        for name, judged in linguist.items():
            lines.append(f"- {name} (leans {judged.lean}): {clip(judged.analysis, max_chars)}")
        parts.append("\n".join(lines))
    if expert:
        parts.append(
            f"Domain expert ({expert['expert_role']}, {expert['domain']}), leans "
            f"{expert['lean']}:\n- knowledge concordance: "
            f"{clip(expert['knowledge_concordance'], max_chars)}\n- logical integrity: "
            f"{clip(expert['logical_integrity'], max_chars)}"
        )
    if claims:
        lines = ["Claim verification against the web:"]
        for c in claims:
            lines.append(f"- [{c.kind}] {c.text} -> {c.label}: {clip(c.reasoning, max_chars)}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
