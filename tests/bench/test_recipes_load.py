"""The shipped recipes: each loads, and names only methods, datasets and metrics verity has.

Method names are checked against the entry-point list, so a baseline whose module is not
written yet still counts as registered; a variant (``zofia/no-debate``) is checked against
its method's ``variants`` wherever that method's class can be imported.
"""

from __future__ import annotations

import pytest

from verity.bench.datasets import dataset_names
from verity.bench.fig5 import CATEGORIES
from verity.bench.heatmap import ACTIONS
from verity.bench.recipes.schema import Recipe, load_recipe, recipe_names
from verity.domain import Label
from verity.methods.base import method_names, variant_settings
from verity.sources.registry import source_names

RECIPES = (
    "zofia-t1",
    "zofia-t2",
    "zofia-t3",
    "local-t1",
    "local-t2",
    "local-t3",
    "wkgfc-t1",
    "wkgfc-t3",
    "wkgfc-t4",
    "toe-t2",
    "toe-t3",
    "toe-f5",
)
# WKGFC Table 4's observations (§5.7): insufficient KG, exceeding max steps, over-confidence.
ERROR_TYPES = ("IK", "EM", "OC")
PLAIN_METRICS = ("accuracy", "macro_f1", "balanced_accuracy")


def metric_known(name: str) -> bool:
    """Whether a metric name is one the recipes may use (see docs/recipes.md)."""
    kind, _, arg = name.partition(":")
    if not arg:
        return name in PLAIN_METRICS
    if kind == "accuracy_on":
        return arg in {label.value for label in Label}
    if kind == "action_share":
        return arg in ACTIONS
    if kind == "error_rate":
        return arg in ERROR_TYPES
    return False


def method_registered(name: str) -> bool:
    """A registered method, or a variant its method declares (when it can be imported)."""
    base, _, variant = name.partition("/")
    if base not in method_names():
        return False
    if not variant:
        return True
    try:
        variant_settings(name)
    except ImportError:
        # The method's module is not there yet: the entry point is all there is to check.
        return True
    except Exception:
        return False
    return True


def test_every_table_of_the_issue_has_a_recipe() -> None:
    assert sorted(recipe_names()) == sorted(RECIPES)


@pytest.mark.parametrize("name", RECIPES)
def test_the_recipe_loads_under_its_own_id(name: str) -> None:
    recipe = load_recipe(name)
    assert isinstance(recipe, Recipe)
    assert recipe.id == name
    assert recipe.paper == name.split("-")[0]
    assert recipe.columns and recipe.rows


@pytest.mark.parametrize("name", RECIPES)
def test_rows_name_registered_methods_or_say_why_not(name: str) -> None:
    for row in load_recipe(name).rows:
        if row.unavailable:
            assert not row.method, f"{name}/{row.key}: unavailable rows run nothing"
        else:
            assert method_registered(row.method), f"{name}/{row.key}: {row.method!r}"


@pytest.mark.parametrize("name", RECIPES)
def test_columns_name_known_datasets_or_say_why_not(name: str) -> None:
    known = set(dataset_names())
    for column in load_recipe(name).columns:
        if column.dataset:
            assert column.dataset in known, f"{name}/{column.key}: {column.dataset!r}"
        else:
            assert column.unavailable, f"{name}/{column.key}"
        if column.hops is not None:
            assert column.dataset == "hover" and column.hops in (2, 3, 4)


@pytest.mark.parametrize("name", RECIPES)
def test_metrics_and_groups_are_ones_verity_can_measure(name: str) -> None:
    recipe = load_recipe(name)
    assert metric_known(recipe.metric), recipe.metric
    for item in (*recipe.columns, *recipe.rows):
        if item.metric is not None:
            assert metric_known(item.metric), f"{name}/{item.key}: {item.metric!r}"
        if item.group is not None:
            assert item.group in CATEGORIES, f"{name}/{item.key}: {item.group!r}"


@pytest.mark.parametrize("name", RECIPES)
def test_rows_on_a_local_checkpoint_say_what_they_need(name: str) -> None:
    for row in load_recipe(name).rows:
        if row.method == "nli":
            assert "checkpoint" in row.needs, f"{name}/{row.key}"


def test_a_name_that_is_not_registered_is_caught() -> None:
    assert method_registered("zofia/no-debate")
    assert not method_registered("zofia/no-such-ablation")
    assert not method_registered("self-ask")
    assert metric_known("error_rate:EM") and metric_known("accuracy_on:SUPPORTED")
    assert not metric_known("error_rate:XX") and not metric_known("f1")


@pytest.mark.parametrize("name", RECIPES)
def test_an_open_book_recipe_names_sources_this_machine_has(name: str) -> None:
    recipe = load_recipe(name)
    settings = {column.setting or recipe.setting for column in recipe.columns}
    if "open" not in settings:
        assert recipe.sources == []
        return
    assert recipe.sources, "an open-book table says which sources stand in for the paper's"
    # Offline ones only: the command has to run without a network or a key.
    offline = {"offline-wiki", "kg-local", "news-offline", "factcheck:offline", "arxiv:offline"}
    assert set(recipe.sources) <= offline
    assert {s.partition(":")[0] for s in recipe.sources} <= set(source_names())
    if recipe.paper == "wkgfc":
        assert recipe.sources[0] == "kg-local"  # the method is built around the graph
