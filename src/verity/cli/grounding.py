"""``verity grounding eval``: the grounding checker measured as a claim-evidence classifier.

    verity grounding eval --dataset climate-fever-evidence --sample 300 --seed 0 \
        --model openai:gpt-4o-mini --out results/grounding-cf
    verity grounding eval --dataset fever-symmetric --sample 300 --seed 0 \
        --checker nli:~/models/deberta-v3-nli --out results/grounding-fs-nli

Each pair (a claim, one evidence sentence, the sentence's gold label) goes through the
checker as an explanation of one sentence citing [1] with the evidence as reference 1
(`verity.grounding.pairs`); supported reads as SUPPORTS, contradicted as REFUTES, and every
other status as NOT_ENOUGH_INFO. ``OUT/pairs.jsonl`` gets one record per pair as it is
checked, and a rerun with the same settings and ``--out`` checks only the pairs not there
yet; ``OUT/metrics.json`` gets macro-F1, accuracy, per-class F1 and the confusion matrix,
3-way, and for a set without NOT_ENOUGH_INFO gold (fever-symmetric) also 2-way, a
NOT_ENOUGH_INFO prediction counted wrong. docs/grounding.md says how to read them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from verity.cli.output import ApiKeyEnvOpt, BaseUrlOpt, ConfigOpt, DataDirOpt, out, say
from verity.errors import BadInputError

if TYPE_CHECKING:
    from verity.bench.base import Example
    from verity.domain import Grounding, Label

# The pair datasets: one claim, one evidence sentence, the sentence's label (docs/datasets.md).
PAIR_DATASETS = ("climate-fever-evidence", "fever-symmetric")
RECORDS = "pairs.jsonl"
METRICS = "metrics.json"
SETTINGS = "run.json"
NLI = "nli:"

grounding_app = typer.Typer(
    no_args_is_help=True, help="Measure the grounding checker on claim-evidence pairs."
)

CheckPair = Callable[["Example"], Awaitable["Grounding"]]


@grounding_app.command("eval")
def grounding_eval(
    dataset: Annotated[str, typer.Option(help=f"One of {', '.join(PAIR_DATASETS)}.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for records and metrics.")],
    sample: Annotated[int, typer.Option(min=1, help="Pairs drawn from the dataset.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 0,
    model: Annotated[
        str | None, typer.Option(help="The model checker's spec (default: the settings').")
    ] = None,
    checker: Annotated[
        str, typer.Option(help="model (the grounding step's model) | nli:DIR (a checkpoint).")
    ] = "model",
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Run a grounding checker on sampled pairs; write per-pair records and the metrics."""
    import asyncio

    from verity.bench.datasets import load_dataset
    from verity.bench.runner import select_sample

    if dataset not in PAIR_DATASETS:
        raise BadInputError(
            f"--dataset must be one of {', '.join(PAIR_DATASETS)} (pairs), not {dataset!r}"
        )
    check, about = _checker(checker, model, base_url, api_key_env, config)
    split = load_dataset(dataset, data_dir=data_dir)
    pairs = select_sample(split, sample, seed, set())
    settings = {"dataset": dataset, "sample": sample, "seed": seed, **about}
    records = asyncio.run(run_pairs(pairs, check, out_dir, settings, progress=_progress))
    scores = score(records, split.labels, seed=seed)
    scores["settings"] = settings
    (out_dir / METRICS).write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    show(scores)
    out.print(f"records: {out_dir / RECORDS}\nmetrics: {out_dir / METRICS}", markup=False)


def _progress(done: int, total: int) -> None:
    if done == total or done % 25 == 0:
        say("default", f"{done} of {total} pairs checked")


def _checker(
    spec: str,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    config: Path | None,
) -> tuple[CheckPair, dict[str, Any]]:
    """How one pair is checked, and what the run records of the checker."""
    from verity.grounding.pairs import check_pair, nli_pair
    from verity.methods.baselines.nli.judge import checkpoint_judge

    if spec == "model":
        from verity.config import settings_from_options
        from verity.llm.spec import ModelSet

        settings = settings_from_options(
            config, model=model, base_url=base_url, api_key_env=api_key_env
        )
        client = ModelSet.from_settings(settings.model, settings.roles).for_role("grounding")

        async def by_model(pair: Example) -> Grounding:
            ev = pair.gold[0]
            return await check_pair(pair.subject.text, ev.text, client, title=ev.title or "")

        return by_model, {"checker": "model", "model": client.to_dict()}
    if spec.startswith(NLI) and spec[len(NLI) :].strip():
        folder = spec[len(NLI) :].strip()
        judge = checkpoint_judge(folder)
        name = f"nli:{Path(folder).expanduser().name}"

        async def by_nli(pair: Example) -> Grounding:
            ev = pair.gold[0]
            return await nli_pair(
                pair.subject.text, ev.text, judge, checker=name, title=ev.title or ""
            )

        return by_nli, {"checker": "nli", "checkpoint": folder}
    raise BadInputError(f"--checker must be 'model' or 'nli:DIR', not {spec!r}")


async def run_pairs(
    pairs: Sequence[Example],
    check: CheckPair,
    out_dir: Path,
    settings: dict[str, Any],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every pair's record, in the sample's order; pairs already in ``out_dir`` are kept.

    ``OUT/run.json`` holds the settings; a folder written with other settings is refused,
    so records of two checkers never mix.
    """
    from verity.grounding.pairs import pair_label

    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / SETTINGS
    if manifest.exists():
        before = json.loads(manifest.read_text(encoding="utf-8"))
        if before != json.loads(json.dumps(settings)):
            raise BadInputError(
                f"{out_dir} holds a run with other settings ({manifest}); use another --out"
            )
    else:
        manifest.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    path = out_dir / RECORDS
    done: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                done[record["id"]] = record
    with path.open("a", encoding="utf-8") as handle:
        for pair in pairs:
            if pair.id in done:
                continue
            grounding = await check(pair)
            sentence = grounding.sentences[0] if grounding.sentences else None
            record = {
                "id": pair.id,
                "gold": pair.label.value,
                "pred": pair_label(grounding).value,
                "status": sentence.status if sentence else "unchecked",
                "found": list(sentence.found) if sentence else [],
                "error": grounding.error,
                "calls": grounding.usage.llm_calls,
            }
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            done[pair.id] = record
            if progress is not None:
                progress(sum(p.id in done for p in pairs), len(pairs))
    return [done[pair.id] for pair in pairs]


def score(
    records: Sequence[dict[str, Any]], gold_labels: Sequence[Label], *, seed: int = 0
) -> dict[str, Any]:
    """The metrics of the records: 3-way, and 2-way where the gold has no NOT_ENOUGH_INFO.

    2-way is over SUPPORTED and REFUTED only: a NOT_ENOUGH_INFO prediction is wrong,
    counted in the confusion matrix's ``other`` column (`verity.bench.metrics`).
    """
    from verity.bench.metrics import compute_metrics
    from verity.domain import Label

    three = (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO)
    gold = [Label(r["gold"]) for r in records]
    pred = [Label(r["pred"]) for r in records]
    scores: dict[str, Any] = {
        "n": len(records),
        "errors": sum(1 for r in records if r["error"]),
        "three_way": compute_metrics(gold, pred, three, seed=seed).to_dict(),
    }
    if Label.NOT_ENOUGH_INFO not in gold_labels:
        two = (Label.SUPPORTED, Label.REFUTED)
        scores["two_way"] = compute_metrics(gold, pred, two, seed=seed).to_dict()
    return scores


def show(scores: dict[str, Any]) -> None:
    """The scores as a few lines of text."""
    lines = [f"{scores['n']} pairs, {scores['errors']} checker errors (read as NOT_ENOUGH_INFO)"]
    for key, title in (("three_way", "3-way"), ("two_way", "2-way, NEI counted wrong")):
        if key not in scores:
            continue
        m = scores[key]
        per_class = ", ".join(f"{k} {v['f1']:.3f}" for k, v in m["per_class"].items())
        lines.append(
            f"{title}: macro-F1 {m['macro_f1']:.3f}, accuracy {m['accuracy']:.3f}; F1 {per_class}"
        )
        confusion = m["confusion"]
        lines.append("  gold \\ pred: " + " | ".join(confusion["columns"]))
        for label, row in zip(confusion["labels"], confusion["matrix"], strict=True):
            lines.append(f"  {label}: " + " | ".join(str(cell) for cell in row))
    out.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
