r"""``verity optimize wkgfc``: self-reflective optimisation of WKGFC's policy prompt.

    verity optimize wkgfc --dataset fever --dataset hover --train 100 --val 50 \
        --epochs 20 --batch 10 --source kg-local --out runs/opt

The defaults are the paper's (4.4): 150 non-test examples from FEVER and HOVER, 100 to
train on and 50 to validate, 20 epochs. Each dataset gives an equal share of the training
and of the validation examples (the first datasets take the remainder), a seeded draw;
the ids are qualified with their dataset ("fever:123"). The saved prompt names them, and
a benchmark run of ``wkgfc`` with that prompt leaves them out of its sample. Load the
result with ``[methods.wkgfc] policy_prompt = "runs/opt/policy.json"``. The same command
with the same ``--out`` resumes after the last finished epoch.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from verity.cli.output import ApiKeyEnvOpt, BaseUrlOpt, ConfigOpt
from verity.errors import BadInputError

if TYPE_CHECKING:
    from verity.bench.base import DatasetSplit, Example
    from verity.domain import Label

# Section 4.4: "150 non-test samples drawn from the FEVER and HOVER datasets".
DATASETS = ("fever", "hover")


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` equal shares, the remainder to the first ones.

    shares(50, 2) == [25, 25]; shares(7, 3) == [3, 2, 2]
    """
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def draw(
    splits: Sequence[DatasetSplit], train: int, val: int, seed: int
) -> tuple[list[Example], list[Example], list[Label]]:
    """Training and validation examples, an equal share from each dataset, and their labels.

    Each dataset's draw is seeded by ``seed`` and its name, so adding a dataset leaves the
    others' draws as they were. Ids come back qualified: "fever:123".
    """
    train_out: list[Example] = []
    val_out: list[Example] = []
    labels: list[Label] = []
    for split, n_train, n_val in zip(
        splits, shares(train, len(splits)), shares(val, len(splits)), strict=True
    ):
        if n_train + n_val > len(split.examples):
            raise BadInputError(
                f"{split.name} has {len(split.examples)} examples, fewer than its share "
                f"of --train and --val ({n_train} + {n_val})"
            )
        drawn = random.Random(f"{seed}:{split.name}").sample(list(split.examples), n_train + n_val)
        qualified = [replace(ex, id=f"{split.name}:{ex.id}") for ex in drawn]
        train_out += qualified[:n_train]
        val_out += qualified[n_train:]
        labels += [label for label in split.labels if label not in labels]
    return train_out, val_out, labels


def optimize_command(
    method: Annotated[str, typer.Argument(help="The method to optimise (wkgfc).")],
    dataset: Annotated[
        list[str] | None,
        typer.Option(help="Dataset name, repeatable (default: fever and hover, the paper's)."),
    ] = None,
    train: Annotated[int, typer.Option(min=1, help="Training examples in all.")] = 100,
    val: Annotated[int, typer.Option(min=1, help="Validation examples in all.")] = 50,
    epochs: Annotated[
        int, typer.Option(min=0, help="Epochs in all; a rerun into the same --out resumes.")
    ] = 20,
    batch: Annotated[
        int, typer.Option(min=1, help="Training examples per gradient and rewrite.")
    ] = 10,
    weights: Annotated[
        str | None,
        typer.Option(
            help="Reward weights: correctness,sufficiency,citation,efficiency "
            "(default 0.6,0.15,0.1,0.15, verity's choice)."
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed of the train/validation draw and the training order.")
    ] = 0,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("runs/optimize"),
    model: Annotated[str | None, typer.Option(help="Model spec for every role.")] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Graph and web sources (repeatable).")
    ] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
    config: ConfigOpt = None,
) -> None:
    """Optimise a method's policy prompt on a training split, keeping the best by validation."""
    from verity.api import shared_source
    from verity.bench.datasets import load_dataset
    from verity.config import settings_from_options
    from verity.llm.spec import ModelSet
    from verity.methods.base import settings_for
    from verity.methods.wkgfc.method import WkgfcMethod
    from verity.methods.wkgfc.optimize import optimize
    from verity.methods.wkgfc.reflection import Weights
    from verity.render import clean

    if method != "wkgfc":
        raise BadInputError(f"only wkgfc has an optimisable prompt, not {method!r}")
    names = list(dataset or DATASETS)
    if len(set(names)) != len(names):
        raise BadInputError(f"--dataset names a dataset twice: {', '.join(names)}")
    reward_weights = Weights.parse(weights) if weights is not None else Weights()
    settings = settings_from_options(
        config, model=model, base_url=base_url, api_key_env=api_key_env, sources=source
    )
    splits = [load_dataset(name, data_dir=data_dir) for name in names]
    train_set, val_set, labels = draw(splits, train, val, seed)
    models = ModelSet.from_settings(settings.model, settings.roles)
    options = settings_for("wkgfc", settings.methods)
    options.pop("policy_prompt", None)  # optimisation starts from the paper's prompt
    base = WkgfcMethod(
        models=models, sources=[shared_source(s) for s in settings.sources], **options
    )
    result = optimize(
        base.with_policy,
        train_set,
        val_set,
        labels,
        optimizer=models.for_role("optimizer"),
        critic=models.for_role("critic"),
        epochs=epochs,
        out=out,
        batch=batch,
        seed=seed,
        weights=reward_weights,
        datasets=[split.name for split in splits],
        # Progress lines quote the model's critiques: no terminal controls get through.
        progress=lambda message: typer.echo(clean(message), err=True),
    )
    typer.echo(
        f"validation balanced accuracy {result['initial_val_score']:.3f} -> "
        f"{result['val_score']:.3f}; best prompt in {out / 'policy.json'}"
    )
