"""The stage-2 agents' reports as one block of the debate's evidence pool (section 4.1).

Each agent's answer is model output, so each sits in its own data block: a report cannot
pose as another agent or as the article.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verity.llm.step import Delimited, data_block
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
        lines = ["Linguist's analysis (one feature per line):"]
        for name, judged in linguist.items():
            text = f"{clip(judged.analysis, max_chars)} This feature suggests {judged.lean}."
            lines.append(f"- {name}: " + data_block("analysis", text))
        parts.append("\n".join(lines))
    if expert:
        role = data_block("role", f"{expert['expert_role']} ({expert['domain']})")
        parts.append(
            f"Domain expert {role}:\n- knowledge concordance: "
            + data_block("analysis", clip(expert["knowledge_concordance"], max_chars))
            + "\n- logical integrity: "
            + data_block("analysis", clip(expert["logical_integrity"], max_chars))
        )
    if claims:
        lines = ["Claim verification against the web:"]
        for c in claims:
            claim = data_block("claim", c.text)
            reasoning = data_block("reasoning", clip(c.reasoning, max_chars))
            lines.append(f"- {c.kind} claim {claim}: {c.label}. {reasoning}")
        parts.append("\n".join(lines))
    return Delimited("\n\n".join(parts)) if parts else ""
