"""LoCal's built-in demonstrations: 20 per set (4.3), valid programs, none from a scored split.

The claims are checked against the raw dataset files with the json module, independently
of the loaders.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from verity.methods.local import agents
from verity.methods.local.program import Decomposition, ProgramError, Step, parse_program

DATA = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")


@pytest.mark.parametrize("name", ["hover", "feverous", "general"])
def test_each_set_has_twenty_valid_programs(name: str) -> None:
    # 4.3: the decomposing agent sees "only 20 samples from HOVER or FEVEROUS".
    demos = agents.demos(name)
    assert len(demos) == 20
    assert len({d["id"] for d in demos}) == 20
    for shot_inputs, answer in agents.shots(demos, 20):
        assert shot_inputs["claim"].strip()
        parse_program(answer)  # every rule the model's own programs are held to


def test_the_instruction_speaks_the_program_format_of_the_demonstrations() -> None:
    text = agents.DECOMPOSE.instruction
    for word in ('"questions"', '"facts"', '"deduction"', "q1", "f1", "{q1}", "no parentheses"):
        assert word in text
    # The paper's notation (a1, {a1}, a type field) is not the program's.
    for word in ("a1", "{a1}", '"type"'):
        assert word not in text
    demos = [d for name in agents.SETS for d in agents.demos(name)]
    texts = " ".join(step["text"] for d in demos for step in d["questions"] + d["facts"])
    assert "{q1}" in texts and "{a1}" not in texts
    assert not any("(" in d["deduction"] for d in demos)


def _largest_program_accepted() -> int:
    # Found by asking the parser, not by reading its constant.
    largest = 0
    for n in range(1, 31):
        facts = [f"fact {i}" for i in range(n)]
        deduction = " and ".join(f"f{i}" for i in range(1, n + 1))
        answer = Decomposition(facts=[Step(text=f) for f in facts], deduction=deduction)
        try:
            parse_program(answer)
        except ProgramError:
            break
        largest = n
    return largest


def test_the_instruction_states_every_rule_the_parser_applies() -> None:
    text = agents.DECOMPOSE.instruction.lower()
    # The size cap, whatever the parser's is, and it is the one stated.
    largest = _largest_program_accepted()
    assert largest == 10
    assert f"at most {largest} sub-tasks in all" in text
    # At least one fact: a program of questions alone is refused.
    with pytest.raises(ProgramError, match="no fact"):
        parse_program(Decomposition(questions=[Step(text="Who?")], facts=[], deduction="f1"))
    assert "at least one fact" in text
    # The deduction's shape: the example the instruction gives is in the answer format's
    # pattern and parses, and the instruction names each part of the shape.
    example = re.search(r"for example: (.+?)\. ", text)
    assert example is not None
    pattern = Decomposition.model_json_schema()["properties"]["deduction"]["pattern"]
    assert re.fullmatch(pattern, example.group(1))
    parse_program(Decomposition(facts=[Step(text=x) for x in "abc"], deduction=example.group(1)))
    for rule in ("lower case", "single spaces", "no parentheses", "over the facts only"):
        assert rule in text
    # Braces, references and the use of every part.
    for rule in ("braces hold nothing else", "answer is used", "every fact in it"):
        assert rule in text


@needs_data
def test_hover_demonstrations_come_from_the_unscored_test_release() -> None:
    test = json.loads((DATA / "HOVER/hover_test_release_v1.1.json").read_text("utf-8"))
    dev = json.loads((DATA / "HOVER/hover_dev_release_v1.1.json").read_text("utf-8"))
    by_uid = {row["uid"]: row["claim"] for row in test}
    assert all("label" not in row for row in test)  # nothing can be scored on it
    dev_uids = {row["uid"] for row in dev}
    dev_claims = {row["claim"] for row in dev}
    for demo in agents.demos("hover"):
        assert by_uid[demo["id"]] == demo["claim"]
        assert demo["id"] not in dev_uids and demo["claim"] not in dev_claims


@needs_data
def test_feverous_demonstrations_are_held_out_of_every_sample() -> None:
    from verity.bench.datasets import load_dataset
    from verity.bench.runner import excluded_ids, select_sample

    rows = json.loads((DATA / "FEVEROUS-S/dev.json").read_text("utf-8"))
    claims = {str(row["id"]): row["claim"] for row in rows}
    demos = agents.demos("feverous")
    for demo in demos:
        assert claims[str(demo["id"])] == demo["claim"]
    split = load_dataset("feverous-s", data_dir=DATA)
    pool = {ex.id for ex in select_sample(split, None, 0, excluded_ids(["local"]))}
    assert not pool & {str(d["id"]) for d in demos}
    assert len(pool) == len(split.examples) - 20


@needs_data
def test_general_demonstrations_are_no_benchmark_claims() -> None:
    hover = json.loads((DATA / "HOVER/hover_dev_release_v1.1.json").read_text("utf-8"))
    feverous = json.loads((DATA / "FEVEROUS-S/dev.json").read_text("utf-8"))
    known = {row["claim"] for row in hover} | {row["claim"] for row in feverous}
    for demo in agents.demos("general"):
        assert demo["claim"] not in known
