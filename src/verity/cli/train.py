r"""``verity train toe``: ToE's three networks, all in one run or one stage at a time.

    verity train toe --dataset liar-train --claims 200 --model openai:... --out runs/toe \
        --source news-offline --source arxiv:offline --source factcheck:offline \
        --source offline-wiki                    # all three stages, in order
    verity train toe --stage evalnet ...         # one stage
    verity train toe --stage policy ...          # needs evalnet in --out
    verity train toe --stage aggnet ...          # needs evalnet and policy in --out
    verity check "..." --method toe --config toe.toml    # [methods.toe] weights = "runs/toe"

The claims are a seeded draw from the dataset's training split (the paper trains on LIAR
train only, §IV-A); their ids go into each weights manifest, and a benchmark run with
those weights leaves them out of its sample. The same command with the same ``--out``
resumes where it stopped; ``OUT/train.json`` says what the folder holds (dataset, seed,
claims, model, sources, each finished stage's figures and weights hash). ``--variant lite``
trains with the small preset.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated

import typer

from verity.cli.output import ApiKeyEnvOpt, BaseUrlOpt, ConfigOpt
from verity.errors import BadInputError

STAGES = ("evalnet", "policy", "aggnet")
ALL = "all"


def train_command(
    method: Annotated[str, typer.Argument(help="The method to train (toe).")],
    stage: Annotated[
        str, typer.Option(help="all (the three in order), or evalnet, policy or aggnet.")
    ] = ALL,
    dataset: Annotated[str, typer.Option(help="Training dataset.")] = "liar-train",
    claims: Annotated[int, typer.Option(min=1, help="Claims drawn from the dataset.")] = 100,
    epochs: Annotated[int, typer.Option(min=1, help="Epochs of the evalnet/aggnet fit.")] = 30,
    seed: Annotated[int, typer.Option(help="Seed of the draw, the split and the nets.")] = 0,
    variant: Annotated[
        str | None, typer.Option(help="A toe variant whose settings to train with (lite).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Weights folder (default: under the cache).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model spec for every role.")] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="The tools' sources (repeatable).")
    ] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
    config: ConfigOpt = None,
) -> None:
    """Train ToE's networks (all three, or one stage) on a training split; with manifests."""
    from typing import Any

    from verity.api import shared_source
    from verity.bench.datasets import load_dataset
    from verity.config import settings_from_options
    from verity.llm.spec import ModelSet
    from verity.methods.base import settings_for
    from verity.methods.toe.method import ToeMethod
    from verity.methods.toe.train_all import RUN_MANIFEST, train_all
    from verity.methods.toe.weights import default_folder
    from verity.render import clean

    if method != "toe":
        raise BadInputError(f"only toe has networks to train, not {method!r}")
    if stage != ALL and stage not in STAGES:
        raise BadInputError(f"--stage must be {ALL} or one of {', '.join(STAGES)}, not {stage!r}")
    name = f"toe/{variant}" if variant else "toe"
    settings = settings_from_options(
        config, model=model, base_url=base_url, api_key_env=api_key_env, sources=source
    )
    split = load_dataset(dataset, data_dir=data_dir)
    if claims > len(split.examples):
        raise BadInputError(f"{dataset} has {len(split.examples)} examples, fewer than {claims}")
    drawn = random.Random(seed).sample(list(split.examples), claims)
    folder = out or default_folder()
    folder.mkdir(parents=True, exist_ok=True)
    models = ModelSet.from_settings(settings.model, settings.roles)
    sources = [shared_source(s) for s in settings.sources]
    options = settings_for(name, settings.methods)

    def make(**overrides: Any) -> ToeMethod:
        merged = {**options, "weights": str(folder), **overrides}
        return ToeMethod(models=models, sources=sources, **merged)

    def progress(message: str) -> None:
        typer.echo(clean(message), err=True)

    about = {
        "variant": variant,
        "model": models.to_dict(),
        "sources": [s.to_dict() for s in sources],
    }
    done = train_all(
        make,
        drawn,
        folder,
        dataset=split.name,
        seed=seed,
        epochs=epochs,
        progress=progress,
        stages=STAGES if stage == ALL else (stage,),
        about=about,
    )
    for part, figures in done.items():
        for key, value in figures.items():
            shown = f"{value:.4f}" if isinstance(value, float) else str(value)
            typer.echo(f"{part} {key}: {shown}")
        typer.echo(f"weights: {folder / (part + '.pt')}")
    typer.echo(f"manifest: {folder / RUN_MANIFEST}")
