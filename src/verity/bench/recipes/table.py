"""The report of a reproduced table: ``reproduce.md`` and ``reproduce.json``.

    write_table(Path("results/toe-t2"), reproduction)
    markdown(reproduction)              # the same Markdown, as text

The table is laid out as in the paper: the recipe's rows in order, its columns in order.
Each cell reads ``measured / published / difference`` on the paper's scale (percent or
fraction), the difference being measured minus published (positive: verity's run scored
higher), with the measured figure's 95% interval in brackets, or with several repeats the
lowest and highest repeat. ``—`` marks what is not there: no figure measured here, or none
recorded from the paper. Below the table every cell that did not run is listed with its
reason (one line per row and reason), and every published figure the recipe could not
record with the recipe's reason.

Labels come from the recipe files; method, model and dataset names may come from the
command line; messages from errors: all of it is escaped before it goes into Markdown.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verity.bench.recipes.measure import Measured
from verity.bench.recipes.schema import Recipe
from verity.domain import Usage
from verity.llm.prices import cost_text

REPRODUCE_MD = "reproduce.md"
REPRODUCE_JSON = "reproduce.json"
DASH = "—"
# A label or message longer than this is cut: a table cell is not a place for a page.
_CELL_CHARS = 300
_SPECIAL = re.compile(r"([\\`*_\[\]|#<>])")


@dataclass(frozen=True)
class CellResult:
    """What became of one cell: its measured figure, or why there is none.

    ``run`` is the folder (under the output folder) whose results it was measured from.
    """

    row: str
    column: str
    measured: Measured | None = None
    reason: str | None = None
    run: str | None = None


@dataclass(frozen=True)
class Reproduction:
    """A recipe after a run: every cell's outcome, and what the runs were given.

    ``cells`` has an entry for every (row, column) of the recipe. ``model`` is the spec
    every row ran on unless ``row_models`` names another for it (``roles``: the spec of
    each agent role the settings gave a model of its own, on the rows without one);
    ``runs`` describes each run folder (dataset, setting, methods, run ids) for the JSON
    report.
    """

    recipe: Recipe
    cells: Mapping[tuple[str, str], CellResult]
    model: str
    roles: Mapping[str, str] = field(default_factory=dict)
    row_models: Mapping[str, str] = field(default_factory=dict)
    row_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    sample: int | None = None
    seeds: tuple[int, ...] = (0,)
    # The open setting's evidence sources (`sources_for`).
    sources: tuple[str, ...] = ()
    runs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def cell(self, row: str, column: str) -> CellResult:
        """The outcome of one cell (a cell without an entry is reported as not run)."""
        found = self.cells.get((row, column))
        return found if found is not None else CellResult(row, column, reason="not planned")


def write_table(out: Path, result: Reproduction) -> tuple[Path, Path]:
    """Write ``reproduce.md`` and ``reproduce.json`` into ``out``; their paths.

    Each file is written beside its final name and renamed over it, JSON last: a crash
    leaves the previous report or the new one, never half of one.
    """
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / REPRODUCE_MD, out / REPRODUCE_JSON
    _write_atomic(md, markdown(result))
    _write_atomic(js, json.dumps(to_json(result), indent=2, ensure_ascii=False, default=str) + "\n")
    return md, js


def markdown(result: Reproduction) -> str:
    """The report as Markdown (see the module docstring)."""
    recipe = result.recipe
    scale = "percent" if recipe.scale == 100 else "fraction"
    lines = [
        f"# Reproduced: {_md(recipe.title)} ({_md(recipe.id)})",
        "",
        "| | |",
        "|---|---|",
        f"| paper | {_md(recipe.paper)}, {_md(recipe.where)} |",
        f"| model | {_md(result.model)} |",
    ]
    for role, spec in result.roles.items():
        lines.append(f"| model of role {_md(role)} | {_md(spec)} |")
    for row, spec in result.row_models.items():
        lines.append(f"| model of row {_md(row)} | {_md(spec)} |")
    for row, settings in result.row_settings.items():
        shown = ", ".join(f"{k}={v}" for k, v in settings.items())
        lines.append(f"| settings of row {_md(row)} | {_md(shown)} |")
    if result.sources:
        lines.append(f"| sources | {_md(', '.join(result.sources))} |")
    lines += [
        f"| cost | {_md(_cost(result))} |",
        f"| sample | {_samples(result)} |",
        f"| seeds | {', '.join(str(s) for s in result.seeds)} "
        f"({recipe.aggregate} over {len(result.seeds)}) |",
        f"| metric | {_md(recipe.metric)}, {scale} |",
        "",
    ]
    for warning in result.warnings:
        lines.append(f"> **Warning:** {_md(warning)}")
    if result.warnings:
        lines.append("")
    lines += [
        "Each cell: measured / published / difference (measured minus published), on the "
        f"paper's scale ({scale}). In brackets: "
        + (
            "the 95% interval (Wilson for accuracies and rates, bootstrap for macro-F1 and "
            "balanced accuracy)."
            if len(result.seeds) == 1
            else f"the lowest and highest of the {len(result.seeds)} repeats."
        )
        + f" {DASH}: nothing measured here, or no published figure recorded.",
        "",
    ]
    lines += _grid(result)
    lines += _not_run(result)
    lines += _missing(recipe)
    if recipe.notes:
        lines += ["", "## Notes", ""]
        lines += [f"- {_md(note, limit=2000)}" for note in recipe.notes]
    return "\n".join(lines) + "\n"


def to_json(result: Reproduction) -> dict[str, Any]:
    """The report as JSON-ready values; figures on the paper's scale, details as fractions."""
    recipe = result.recipe
    cells = []
    for row in recipe.rows:
        for column in recipe.columns:
            outcome = result.cell(row.key, column.key)
            measured = _scaled(outcome.measured, recipe.scale)
            published = row.published.get(column.key)
            cells.append(
                {
                    "row": row.key,
                    "column": column.key,
                    "measured": measured,
                    "published": published,
                    "difference": (
                        measured - published
                        if measured is not None and published is not None
                        else None
                    ),
                    "interval": (
                        [v * recipe.scale for v in outcome.measured.interval]
                        if outcome.measured is not None and outcome.measured.interval
                        else None
                    ),
                    "detail": outcome.measured.to_dict() if outcome.measured else None,
                    "run": outcome.run,
                    "not_run": outcome.reason,
                    "published_missing": row.missing.get(column.key),
                }
            )
    return {
        "recipe": recipe.model_dump(exclude={"columns", "rows"}),
        "model": result.model,
        "roles": dict(result.roles),
        "row_models": dict(result.row_models),
        "row_settings": {k: dict(v) for k, v in result.row_settings.items()},
        "sample": result.sample,
        "seeds": list(result.seeds),
        "sources": list(result.sources),
        "warnings": list(result.warnings),
        "columns": [c.model_dump() for c in recipe.columns],
        "rows": [r.model_dump(exclude={"published", "missing"}) for r in recipe.rows],
        "cells": cells,
        "runs": {name: dict(info) for name, info in result.runs.items()},
    }


def _grid(result: Reproduction) -> list[str]:
    recipe = result.recipe
    head = ["row", "method", *(_md(c.label) for c in recipe.columns)]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---|" * len(recipe.columns)]
    for row in recipe.rows:
        method = row.method or DASH
        if row.key in result.row_models:
            method += f" on {result.row_models[row.key]}"
        cells = [
            cell_text(result.cell(row.key, c.key).measured, row.published.get(c.key), recipe)
            for c in recipe.columns
        ]
        lines.append(f"| {_md(row.label)} | {_md(method)} | " + " | ".join(cells) + " |")
    return lines


def cell_text(measured: Measured | None, published: float | None, recipe: Recipe) -> str:
    """One cell as ``measured [interval] / published / difference`` on the recipe's scale."""
    digits = 2 if recipe.scale == 100 else 3
    mine = DASH
    if measured is not None:
        mine = f"{measured.value * recipe.scale:.{digits}f}"
        if measured.interval is not None:
            low, high = (v * recipe.scale for v in measured.interval)
            mine += f" [{low:.{digits}f}, {high:.{digits}f}]"
    paper = DASH if published is None else f"{published:.{digits}f}"
    if measured is None or published is None:
        difference = DASH
    else:
        # The minus sign, not a hyphen: a negative difference must not read as a dash.
        difference = f"{measured.value * recipe.scale - published:+.{digits}f}".replace("-", "−")
    return f"{mine} / {paper} / {difference}"


def _not_run(result: Reproduction) -> list[str]:
    """Each row's cells that did not run, grouped by reason: one line per row and reason."""
    recipe = result.recipe
    lines = ["", "## Cells not run here", ""]
    grouped: dict[tuple[str, str], list[str]] = {}
    for row in recipe.rows:
        for column in recipe.columns:
            outcome = result.cell(row.key, column.key)
            if outcome.measured is None:
                why = (row.key, outcome.reason or "unknown")
                grouped.setdefault(why, []).append(column.label)
    if not grouped:
        return [*lines, "Every cell was measured."]
    return lines + _reasons(recipe, grouped)


def _missing(recipe: Recipe) -> list[str]:
    """The recipe's reasons for figures it has not, grouped like the cells not run."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for row in recipe.rows:
        for column in recipe.columns:
            why = row.missing.get(column.key)
            if why is not None:
                grouped.setdefault((row.key, why), []).append(column.label)
    if not grouped:
        return []
    return ["", "## Published figures not recorded", "", *_reasons(recipe, grouped)]


def _reasons(recipe: Recipe, grouped: Mapping[tuple[str, str], list[str]]) -> list[str]:
    """A table of (row, reason) -> the column labels it holds for."""
    lines = ["| row | columns | why |", "|---|---|---|"]
    for (row_key, why), labels in grouped.items():
        every = len(labels) == len(recipe.columns) > 1
        columns = "every column" if every else ", ".join(_md(label) for label in labels)
        label = _md(recipe.row(row_key).label)
        lines.append(f"| {label} | {columns} | {_md(why, limit=600)} |")
    return lines


def _scaled(measured: Measured | None, scale: int) -> float | None:
    return None if measured is None else measured.value * scale


def _md(text: object, limit: int = _CELL_CHARS) -> str:
    """Text as inert Markdown on one line: no table break, link, emphasis, heading or HTML."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    flat = flat.replace("&", "&amp;")
    return _SPECIAL.sub(lambda m: {"<": "&lt;", ">": "&gt;"}.get(m[1], "\\" + m[1]), flat)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def spent(result: Reproduction) -> Usage:
    """What every run of the reproduction cost, from each run's stored examples."""
    total = Usage()
    for info in result.runs.values():
        if isinstance(info.get("usage"), Mapping):
            total = total + Usage(**info["usage"])
    return total


def _cost(result: Reproduction) -> str:
    used = spent(result)
    return (
        f"{cost_text(used)}: {used.llm_calls:,} model calls, "
        f"{used.prompt_tokens:,} + {used.completion_tokens:,} tokens"
    )


def _samples(result: Reproduction) -> str:
    """The examples per run: one figure, or each dataset's where the columns differ."""
    sizes = {
        str(info.get("dataset", folder)): info.get("sample", result.sample)
        for folder, info in result.runs.items()
    }
    if len(set(sizes.values())) <= 1:
        size = next(iter(sizes.values()), result.sample)
        return f"{'whole split' if size is None else size} per run"
    return ", ".join(
        f"{_md(name)}: {'whole split' if size is None else size}" for name, size in sizes.items()
    )
