"""A Markdown report of a ZoFia verdict, built from its trace fields alone.

Sections follow the pipeline: keywords, the information matrix, each agent's output,
the claims, then the debate round by round and the decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verity.domain import Article


def _keywords(record: Mapping[str, Any]) -> list[str]:
    lines = ["## Keywords", "", f"Construction: {record['construction']}."]
    for step in record.get("iterations", []):
        lines.append(
            f"- k={step['k']}: **{step['unit']}** (lambda_k {step['lambda_k']:.3f}, "
            f"MMR {step['mmr']:.3f})"
        )
    if "iterations" not in record:
        lines.extend(f"- {t}" for t in record["terms"])
    if record.get("stop"):
        lines.append(f"Stopped: {record['stop']}.")
    return lines


def _matrix(matrix: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Information matrix",
        "",
        "| quadrant | content |",
        "|---|---|",
        "| in-news | the article |",
        "| model knowledge | the agents' own |",
        f"| Wikipedia | {matrix['wikipedia']} passages |",
        f"| web | {matrix['web']} passages |",
    ]
    if matrix["empty"]:
        lines.append(f"\nEmpty: {', '.join(matrix['empty'])}.")
    return lines


def _agents(fields: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if fields["linguist"]:
        lines += ["## Linguist", ""]
        for name, judged in fields["linguist"].items():
            lines.append(f"- **{name}** leans {judged['lean']}: {judged['analysis']}")
    expert = fields["expert"]
    if expert:
        lines += [
            "",
            f"## Domain expert: {expert['expert_role']} ({expert['domain']})",
            "",
            f"- Knowledge concordance: {expert['knowledge_concordance']}",
            f"- Logical integrity: {expert['logical_integrity']}",
            f"- Leans {expert['lean']}",
        ]
    if fields["claims"]:
        lines += ["", "## Claims", ""]
        for claim in fields["claims"]:
            lines.append(f"- [{claim['kind']}] {claim['claim']} -> **{claim['label']}**")
            for quote in claim["quotes"]:
                mark = "" if quote["found"] else " (not found in the passages)"
                lines.append(f'  - "{quote["quote"]}"{mark}')
    return lines


def _debate(debate: Mapping[str, Any] | None) -> list[str]:
    if not debate:
        return ["", "## Debate", "", "No debate (ablation)."]
    lines = ["", "## Debate", ""]
    rulings = {r["round"]: r for r in debate["rulings"]}
    for turn in debate["turns"]:
        rebut = f" Rebuttal: {turn['rebuttal']}" if turn["rebuttal"].strip() else ""
        lines.append(f"- Round {turn['round']}, {turn['side']}:{rebut} {turn['argument']}")
        ruling = rulings.get(turn["round"])
        if turn["side"] == "con" and ruling:
            forced = " (forced)" if ruling["forced"] else ""
            lines.append(f"  - Judge{forced}: **{ruling['decision']}**. {ruling['reason']}")
    return lines


def markdown(article: Article, fields: Mapping[str, Any]) -> str:
    """The whole verdict as Markdown."""
    title = article.title or article.text[:80]
    decision = fields["decision"]
    lines = [f"# ZoFia: {title}", ""]
    lines += [*_keywords(fields["keywords"]), ""]
    lines += [*_matrix(fields["information_matrix"]), ""]
    lines += _agents(fields)
    lines += _debate(fields["debate"])
    lines += [
        "",
        f"## Decision: {decision['decision']} (confidence {decision['confidence']:.2f})",
        "",
        decision["reason"],
    ]
    return "\n".join(lines)
