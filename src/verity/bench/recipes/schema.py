"""A recipe: one of the papers' tables as data, with the figure the paper prints in each cell.

    recipe = load_recipe("zofia-t1")
    recipe.columns[0].dataset            # 'politifact-pp'
    recipe.published("react", "politifact-acc")   # 74.73, as printed (percent)
    recipe.missing("psm", "politifact-acc")       # None, or why the cell has no figure

A table is rows (a method, a variant, or one of the paper's systems verity does not have)
by columns (a dataset, an evidence setting and a metric). Each row records the figure the
paper prints in each column, on the paper's own scale (``scale``: 100 for percent, 1 for
fractions). A cell that the text extraction garbled, or that the paper leaves empty
("-"), is listed under ``missing`` with the reason and never given a number.

Recipes live as TOML files in ``verity/bench/recipes/data/``, one per table; the file
name is the recipe's id.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from verity.errors import ConfigError, UnknownNameError

Setting = Literal["gold", "open", "closed"]
Aggregate = Literal["mean", "median"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Column(_Strict):
    """One column of the table: where and how a figure is measured."""

    key: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    label: str
    # A verity dataset name (`verity.bench.datasets.dataset_names`); empty with
    # ``unavailable`` when the paper's dataset cannot be had.
    dataset: str = ""
    hops: int | None = None
    # Metric and setting default to the recipe's.
    metric: str | None = None
    setting: Setting | None = None
    # A group of examples within the dataset (e.g. a claim category), when the column
    # reports one.
    group: str | None = None
    # The paper's sample size for this column where it differs from the recipe's
    # (WKGFC's Table 2 sizes, say); `--sample` overrides both.
    sample: int | None = Field(default=None, ge=1)
    unavailable: str = ""

    @model_validator(mode="after")
    def _dataset_or_reason(self) -> Column:
        if not self.dataset and not self.unavailable:
            raise ValueError(f"column {self.key!r}: give a dataset or say why it is unavailable")
        return self


class Row(_Strict):
    """One row of the table: a method as verity runs it, and what the paper printed."""

    key: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    label: str
    # A verity method or variant name; empty with ``unavailable`` for a system verity does
    # not implement (a supervised model whose weights are not public, say).
    method: str = ""
    # Settings for the method in this row (merged over the variant's).
    settings: dict[str, object] = Field(default_factory=dict)
    # The model the paper ran this row on, as the paper names it (informational).
    paper_model: str = ""
    # Overrides of the recipe's metric or group for this row (e.g. one error type per row).
    metric: str | None = None
    group: str | None = None
    unavailable: str = ""
    # What the row needs that a default install lacks (a local checkpoint, an API key):
    # when the method cannot be built here, its cells are reported as not run, with this.
    needs: str = ""
    # The columns the paper ran this row in, when it ran it in only some (it prints '-'
    # elsewhere, or the row holds one part of a model's figures); empty: every column.
    runs_in: list[str] = Field(default_factory=list)
    # Column key -> the figure the paper prints, on the recipe's scale.
    published: dict[str, float] = Field(default_factory=dict)
    # Column key -> why the paper's figure is not recorded.
    missing: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _method_or_reason(self) -> Row:
        if not self.method and not self.unavailable:
            raise ValueError(f"row {self.key!r}: give a method or say why it is unavailable")
        both = set(self.published) & set(self.missing)
        if both:
            raise ValueError(f"row {self.key!r}: cells both published and missing: {both}")
        return self


class Recipe(_Strict):
    """A table of a paper, runnable: see the module docstring."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    # The paper (a file stem under the papers folder: zofia, local, wkgfc, toe) and where
    # in it the table is.
    paper: Literal["zofia", "local", "wkgfc", "toe"]
    where: str
    metric: str
    setting: Setting = "open"
    scale: Literal[1, 100] = 100
    # The paper's sample per column (None: the whole split) and its seeds; `--sample` and
    # `--repeats` override them.
    sample: int | None = None
    seeds: list[int] = Field(default_factory=lambda: [0])
    # How the paper combined repeated runs into one figure.
    aggregate: Aggregate = "mean"
    # The evidence sources of the open setting: what this machine has in place of the
    # paper's tools (offline stand-ins, the local KG). `--source` replaces them; empty:
    # the settings' sources.
    sources: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    columns: list[Column]
    rows: list[Row]

    @model_validator(mode="after")
    def _cells_name_columns(self) -> Recipe:
        keys = [c.key for c in self.columns]
        if len(set(keys)) != len(keys):
            raise ValueError("column keys repeat")
        rows = [r.key for r in self.rows]
        if len(set(rows)) != len(rows):
            raise ValueError("row keys repeat")
        for row in self.rows:
            unknown = (set(row.published) | set(row.missing) | set(row.runs_in)) - set(keys)
            if unknown:
                raise ValueError(f"row {row.key!r} names unknown columns: {sorted(unknown)}")
            for key, value in row.published.items():
                if not 0 <= value <= self.scale:
                    raise ValueError(f"row {row.key!r}, {key}: {value} is outside 0..{self.scale}")
        return self

    def row(self, key: str) -> Row:
        """The row with this key."""
        for row in self.rows:
            if row.key == key:
                return row
        raise UnknownNameError(f"row of {self.id}", key, [r.key for r in self.rows])

    def column(self, key: str) -> Column:
        """The column with this key."""
        for column in self.columns:
            if column.key == key:
                return column
        raise UnknownNameError(f"column of {self.id}", key, [c.key for c in self.columns])

    def published(self, row: str, column: str) -> float | None:
        """The paper's figure in a cell, on the recipe's scale; None where none is recorded."""
        self.column(column)
        return self.row(row).published.get(column)

    def missing(self, row: str, column: str) -> str | None:
        """Why a cell has no recorded figure; None where it has one or none is claimed."""
        self.column(column)
        return self.row(row).missing.get(column)


_DATA = "verity.bench.recipes.data"


def recipe_names() -> list[str]:
    """The id of every recipe shipped with verity, sorted."""
    files = resources.files(_DATA).iterdir()
    return sorted(f.name.removesuffix(".toml") for f in files if f.name.endswith(".toml"))


@cache
def load_recipe(name: str) -> Recipe:
    """The recipe with this id; `UnknownNameError` naming the others when there is none."""
    if name not in recipe_names():
        raise UnknownNameError("recipe", name, recipe_names())
    raw = resources.files(_DATA).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    try:
        recipe = Recipe.model_validate(tomllib.loads(raw))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"recipe {name!r} is malformed: {exc}") from exc
    if recipe.id != name:
        raise ConfigError(f"recipe file {name}.toml declares id {recipe.id!r}")
    return recipe
