"""The reproduced table: the paper's layout, measured / published / difference, what did not run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from verity.bench.recipes.measure import Measured
from verity.bench.recipes.schema import Recipe
from verity.bench.recipes.table import (
    CellResult,
    Reproduction,
    cell_text,
    markdown,
    to_json,
    write_table,
)

TABLE = """
id = "tiny"
title = "A | small <b>table</b>"
paper = "toe"
where = "§IV-C, Table II"
metric = "accuracy"
scale = 100
notes = ["Fig. 5's cells | quoted [here](http://x)."]

[[columns]]
key = "b"
label = "Second in the data, first in the paper"
dataset = "liar"

[[columns]]
key = "a"
label = "LIAR-New"
dataset = "liar-new"

[[rows]]
key = "z"
label = "ZCoT"
method = "z-cot"
published = { b = 60.0, a = 50.0 }

[[rows]]
key = "y"
label = "ToE"
method = "toe"
missing = { a = "did not survive the extraction" }

[[rows]]
key = "x"
label = "PSM"
unavailable = "supervised"
"""


def recipe(text: str = TABLE) -> Recipe:
    return Recipe.model_validate(tomllib.loads(text))


def measured(value: float, interval: tuple[float, float] | None = (0.5, 0.8)) -> Measured:
    return Measured(value, interval, "wilson" if interval else None, (value,), "mean", 50, 0)


def reproduction(rec: Recipe | None = None, **overrides) -> Reproduction:
    rec = rec or recipe()
    cells = {
        ("z", "b"): CellResult("z", "b", measured(0.66), run="liar-open"),
        ("z", "a"): CellResult("z", "a", measured(0.4, None), run="liar-new-open"),
        ("y", "b"): CellResult("y", "b", measured(0.7), run="liar-open"),
        ("y", "a"): CellResult("y", "a", reason="dataset 'liar-new' cannot be loaded | here"),
        ("x", "b"): CellResult("x", "b", reason="row not available here: supervised"),
        ("x", "a"): CellResult("x", "a", reason="row not available here: supervised"),
    }
    settings = {
        "recipe": rec, "cells": cells, "model": "openai:gpt-4o-mini",
        "row_models": {"y": "openai:<big>"}, "sample": 50, "seeds": (0,),
    }  # fmt: skip
    return Reproduction(**{**settings, **overrides})


def test_cells_read_measured_published_and_the_signed_difference() -> None:
    rec = recipe()
    assert cell_text(measured(0.66), 60.0, rec) == "66.00 [50.00, 80.00] / 60.00 / +6.00"
    # Below the paper: a minus sign, not a hyphen that reads as a dash.
    assert cell_text(measured(0.4, None), 50.0, rec) == "40.00 / 50.00 / −10.00"
    assert cell_text(None, 50.0, rec) == "— / 50.00 / —"
    assert cell_text(measured(0.7), None, rec) == "70.00 [50.00, 80.00] / — / —"
    fractions = recipe(TABLE.replace("scale = 100", "scale = 1").replace("60.0", "0.6")
                       .replace("50.0", "0.5"))  # fmt: skip
    assert cell_text(measured(0.66, None), 0.6, fractions) == "0.660 / 0.600 / +0.060"


def test_the_table_keeps_the_paper_order_of_rows_and_columns() -> None:
    text = markdown(reproduction())
    lines = text.splitlines()
    head = next(line for line in lines if line.startswith("| row | method |"))
    assert head == "| row | method | Second in the data, first in the paper | LIAR-New |"
    body = [line for line in lines if line.startswith(("| ZCoT", "| ToE", "| PSM"))]
    assert [line.split(" | ")[0] for line in body[:3]] == ["| ZCoT", "| ToE", "| PSM"]
    assert body[0] == (
        "| ZCoT | z-cot | 66.00 [50.00, 80.00] / 60.00 / +6.00 | 40.00 / 50.00 / −10.00 |"
    )
    assert body[1].startswith("| ToE | toe on openai:&lt;big&gt; | 70.00 [50.00, 80.00] / — / — |")


def test_header_names_recipe_paper_models_sample_seeds_and_notes() -> None:
    text = markdown(reproduction(seeds=(0, 1, 2), warnings=("greedy decoding",)))
    assert text.startswith("# Reproduced: A \\| small &lt;b&gt;table&lt;/b&gt; (tiny)\n")
    assert "| paper | toe, §IV-C, Table II |" in text
    assert "| model | openai:gpt-4o-mini |" in text
    assert "| model of row y | openai:&lt;big&gt; |" in text
    assert "| sample | 50 per run |" in text
    assert "| seeds | 0, 1, 2 (mean over 3) |" in text
    assert "lowest and highest of the 3 repeats" in text
    assert "> **Warning:** greedy decoding" in text
    assert "- Fig. 5's cells \\| quoted \\[here\\](http://x)." in text
    assert "95% interval" in markdown(reproduction())


def test_cells_not_run_and_figures_not_recorded_are_listed_with_their_reasons() -> None:
    text = markdown(reproduction())
    section = text.split("## Cells not run here", 1)[1].split("##", 1)[0]
    assert "| ToE | LIAR-New | dataset 'liar-new' cannot be loaded \\| here |" in section
    # One line per row and reason: PSM's two cells share theirs.
    assert "| PSM | every column | row not available here: supervised |" in section
    assert section.count("| PSM |") == 1
    assert "| ToE | Second" not in section  # measured
    missing = text.split("## Published figures not recorded", 1)[1]
    assert "| ToE | LIAR-New | did not survive the extraction |" in missing
    # A cell with no entry at all is still reported, never dropped.
    sparse = reproduction(cells={})
    assert markdown(sparse).count("| every column | not planned |") == 3


def test_json_holds_every_cell_on_the_paper_scale(tmp_path: Path) -> None:
    md, js = write_table(tmp_path / "out", reproduction())
    assert md.read_text(encoding="utf-8") == markdown(reproduction())
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data == json.loads(json.dumps(to_json(reproduction())))
    cells = {(c["row"], c["column"]): c for c in data["cells"]}
    assert len(cells) == 6
    zb = cells[("z", "b")]
    assert zb["measured"] == 66.0 and zb["published"] == 60.0
    assert zb["difference"] == 66.0 - 60.0 and zb["interval"] == [50.0, 80.0]
    assert zb["detail"]["value"] == 0.66 and zb["run"] == "liar-open"
    assert cells[("z", "a")]["difference"] == 40.0 - 50.0
    assert cells[("y", "a")]["not_run"].startswith("dataset 'liar-new'")
    assert cells[("y", "a")]["published_missing"] == "did not survive the extraction"
    assert data["row_models"] == {"y": "openai:<big>"} and data["recipe"]["id"] == "tiny"
    assert [c["key"] for c in data["columns"]] == ["b", "a"]


def test_header_gives_each_dataset_its_sample_where_the_runs_differ() -> None:
    same = {"liar-open": {"dataset": "liar", "sample": 50}, "b": {"dataset": "x", "sample": 50}}
    assert "| sample | 50 per run |" in markdown(reproduction(runs=same))
    differ = {
        "liar-open": {"dataset": "liar", "sample": 7},
        "b": {"dataset": "x<y", "sample": None},
    }
    assert "| sample | liar: 7, x&lt;y: whole split |" in markdown(reproduction(runs=differ))


def test_header_names_the_sources_when_there_are_some_and_escapes_them() -> None:
    assert "| sources |" not in markdown(reproduction())
    text = markdown(reproduction(sources=("kg-local", "corpus:a|b")))
    assert "| sources | kg-local, corpus:a\\|b |" in text
    assert to_json(reproduction(sources=("kg-local",)))["sources"] == ["kg-local"]
