"""``verity adv``: build AdvFact, ToE's poisoned-evidence benchmark.

verity adv build --model openai:gpt-4o-mini --seed 0 --out results/advfact
verity adv build --model local --seed 0 --out /tmp/advfact --n 2 --passages 2
verity bench --dataset advfact:results/advfact --methods direct,rag

A rerun of the same command finishes an interrupted build; docs/advfact.md describes the
set, its files and how the bench uses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verity.cli.output import ApiKeyEnvOpt, BaseUrlOpt, ConfigOpt, out, say

adv_app = typer.Typer(
    no_args_is_help=True, help="Build AdvFact, ToE's poisoned-evidence benchmark."
)


@adv_app.command("build")
def adv_build(
    model: Annotated[
        str, typer.Option("--model", help="local | local:/path/model.gguf | openai:MODEL")
    ],
    seed: Annotated[int, typer.Option("--seed", help="Sampling and generation seed (0-999).")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder to write (new, empty, or an earlier build).")
    ],
    n: Annotated[int, typer.Option("--n", help="False LIAR statements to draw.")] = 100,
    passages: Annotated[
        int, typer.Option("--passages", help="PoisonedRAG passages per statement.")
    ] = 5,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature of every call.")
    ] = 1.0,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Benchmark data folder (holds LIAR/).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Write AdvFact (FakeGPT and PoisonedRAG samples of false LIAR statements) to --out."""
    # Imported here: `verity --help` must not load pydantic, the model clients or the data.
    from verity.bench.advfact import POISON_FILE, RECORDS_FILE, AdvFactOptions, build_advfact
    from verity.bench.datasets import data_dir as find_data_dir
    from verity.config import settings_from_options
    from verity.errors import ModelOutputError
    from verity.llm.spec import make_model

    settings = settings_from_options(
        config, model=model, base_url=base_url, api_key_env=api_key_env
    )
    options = AdvFactOptions(seed=seed, n=n, passages=passages, temperature=temperature)
    result = build_advfact(
        find_data_dir(data_dir),
        out_dir,
        model=make_model(settings.model),
        options=options,
        model_settings=settings.model,
        progress=lambda message: say("default", message),
    )
    parts = ", ".join(f"{count} {attack}" for attack, count in result.by_attack.items())
    out.print(
        f"{result.records} samples ({parts}) in {result.out / RECORDS_FILE}; "
        f"{result.passages} planted passages in {result.out / POISON_FILE}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if result.failed:
        raise ModelOutputError(
            f"{len(result.failed)} samples got no usable text (e.g. {result.failed[0]}); "
            "run the same command again to retry them"
        )
