"""``verity train toe``: all three stages from one command unless one stage is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.domain import Claim, Label

SPLIT = DatasetSplit(
    name="liar-train",
    examples=tuple(
        Example(id=str(i), subject=Claim(text=f"c{i}"), label=Label.REFUTED) for i in range(5)
    ),
    labels=(Label.SUPPORTED, Label.REFUTED, Label.CONFLICTING),
    files=(),
    checksum="0",
    description="",
    label_map={},
)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Stands in for the dataset and the training run: records what the command asked for."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # the model is named, never called
    asked: dict[str, Any] = {}

    def fake_train_all(make, examples, out, **kwargs):  # type: ignore[no-untyped-def]
        asked.update(kwargs, examples=list(examples), out=out, method=make())
        return {stage: {"claims": len(examples)} for stage in kwargs["stages"]}

    monkeypatch.setattr("verity.bench.datasets.load_dataset", lambda name, data_dir=None: SPLIT)
    monkeypatch.setattr("verity.methods.toe.train_all.train_all", fake_train_all)
    return asked


ARGS = ["train", "toe", "--claims", "3", "--model", "openai:gpt-4o-mini", "--out", "w"]


def test_without_a_stage_all_three_run_in_order(cli, seen: dict[str, Any]) -> None:
    code, out, err = cli(ARGS)
    assert code == 0, err
    assert seen["stages"] == ("evalnet", "policy", "aggnet")
    assert len(seen["examples"]) == 3 and seen["dataset"] == "liar-train"
    assert "gpt-4o-mini" in str(seen["about"]["model"])  # the manifest names the model
    assert "manifest: w/train.json" in out and "policy claims: 3" in out


def test_one_named_stage_runs_alone_and_an_unknown_one_is_refused(
    cli, seen: dict[str, Any]
) -> None:
    code, _, err = cli([*ARGS, "--stage", "policy"])
    assert code == 0, err
    assert seen["stages"] == ("policy",)
    code, _, err = cli([*ARGS, "--stage", "critic"])
    assert code != 0 and "--stage must be all or one of evalnet, policy, aggnet" in err
