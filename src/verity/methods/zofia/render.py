"""A Markdown report of a ZoFia verdict, built from its trace fields alone.

Sections follow the pipeline so a fact-checker can audit each step: warnings, the article
as the agents saw it, every entity unit with its scores and the SC-MMR picks, the web
query and the results kept (with URLs), the Wikipedia page chosen per keyword, each
agent's output, each claim with its passages' verdict and reasoning, then the debate
round by round (rebuttal and new evidence apart) and the decision. Text from outside
(article, pages, model answers) is escaped so it cannot add links, images or markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verity.domain import Article
from verity.methods.common import md


def _num(value: object) -> str:
    return "-" if value is None else f"{float(str(value)):.3f}"


def _keywords(record: Mapping[str, Any]) -> list[str]:
    lines = ["## Keywords", "", f"Construction: {record['construction']}."]
    if "units" in record:
        params = record["params"]
        lines += [
            "",
            f"NER threshold reached: {record['threshold']} (start {params['lambda_init']}, "
            f"step {params['delta']}, floor {params['tau_floor']}, n_min {params['n_min']}).",
        ]
        for below in record.get("below_threshold", []):
            lines.append(
                f"- below the threshold: {md(below['text'])} ({_num(below['confidence'])})"
            )
        chosen = {step["unit"] for step in record["iterations"]}
        lines += [
            "",
            "| unit | NER conf. | local | global | saliency | chosen |",
            "|---|---|---|---|---|---|",
        ]
        for unit in record["units"]:
            lines.append(
                f"| {md(unit['text'])} | {_num(unit['confidence'])} | {_num(unit['local'])} | "
                f"{_num(unit['global'])} | {_num(unit['hierarchical'])} | "
                f"{'yes' if unit['text'] in chosen else 'no'} |"
            )
        lines.append("")
        for step in record["iterations"]:
            if step["lambda_k"] is None:
                lines.append(f"- seed: **{md(step['unit'])}** (highest saliency)")
            else:
                lines.append(
                    f"- k={step['k']}: **{md(step['unit'])}** (lambda_k {_num(step['lambda_k'])}, "
                    f"MMR {_num(step['mmr'])})"
                )
        rejected = record.get("rejected_mmr")
        stop = f"Stopped: {record['stop']}"
        lines.append(
            f"{stop} (best remaining MMR {_num(rejected)})." if rejected is not None else f"{stop}."
        )
    else:
        lines.extend(f"- {md(t)}" for t in record["terms"])
    return lines


def _retrieval(fields: Mapping[str, Any]) -> list[str]:
    lines = ["## Retrieval", ""]
    web = fields["web"]
    if web is None:
        lines.append("Web: not searched.")
    else:
        lines.append(
            f"Web query ({web['composition']}): {md(web['query'])}; kept {web['kept']}, "
            f"dropped for a missing keyword {web['dropped_missing_terms']}."
        )
        for error in web["errors"]:
            lines.append(f"- error: {md(error)}")
        for result in web.get("results", []):
            where = f" <{result['url']}>" if result.get("url") else ""
            lines.append(f"- {md(result['title'] or result['source'])}{md(where)}")
    for sense in fields["wikipedia"]:
        if sense["chosen"] is None:
            lines.append(f"- Wikipedia for {md(sense['keyword'])}: no page titled by it.")
            continue
        scores = ", ".join(f"{md(c['title'])} {_num(c['score'])}" for c in sense["candidates"])
        lines.append(
            f"- Wikipedia for {md(sense['keyword'])}: **{md(sense['chosen'])}** "
            f"{md('<' + str(sense['url']) + '>') if sense.get('url') else ''} "
            f"(senses: {scores}): {md(sense['text'])}"
        )
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
            lines.append(f"- **{name}** suggests {judged['lean']}: {md(judged['analysis'])}")
    expert = fields["expert"]
    if expert:
        lines += [
            "",
            f"## Domain expert: {md(expert['expert_role'])} ({md(expert['domain'])})",
            "",
            f"- Knowledge concordance: {md(expert['knowledge_concordance'])}",
            f"- Logical integrity: {md(expert['logical_integrity'])}",
        ]
    if fields["claims"]:
        lines += ["", "## Claims", ""]
        for claim in fields["claims"]:
            lines.append(f"- {claim['kind']}: {md(claim['claim'])} -> **{claim['label']}**")
            lines.append(f"  - reasoning: {md(claim['reasoning'])}")
            for chunk in claim["chunks"]:
                lines.append(f"  - passage ({_num(chunk['similarity'])}): {md(chunk['text'])}")
            for quote in claim["quotes"]:
                mark = "" if quote["found"] else " (not found in the passages)"
                lines.append(f"  - quoted: {md(quote['quote'])}{mark}")
    return lines


def _debate(debate: Mapping[str, Any] | None) -> list[str]:
    if not debate:
        return ["", "## Debate", "", "No debate (ablation)."]
    lines = ["", "## Debate", ""]
    rulings = {r["round"]: r for r in debate["rulings"]}
    for turn in debate["turns"]:
        lines.append(f"### Round {turn['round']}, {turn['side']}")
        if turn["failed"]:
            lines.append("(no valid argument)")
        if turn["rebuttal"].strip():
            lines.append(f"- Rebuttal: {md(turn['rebuttal'])}")
        for point in turn["points"]:
            lines.append(
                f"- Evidence ({md(point['source'])}): {md(point['evidence'])} "
                f"Reason: {md(point['reason'])}"
            )
        ruling = rulings.get(turn["round"])
        if turn["side"] == "con" and ruling:
            note = " (no valid answer, taken as continue)" if ruling["defaulted"] else ""
            lines.append(f"- Judge: **{ruling['decision']}**{note}")
    if debate["turns_left_out_of_prompts"]:
        lines.append(
            f"\nTo fit the model's context, up to {debate['turns_left_out_of_prompts']} "
            "earliest turns were left out of later prompts."
        )
    return lines


def markdown(article: Article, fields: Mapping[str, Any]) -> str:
    """The whole verdict as Markdown."""
    title = article.title or article.text[:80]
    decision = fields["decision"]
    lines = [f"# ZoFia: {md(title)}", ""]
    for warning in fields.get("warnings", []):
        lines += [f"**Warning:** {md(warning)}", ""]
    shown = fields.get("article")
    if shown and shown["cut"]:
        lines += [
            f"The agents read the first {shown['shown_tokens']} of the article's "
            f"{shown['tokens']} tokens ({shown['counted_by']}; context "
            f"{shown['context_tokens']} tokens).",
            "",
        ]
    lines += [*_keywords(fields["keywords"]), ""]
    lines += [*_retrieval(fields), ""]
    lines += [*_matrix(fields["information_matrix"]), ""]
    lines += _agents(fields)
    lines += _debate(fields["debate"])
    forced = " (forced: the judge had to choose)" if decision["forced"] else ""
    lines += ["", f"## Decision: {decision['decision']}{forced}"]
    return "\n".join(lines)
