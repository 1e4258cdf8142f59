"""What a ZoFia explanation may lean on, under the ids its prompts and records use.

    refs = zofia_references(verdict)   # Q1.., W1.., S1.., D1..

The debate pool numbers the Wikipedia passages ``[W1]``.. and the web results ``[S1]``..
(`material.passages_block`), so a debater's point that names one keeps its meaning in the
explanation, which repeats the ruling side's last points. Besides them: ``Q1``.. the
quotes the claim verifier gave that were found word for word in the passages it was shown
(4.1.3; a quote not found is no evidence), and ``D1``.. every point of the debate, in the
order argued (the explanation restates some of them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verity.domain import Reference, Verdict
from verity.grounding.cite import reference

# A quote's title names the claim it was given for, up to this many characters.
TITLE_CHARS = 160


def zofia_references(verdict: Verdict) -> list[Reference]:
    """Quotes, then Wikipedia and web passages as the pool numbered them, then debate points.

    The order is what a checker shown only the first few would need most: evidence
    found in the sources before what the debaters said of it.
    """
    trace = verdict.trace.model_extra or {}
    matrix: Mapping[str, Any] = trace.get("information_matrix") or {}
    # The verdict keeps the Wikipedia passages first, then the web ones (method.check).
    wiki = int(matrix.get("wikipedia", 0))
    found = quotes(trace.get("claims") or [])
    for i, ev in enumerate(verdict.evidence[:wiki], start=1):
        found.append(reference(f"W{i}", ev.text, "passage", ev.title or ""))
    for i, ev in enumerate(verdict.evidence[wiki:], start=1):
        found.append(reference(f"S{i}", ev.text, "passage", ev.title or ""))
    return found + debate_points(trace.get("debate"))


def quotes(claims: list[Mapping[str, Any]]) -> list[Reference]:
    """The verifier's quotes found in its passages, ``Q1``.., titled by their claim."""
    out: list[Reference] = []
    for claim in claims:
        title = f"{claim.get('kind', '')} claim: {claim.get('claim', '')}"[:TITLE_CHARS]
        for quoted in claim.get("quotes") or []:
            if quoted.get("found"):
                out.append(reference(f"Q{len(out) + 1}", str(quoted["quote"]), "quote", title))
    return out


def debate_points(debate: Mapping[str, Any] | None) -> list[Reference]:
    """Every point argued, ``D1``.., as the debate record shows it: evidence, source, reason."""
    out: list[Reference] = []
    for turn in (debate or {}).get("turns") or []:
        if turn.get("failed"):
            continue
        title = f"round {turn.get('round')}, {turn.get('side')}"
        for point in turn.get("points") or []:
            text = (
                f"{point.get('evidence', '')} (from {point.get('source', '')}): "
                f"{point.get('reason', '')}"
            )
            out.append(reference(f"D{len(out) + 1}", text, "debate", title))
    return out
