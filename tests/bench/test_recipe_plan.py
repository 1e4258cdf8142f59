"""A recipe as runs: which rows share a measurement, which runs split, and why cells do not run."""

from __future__ import annotations

import tomllib

import pytest

from verity.bench.recipes.plan import (
    plan_recipe,
    published_cells,
    runnable_cells,
    seeds_for,
    sources_for,
)
from verity.bench.recipes.schema import Recipe
from verity.errors import BadInputError, UnknownNameError

TABLE = """
id = "tiny"
title = "A small table"
paper = "zofia"
where = "Table 0"
metric = "accuracy"
setting = "open"
seeds = [0]

[[columns]]
key = "pf"
label = "PolitiFact"
dataset = "politifact-pp"

[[columns]]
key = "pf-f1"
label = "PolitiFact F1"
dataset = "politifact-pp"
metric = "macro_f1"

[[columns]]
key = "hover2"
label = "HoVer 2-hop (gold)"
dataset = "hover"
hops = 2
setting = "gold"

[[columns]]
key = "aggrefact"
label = "AggreFact-CNN"
unavailable = "not obtainable here"

[[rows]]
key = "zofia-gpt"
label = "ZoFia (GPT-4o)"
method = "zofia"
published = { pf = 80.0 }

[[rows]]
key = "zofia-ds"
label = "ZoFia (DeepSeek)"
method = "zofia"

[[rows]]
key = "react"
label = "ReAct"
method = "react"

[[rows]]
key = "zofia-k3"
label = "ZoFia, k = 3"
method = "zofia"
settings = { k = 3 }

[[rows]]
key = "psm"
label = "PSM"
unavailable = "a supervised detector"
published = { pf = 70.0, pf-f1 = 49.15 }

[[rows]]
key = "odd"
label = "A row with a metric verity lacks"
method = "react"
metric = "auc"
"""


def recipe(text: str = TABLE) -> Recipe:
    return Recipe.model_validate(tomllib.loads(text))


def cells_of(run) -> set[tuple[str, str]]:
    return {(c.row, c.column) for c in run.cells}


def test_rows_with_the_same_method_settings_and_model_share_one_run() -> None:
    plan = plan_recipe(recipe())
    by_folder = {run.folder: run for run in plan.runs}
    assert list(by_folder) == [
        "politifact-pp-open",
        "politifact-pp-open-part2",
        "hover-2hop-gold",
        "hover-2hop-gold-part2",
    ]
    first = by_folder["politifact-pp-open"]
    # Both ZoFia rows read the one ZoFia measurement; ReAct runs beside it, same sample.
    assert first.methods == ("zofia", "react")
    assert first.setting == "open" and first.hops is None and first.model is None
    assert {(c.row, c.column) for c in first.cells_of("zofia")} == {
        ("zofia-gpt", "pf"), ("zofia-ds", "pf"), ("zofia-gpt", "pf-f1"), ("zofia-ds", "pf-f1"),
    }  # fmt: skip
    assert {c.metric for c in first.cells if c.column == "pf-f1"} == {"macro_f1"}
    # ZoFia with other settings cannot share the run: settings are per method name.
    second = by_folder["politifact-pp-open-part2"]
    assert second.methods == ("zofia",)
    assert second.method_settings == {"zofia": {"k": 3}}
    assert cells_of(second) == {("zofia-k3", "pf"), ("zofia-k3", "pf-f1")}
    gold = by_folder["hover-2hop-gold"]
    assert (gold.dataset, gold.hops, gold.setting) == ("hover", 2, "gold")


def test_a_row_model_or_row_settings_make_a_measurement_of_its_own() -> None:
    plain = plan_recipe(recipe())
    plan = plan_recipe(recipe(), row_models={"zofia-ds": "openai:deepseek"})
    folders = [run.folder for run in plan.runs]
    # The default runs keep their folders (and so resume); the row gets a run of its own.
    assert {r.folder for r in plain.runs} <= set(folders)
    own = [run for run in plan.runs if run.model == "openai:deepseek"]
    assert len(own) == 2 and all("-model-openai_deepseek-" in run.folder for run in own)
    assert cells_of(own[0]) == {("zofia-ds", "pf"), ("zofia-ds", "pf-f1")}
    main = next(run for run in plan.runs if run.folder == "politifact-pp-open")
    assert ("zofia-ds", "pf") not in cells_of(main) and ("zofia-gpt", "pf") in cells_of(main)

    tuned = plan_recipe(recipe(), row_settings={"zofia-ds": {"k": 5}})
    parts = [run for run in tuned.runs if run.dataset == "politifact-pp"]
    assert [run.method_settings for run in parts] == [{}, {"zofia": {"k": 5}}, {"zofia": {"k": 3}}]
    assert tuned.row_settings == {"zofia-ds": {"k": 5}}


def test_every_cell_that_cannot_run_has_its_reason() -> None:
    plan = plan_recipe(recipe())
    skipped = {(s.row, s.column): s.reason for s in plan.skipped}
    # Every row of the unavailable column, the unavailable row, the unknown metric.
    assert skipped[("zofia-gpt", "aggrefact")] == "column not available here: not obtainable here"
    assert skipped[("psm", "pf")] == "row not available here: a supervised detector"
    assert "metric 'auc' cannot be computed" in skipped[("odd", "pf")]
    assert len(skipped) == 6 + 3 + 3  # 6 rows x aggrefact, psm x 3, odd x 3
    planned = {(c.row, c.column) for run in plan.runs for c in run.cells}
    everything = {(r.key, c.key) for r in recipe().rows for c in recipe().columns}
    # Nothing is left out silently: each cell is either planned or skipped, never both.
    assert planned | set(skipped) == everything and not planned & set(skipped)


def test_runnable_and_published_counts() -> None:
    assert runnable_cells(recipe()) == 6 * 4 - 12
    assert published_cells(recipe()) == 3


def test_unknown_rows_and_bad_repeats_are_refused() -> None:
    with pytest.raises(UnknownNameError, match="unknown row of tiny 'nope'"):
        plan_recipe(recipe(), row_models={"nope": "openai:m"})
    with pytest.raises(UnknownNameError):
        plan_recipe(recipe(), row_settings={"nope": {"k": 1}})
    with pytest.raises(BadInputError):
        seeds_for(recipe(), 0)


def test_seeds_come_from_the_recipe_and_continue_past_its_last() -> None:
    ten = recipe(TABLE.replace("seeds = [0]", "seeds = [5, 9]"))
    assert seeds_for(ten) == (5, 9)
    assert seeds_for(ten, 1) == (5,)
    assert seeds_for(ten, 4) == (5, 9, 10, 11)
    assert plan_recipe(ten).seeds == (5, 9)
    assert plan_recipe(ten, seeds=(1, 2), sample=50).seeds == (1, 2)
    assert plan_recipe(ten, sample=50).sample == 50


def test_a_row_runs_only_in_the_columns_the_paper_ran_it_in() -> None:
    text = TABLE.replace(
        'label = "ReAct"\nmethod = "react"\n',
        'label = "ReAct"\nmethod = "react"\nruns_in = ["pf"]\n',
    )
    plan = plan_recipe(recipe(text))
    planned = {(c.row, c.column) for run in plan.runs for c in run.cells}
    assert ("react", "pf") in planned
    assert ("react", "pf-f1") not in planned and ("react", "hover2") not in planned
    skipped = {(s.row, s.column): s.reason for s in plan.skipped}
    assert skipped[("react", "hover2")] == "not run: the paper ran this row in other columns only"
    with pytest.raises(ValueError, match="unknown columns"):
        recipe(text.replace('runs_in = ["pf"]', 'runs_in = ["nowhere"]'))


def test_a_column_sample_of_its_own_unless_the_command_sets_one() -> None:
    text = TABLE.replace(
        'key = "hover2"\nlabel = "HoVer 2-hop (gold)"\n',
        'key = "hover2"\nlabel = "HoVer 2-hop (gold)"\nsample = 7\n',
    ).replace("seeds = [0]", "seeds = [0]\nsample = 40")
    sizes = {run.dataset: run.sample for run in plan_recipe(recipe(text)).runs}
    assert sizes == {"politifact-pp": 40, "hover": 7}
    assert {run.sample for run in plan_recipe(recipe(text), sample=5).runs} == {5}
    assert {run.sample for run in plan_recipe(recipe(text), sample=None).runs} == {None}


def test_sources_come_from_the_command_line_then_the_recipe_then_the_settings() -> None:
    bare = Recipe.model_validate(tomllib.loads(TABLE))
    own = bare.model_copy(update={"sources": ["kg-local", "news-offline"]})
    assert sources_for(own, ["wikipedia"], ["offline-wiki"]) == ("wikipedia",)
    assert sources_for(own, [], ["offline-wiki"]) == ("kg-local", "news-offline")
    assert sources_for(bare, [], ["offline-wiki"]) == ("offline-wiki",)
