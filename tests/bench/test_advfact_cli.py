"""``verity adv build``: exit codes for bad input, a build with the scripted fake, one real one.

The fake (`verity.testing.FakeChatModel`) stands in for the model so the command's control
flow can be checked; the one integration test runs the embedded model on a tiny build.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from verity.domain import Message
from verity.llm.client import ModelClient
from verity.testing import FakeChatModel

ROWS = [
    ("1", "false", "The moon is made of cheese."),
    ("2", "pants-fire", "Says the governor owns 40 yachts"),
    ("3", "true", "Water is wet."),
    ("4", "false", "The bridge cost 9 billion dollars."),
]


def write_liar(root: Path) -> Path:
    """A LIAR folder with test.tsv in the dataset's 14 columns."""
    (root / "LIAR").mkdir(parents=True)
    lines = [
        "\t".join([f"{i}.json", label, text, "s", "who", "job", "TX", "none", *"00000", "c"])
        for i, label, text in ROWS
    ]
    (root / "LIAR" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray verity.toml
    for var in ("VERITY_MODEL", "VERITY_BASE_URL", "VERITY_CONFIG", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_liar(tmp_path / "data")


def fake_models(monkeypatch: pytest.MonkeyPatch, passage: str = "Records show it.") -> None:
    """Make ``--model`` give a client over the scripted fake, whatever the spec."""
    count = iter(range(1000))

    def script(messages: Sequence[Message], schema: Any) -> str:
        if "news-style report" in messages[0].content:
            statement = messages[-1].content.split("<statement>")[1].split("</statement>")[0]
            return json.dumps({"text": f"A fluent false report: {statement}"})
        return json.dumps({"text": passage and f"{passage} ({next(count)})"})

    monkeypatch.setattr(
        "verity.llm.spec.make_model", lambda settings: ModelClient(FakeChatModel(script))
    )


def base(data: Path, out: str = "adv") -> list[str]:
    # --n 1: the LIAR folder here has three false statements (a later --n wins).
    return [
        "adv", "build", "--model", "local", "--seed", "0", "--out", out,
        "--data-dir", str(data), "--n", "1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["--seed", "1000"], 2, "--seed must be between 0 and 999"),
        (["--n", "0"], 2, "--n must be between 1 and 3"),
        (["--n", "4"], 2, "--n must be between 1 and 3"),
        (["--passages", "0"], 2, "--passages must be between 1 and 99"),
        (["--temperature", "2.5"], 2, "--temperature must be between 0 and 2"),
        (["--model", "gpt4"], 3, "unknown model backend 'gpt4'"),
        (["--model", "openai:gpt-4o-mini"], 3, "set the environment variable"),
        (["--model", "local", "--base-url", "http://x/v1"], 3, "--base-url is for openai"),
        (["--out", "no/such/adv"], 2, "folder no/such does not exist"),
        (["--data-dir", "missing"], 2, "dataset folder not found"),
    ],
)
def test_bad_input_is_a_message_and_exit_code(
    cli: Any, data: Path, extra: list[str], code: int, message: str
) -> None:
    got, _, err = cli([*base(data), *extra])
    assert (got, message in err) == (code, True), err
    assert "Traceback" not in err
    assert not Path("adv").exists()


def test_a_liar_folder_without_test_tsv_is_bad_input(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = cli(base(tmp_path / "empty"))
    assert code == 2
    assert "dataset file not found" in err


def test_a_build_writes_its_folder_and_says_where(
    cli: Any, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_models(monkeypatch)
    code, out, err = cli([*base(data), "--n", "2", "--passages", "2"])
    assert code == 0, err
    assert "4 samples (2 fakegpt, 2 poisonedrag)" in out
    assert "4 planted passages" in out
    assert "0 of 4 samples already there" in err
    assert err.count(": written (") == 4
    assert sorted(p.name for p in Path("adv").iterdir()) == [
        "README.md",
        "advfact.jsonl",
        "manifest.json",
        "poison.jsonl",
    ]
    manifest = json.loads(Path("adv/manifest.json").read_text())
    assert manifest["model_settings"]["spec"] == "local"
    assert manifest["settings"]["temperature"] == 1.0


def test_a_rerun_with_other_settings_exits_2(
    cli: Any, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_models(monkeypatch)
    assert cli([*base(data), "--n", "1", "--passages", "1"])[0] == 0
    code, _, err = cli([*base(data), "--n", "1", "--passages", "1", "--temperature", "0.2"])
    assert code == 2
    assert "holds a build with other settings (temperature differ" in err


def test_samples_without_usable_text_exit_5_and_keep_the_rest(
    cli: Any, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_models(monkeypatch, passage="")
    code, out, err = cli([*base(data), "--n", "1", "--passages", "1"])
    assert code == 5
    assert "1 samples got no usable text" in err
    assert "run the same command again" in err
    assert "1 samples (1 fakegpt, 0 poisonedrag)" in out


def test_adv_is_listed_in_help(cli: Any) -> None:
    code, out, _ = cli(["adv", "--help"])
    assert code == 0
    assert "build" in out and "poisoned-evidence" in out


@pytest.mark.integration
def test_the_embedded_model_builds_a_tiny_set_that_loads(cli: Any, data: Path) -> None:
    from verity.bench.loaders.advfact import load_advfact
    from verity.domain import Label

    code, _, err = cli([*base(data), "--n", "2", "--passages", "2"])
    assert code == 0, err
    split = load_advfact(data, Path("adv"))
    assert len(split.examples) == 4
    assert {e.label for e in split.examples} == {Label.REFUTED}
    poisoned = [e for e in split.examples if e.meta["attack"] == "poisonedrag"]
    for example in poisoned:
        assert len(example.meta["poison"]) == 2
        texts = [ev.text for ev in example.meta["poison"]]
        assert len(set(texts)) == 2
        assert all(t.startswith(example.subject.text) for t in texts)
    assert "weak" in split.description
    assert "it is weak" in Path("adv/README.md").read_text()
