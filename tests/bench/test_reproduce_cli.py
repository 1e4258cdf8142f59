"""``verity reproduce``: the list, the errors, and a tiny recipe end to end, then resumed.

The model is a loopback OpenAI-compatible endpoint (`faults`) that calls every claim
SUPPORTED, or a scripted fake (`verity.testing.FakeChatModel`): what is tested is the
harness around it (which cells run, how they are measured, that a rerun resumes), not
the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from faults.latency import LatencyEndpoint
from verity.bench.datasets import load_dataset
from verity.bench.recipes.configs import Options, base_config, seed_configs
from verity.bench.recipes.plan import plan_recipe
from verity.bench.recipes.run import Harness, find_recipe, reproduce
from verity.bench.recipes.schema import recipe_names
from verity.errors import ConfigError, DatasetError, UnknownNameError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method
from verity.testing import FakeChatModel

DATA = Path("../shared/datasets").resolve()
SUPERVISED = "a supervised detector"
ROWS = ("direct-a", "direct-b", "broken", "psm")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")

RECIPE = """
id = "tiny"
title = "A tiny table"
paper = "local"
where = "Table 0"
metric = "accuracy"
setting = "gold"
sample = 4
seeds = [0]

[[columns]]
key = "fev"
label = "FEVEROUS"
dataset = "feverous-s"

[[columns]]
key = "fev-f1"
label = "FEVEROUS F1"
dataset = "feverous-s"
metric = "macro_f1"

[[columns]]
key = "fev-true"
label = "FEVEROUS, true claims"
dataset = "feverous-s"
metric = "accuracy_on:SUPPORTED"

[[columns]]
key = "liar-gold"
label = "LIAR-New with gold evidence"
dataset = "liar-new"

[[columns]]
key = "aggrefact"
label = "AggreFact-CNN"
unavailable = "not obtainable here"

[[rows]]
key = "direct-a"
label = "Direct (GPT-4)"
method = "direct"
published = { fev = 80.0, fev-f1 = 40.0 }

[[rows]]
key = "direct-b"
label = "Direct (Llama)"
method = "direct"
published = { fev = 30.0 }

[[rows]]
key = "broken"
label = "A row without its checkpoint"
method = "direct"
settings = { no_such_setting = 1 }
needs = "a local checkpoint, passed as checkpoint=DIR"

[[rows]]
key = "psm"
label = "PSM"
unavailable = "a supervised detector"
published = { fev = 70.0 }
"""


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray verity.toml
    for var in ("VERITY_METHOD", "VERITY_MODEL", "VERITY_BASE_URL", "VERITY_SOURCES",
                "VERITY_CONFIG"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)


def supported(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
    if schema and "label" in schema.get("properties", {}):
        return {"explanation": "e", "label": "SUPPORTED", "confidence": 0.5, "cited": []}
    return None


def test_list_names_every_shipped_recipe(cli) -> None:
    code, out, err = cli(["reproduce", "--list"])
    assert code == 0, err
    for name in recipe_names():
        assert name in out
    if recipe_names():
        assert "runnable" in out and "published" in out


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["reproduce", "no-such-table"], 3, "unknown recipe 'no-such-table'; known:"),
        (["reproduce", "missing.toml"], 3, "unknown recipe 'missing.toml'"),
        (["reproduce"], 2, "name a recipe"),
        (["reproduce", "RECIPE", "--row-model", "direct-a"], 2, "--row-model takes ROW=SPEC"),
        (["reproduce", "RECIPE", "--row-model", "nope=openai:m"], 3, "unknown row of tiny"),
        (["reproduce", "RECIPE", "--row-model", "direct-a=gpt:x"], 3, "unknown model backend"),
        (["reproduce", "RECIPE", "--row-setting", "direct-a=1"], 2, "ROW:KEY=VALUE"),
    ],
)
def test_bad_arguments_give_the_documented_exit_codes(
    cli, tmp_path: Path, argv: list[str], code: int, said: str
) -> None:
    (tmp_path / "tiny.toml").write_text(RECIPE, encoding="utf-8")
    argv = [str(tmp_path / "tiny.toml") if a == "RECIPE" else a for a in argv]
    got, _, err = cli(argv)
    assert got == code, err
    assert said in " ".join(err.split())


def test_a_malformed_recipe_file_is_a_configuration_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(RECIPE.replace('metric = "accuracy"\n', "", 1) + "\n[oops", encoding="utf-8")
    with pytest.raises(ConfigError, match="malformed"):
        find_recipe(str(bad))
    with pytest.raises(UnknownNameError):
        find_recipe("no-such-table")


@needs_data
def test_a_tiny_recipe_end_to_end_then_resumed_without_a_model_call(cli, tmp_path: Path) -> None:
    recipe_file = tmp_path / "tiny.toml"
    recipe_file.write_text(RECIPE, encoding="utf-8")
    out = tmp_path / "out"
    with LatencyEndpoint(delay=0, answer=supported) as endpoint:
        argv = [
            "reproduce", str(recipe_file), "--model", "openai:m", "--base-url",
            endpoint.base_url, "--row-model", "direct-b=openai:other", "--out", str(out),
            "--data-dir", str(DATA),
        ]  # fmt: skip
        code, _, err = cli(argv)
        assert code == 0, err
        # 4 examples for the shared direct rows, 4 for direct-b on its own model.
        assert endpoint.count == 8
        first = (out / "reproduce.md").read_text(encoding="utf-8")
        again, _, err2 = cli(argv)
        assert again == 0, err2
        assert endpoint.count == 8  # resumed: every example was stored
    assert (out / "reproduce.md").read_text(encoding="utf-8") == first

    run_report = json.loads((out / "feverous-s-gold" / "seed-0" / "report.json").read_text())
    # The run's own report shows the table's figures: the first direct row's.
    assert run_report["paper_figures"] == {"direct": {"accuracy": 0.8, "macro_f1": 0.4}}
    manifest = json.loads((out / "feverous-s-gold" / "seed-0" / "manifest.json").read_text())
    split = load_dataset("feverous-s", data_dir=DATA)
    gold = {ex.id: ex.label.value for ex in split.examples}
    truth = [gold[i] for i in manifest["sample"]["ids"]]
    share = 100 * truth.count("SUPPORTED") / len(truth)

    report = json.loads((out / "reproduce.json").read_text())
    cells = {(c["row"], c["column"]): c for c in report["cells"]}
    a = cells[("direct-a", "fev")]
    assert a["measured"] == pytest.approx(share) and a["published"] == 80.0
    assert a["difference"] == pytest.approx(share - 80.0)
    assert a["run"] == "feverous-s-gold"
    assert cells[("direct-a", "fev-true")]["measured"] == pytest.approx(100.0)
    b = cells[("direct-b", "fev")]
    assert b["measured"] == pytest.approx(share) and b["run"].startswith("feverous-s-gold-model-")
    assert report["row_models"] == {"direct-b": "openai:other"}

    why = {key: c["not_run"] for key, c in cells.items() if c["measured"] is None}
    assert why[("broken", "fev")].startswith("needs a local checkpoint, passed as checkpoint=DIR;")
    assert "cannot be built here" in why[("broken", "fev")]
    assert why[("direct-a", "liar-gold")] == "dataset 'liar-new' carries no gold evidence"
    assert why[("psm", "fev")] == f"row not available here: {SUPERVISED}"
    assert why[("direct-a", "aggrefact")] == "column not available here: not obtainable here"
    assert set(why) == {
        *((r, c) for r in ROWS for c in ("liar-gold", "aggrefact")),
        *(("broken", c) for c in ("fev", "fev-f1", "fev-true")),
        *(("psm", c) for c in ("fev", "fev-f1", "fev-true")),
    }  # fmt: skip
    assert "## Cells not run here" in first and "carries no gold evidence" in first
    assert f"| Direct (GPT-4) | direct | {share:.2f} [" in first


LATE = """
[[rows]]
key = "late"
label = "A method that fails only when it runs"
method = "rag"
needs = "a model that answers in JSON"
"""


@needs_data
def test_a_dataset_not_on_this_machine_leaves_the_rest_running(tmp_path: Path) -> None:
    text = RECIPE.replace('dataset = "liar-new"', 'dataset = "hover"\nhops = 2') + LATE
    recipe = find_recipe_text(text)
    fake = FakeChatModel(
        lambda messages, schema: json.dumps(supported([], schema) or {}), model="fake-repro"
    )
    # Built without complaint, then no valid answer on any example.
    mute = FakeChatModel(lambda messages, schema: "not json at all", model="fake-mute")

    def load(name: str, *, data_dir: Path | None, hops: int | None):
        if name == "hover":
            raise DatasetError("HOVER/ is not in the data folder")
        return load_dataset(name, data_dir=DATA, hops=hops)

    def builder(model, roles, settings):
        def build(name, sources):
            from verity.methods.base import settings_for

            chosen = mute if name == "rag" else fake
            return load_method(
                name, models=ModelSet(ModelClient(chosen)), sources=sources,
                **settings_for(name, settings),
            )  # fmt: skip

        return build

    harness = Harness(load=load, builder=builder, sources=lambda config: lambda split: [])
    plan = plan_recipe(recipe, sample=3)
    result = reproduce(plan, Options(out=tmp_path / "out"), harness)
    reason = result.cell("direct-a", "liar-gold").reason or ""
    assert reason.startswith("dataset 'hover' cannot be loaded here: HOVER/ is not in")
    measured = result.cell("direct-a", "fev").measured
    assert measured is not None and measured.n == 3
    assert len(fake.requests) == 3
    late = result.cell("late", "fev").reason or ""
    assert late.startswith("needs a model that answers in JSON; every one of 3 examples failed")
    assert (tmp_path / "out" / "reproduce.md").is_file()


def test_each_run_config_reseeds_every_model_and_keeps_the_sample(tmp_path: Path) -> None:
    recipe = find_recipe_text(RECIPE)
    plan = plan_recipe(recipe, row_models={"direct-b": "openai:other"}, seeds=(3, 7), sample=9)
    options = Options(
        out=tmp_path,
        model=ModelSettings(spec="openai:m", base_url="http://127.0.0.1:9/v1"),
        roles={"judge": ModelSettings(spec="openai:j", seed=None)},
        method_settings={"direct": {"k": 2}},
    )
    runs = {run.folder: run for run in plan.runs}
    main = base_config(runs["feverous-s-gold"], plan, options)
    assert main.methods == ("direct",) and main.sample == 9 and main.seed == 3
    assert main.leakage == "paper-faithful"  # the papers ran their tools unguarded
    assert main.method_settings == {"direct": {"k": 2}}
    configs = seed_configs(main, plan.seeds)
    assert [c.out for c in configs] == [tmp_path / "feverous-s-gold" / f"seed-{s}" for s in (3, 7)]
    assert [c.model.seed for c in configs] == [3, 7]
    assert [c.roles["judge"].seed for c in configs] == [3, 7]
    assert {c.seed for c in configs} == {3}  # one sample for every repeat
    # The broken row's settings go over the user's table for its method.
    part = base_config(runs["feverous-s-gold-part2"], plan, options)
    assert part.method_settings == {"direct": {"k": 2, "no_such_setting": 1}}
    # A row's own model keeps the endpoint and is the model of every role.
    own = next(run for run in plan.runs if run.model == "openai:other")
    config = base_config(own, plan, options)
    assert config.model.spec == "openai:other" and config.roles == {}
    assert config.model.base_url == "http://127.0.0.1:9/v1"


def find_recipe_text(text: str):
    import tomllib

    from verity.bench.recipes.schema import Recipe

    return Recipe.model_validate(tomllib.loads(text))


def test_a_run_config_takes_its_column_sample_unless_one_is_given(tmp_path: Path) -> None:
    text = RECIPE.replace(
        'key = "fev"\nlabel = "FEVEROUS"\ndataset = "feverous-s"\n',
        'key = "fev"\nlabel = "FEVEROUS"\ndataset = "feverous-s"\nsample = 3\n',
    )
    recipe = find_recipe_text(text)
    own = plan_recipe(recipe)
    runs = {run.folder: run for run in own.runs}
    assert base_config(runs["feverous-s-gold"], own, Options(out=tmp_path)).sample == 3
    given = plan_recipe(recipe, sample=2)
    runs = {run.folder: run for run in given.runs}
    assert base_config(runs["feverous-s-gold"], given, Options(out=tmp_path)).sample == 2


@needs_data
def test_a_recipe_names_its_sources_and_source_replaces_them(cli, tmp_path: Path) -> None:
    recipe_file = tmp_path / "tiny.toml"
    # Top-level keys go before the first table: the recipe's own evidence sources.
    recipe_file.write_text('sources = ["factcheck:offline"]\n' + RECIPE, encoding="utf-8")
    with LatencyEndpoint(delay=0, answer=supported) as endpoint:
        common = [
            "reproduce", str(recipe_file), "--model", "openai:m", "--base-url",
            endpoint.base_url, "--data-dir", str(DATA),
        ]  # fmt: skip
        code, _, err = cli([*common, "--out", str(tmp_path / "own")])
        assert code == 0, err
        code, _, err = cli([*common, "--out", str(tmp_path / "given"), "--source", "offline-wiki"])
        assert code == 0, err
    own = json.loads((tmp_path / "own" / "reproduce.json").read_text())
    given = json.loads((tmp_path / "given" / "reproduce.json").read_text())
    assert own["sources"] == ["factcheck:offline"]
    assert given["sources"] == ["offline-wiki"]
    assert "| sources | factcheck:offline |" in (tmp_path / "own" / "reproduce.md").read_text()


ONE_ROW = """
id = "one"
title = "One row"
paper = "local"
where = "Table 0"
metric = "accuracy"
setting = "gold"
sample = 3
seeds = [0]

[[columns]]
key = "fev"
label = "FEVEROUS"
dataset = "feverous-s"

[[rows]]
key = "direct"
label = "Direct"
method = "direct"
"""


@needs_data
def test_retry_errors_runs_only_the_failed_examples_again(cli, tmp_path: Path) -> None:
    recipe_file = tmp_path / "one.toml"
    recipe_file.write_text(ONE_ROW, encoding="utf-8")
    out = tmp_path / "out"

    def unusable(messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
        return {"label": "no such label"} if schema else None

    with LatencyEndpoint(delay=0, answer=unusable) as endpoint:
        argv = [
            "reproduce", str(recipe_file), "--model", "openai:m", "--base-url",
            endpoint.base_url, "--out", str(out), "--data-dir", str(DATA),
        ]  # fmt: skip
        assert cli(argv)[0] == 0
        failed = json.loads((out / "reproduce.json").read_text())["cells"][0]
        assert failed["measured"] is None and "every one of 3 examples failed" in failed["not_run"]
        asked = endpoint.count
        endpoint.answer = supported
        assert cli(argv)[0] == 0
        assert endpoint.count == asked  # a plain rerun keeps the stored failures
        assert cli([*argv, "--retry-errors"])[0] == 0
        assert endpoint.count == asked + 3
    cell = json.loads((out / "reproduce.json").read_text())["cells"][0]
    assert cell["measured"] is not None and cell["not_run"] is None


@needs_data
def test_a_spent_run_budget_stops_the_table_writes_it_and_a_rerun_finishes_it(
    tmp_path: Path,
) -> None:
    from verity.errors import BudgetExceededError
    from verity.llm.budget import Budget
    from verity.llm.prices import Price

    recipe = find_recipe_text(RECIPE)
    fake = FakeChatModel(
        lambda messages, schema: json.dumps(supported([], schema) or {}), model="fake-budget"
    )

    def builder(model, roles, settings):
        def build(name, sources):
            from verity.methods.base import settings_for

            client = ModelClient(fake, price=Price(input=1.0, output=10.0))
            return load_method(
                name, models=ModelSet(client), sources=sources, **settings_for(name, settings)
            )

        return build

    load = lambda name, *, data_dir, hops: load_dataset(name, data_dir=DATA, hops=hops)  # noqa: E731
    harness = Harness(load=load, builder=builder, sources=lambda config: lambda split: [])
    plan = plan_recipe(recipe, sample=3)
    out = tmp_path / "out"
    with pytest.raises(BudgetExceededError) as info:
        reproduce(plan, Options(out=out, run_budget=Budget(calls=2)), harness)
    assert info.value.scope == "run"
    assert len(fake.requests) == 2  # the third request was never sent
    table = (out / "reproduce.md").read_text()
    assert "the reproduction's budget was spent" in table
    assert "| cost | $" in table and "2 model calls" in table
    result = reproduce(plan, Options(out=out, run_budget=Budget(calls=100)), harness)
    # One run (direct on three FEVEROUS claims; its rows share it): the rerun sends the
    # one request the budget stopped, nothing twice.
    assert len(fake.requests) == 3
    assert result.cell("direct-a", "fev").measured is not None
    assert "3 model calls" in (out / "reproduce.md").read_text()
