"""The report of a benchmark run: ``report.json``, ``report.md`` and PNG plots.

    result = MethodResult(name="local", metrics=metrics, usage_per_claim=usage_per_claim(usages),
                          extra={"iterations": 1.4}, examples=outcomes)
    write_report(Path("runs/fever"), dataset="fever", setting="gold", results={"local": result},
                 manifest=manifest, paper_figures={"local": {"macro_f1": 0.71}},
                 warnings={"local": ["no web source: ..."]})

Where results carry their per-example outcomes, the report also compares every two
methods on the examples they share (`verity.bench.paired`) and gives each method's
calibration (`verity.bench.calibration`); `verity.bench.report_compare` renders those
sections.

Everything is rendered in memory first, then each file is written to a temporary file in
the output folder and renamed over its final name: a crash leaves either the previous
file or the new one, never half of one. ``report.json`` is written last, so when it is
new, every plot and ``report.md`` are too.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import date
from enum import Enum
from pathlib import Path
from typing import Any

from verity.bench.calibration import calibration, reliability_png
from verity.bench.heatmap import action_section, heatmap_png
from verity.bench.metrics import OTHER, Metrics
from verity.bench.paired import RESAMPLES, PairedComparison, compare_all
from verity.bench.report_compare import (
    PAPER_METRICS,
    calibration_lines,
    check_paper_figures,
    comparison_lines,
)
from verity.bench.report_plots import confusion_figure, metrics_figure, png
from verity.bench.report_positive import (
    positive_f1,
    positive_of,
    positive_payload,
    positive_title,
)
from verity.bench.results import GroundingScore, MethodResult
from verity.domain import Label
from verity.errors import BadInputError
from verity.llm.prices import dollars as as_dollars

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
METRICS_PNG = "metrics.png"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def write_report(
    out_dir: Path,
    *,
    dataset: str,
    setting: str,
    results: Mapping[str, MethodResult],
    manifest: Mapping[str, Any],
    paper_figures: Mapping[str, Mapping[str, float]] | None = None,
    warnings: Mapping[str, Sequence[str]] | None = None,
    seed: int | None = None,
    resamples: int = RESAMPLES,
) -> None:
    """Write ``report.json``, ``report.md``, ``metrics.png`` and ``confusion_<method>.png``.

    A result that counted ToE's search actions (``actions``) also gets
    ``actions_<method>.png``, a heatmap per claim category, and its table in ``report.md``.
    A result with per-example outcomes (``examples``) gets its calibration, and a
    ``reliability_<method>.png`` where it gave confidences; every two such results are
    compared on the examples they share (McNemar's test and a paired bootstrap of
    ``resamples`` resamples, seeded with ``seed``, by default the manifest's ``seed``,
    else 0). Both are stored as ``comparisons`` and ``calibration`` in ``report.json``.

    ``results`` maps each method's name to its result, in the order the report lists
    them. ``paper_figures[method][metric]``, where given, is the figure the method's
    paper reports for this protocol, for ``accuracy``, ``macro_f1`` or
    ``balanced_accuracy``, on the same 0-1 scale as ours; it appears beside the measured
    figure of the same metric in ``report.md`` and ``metrics.png``, and is stored as
    ``paper_figures`` in ``report.json``. A figure for a method without a result is left
    out. The Markdown header reads ``seed`` and ``code_version`` from
    ``manifest`` ("-" where absent), and names the web stand-in where
    ``manifest["web_standin"]`` records one; the whole manifest is stored in
    ``report.json``. Where ``manifest["dataset"]["positive"]`` names a class (the dataset
    is scored by that class's F1, as CheckThat! is), ``report.md`` gains its F1 beside
    macro-F1 and ``report.json`` keeps it under ``positive``. ``warnings[method]`` lists
    what the method said was wrong with its setup: shown at the top of ``report.md`` and
    stored as ``warnings`` in ``report.json`` (method -> sentences; empty when no method
    warned).

    Raises `BadInputError` when there is no result, a key differs from its result's
    name, two names share a plot file name, a paper figure is outside [0, 1] or names an
    unknown metric, a warning names a method without a result, or results with outcomes
    differ in label space.

        write_report(Path("out"), dataset="hover-2", setting="open",
                     results={"direct": result}, manifest={"seed": 0})
    """
    if not results:
        raise BadInputError("a report needs at least one method's result")
    for key, result in results.items():
        if key != result.name:
            raise BadInputError(f"result for {key!r} is named {result.name!r}")
    papers = {
        name: figures
        for name, figures in check_paper_figures(paper_figures).items()
        if name in results
    }
    said = warnings or {}
    unknown = sorted(set(said) - set(results))
    if unknown:
        raise BadInputError(f"warnings for methods without a result: {unknown}")
    # In the results' order, and only methods that said something.
    warned = {name: [str(line) for line in said[name]] for name in results if said.get(name)}
    plot_names = {name: f"confusion_{_safe(name)}.png" for name in results}
    if len(set(plot_names.values())) != len(plot_names):
        raise BadInputError(f"method names collide as file names: {sorted(plot_names)}")
    if seed is None:
        given = manifest.get("seed")
        seed = given if isinstance(given, int) and not isinstance(given, bool) else 0
    comparisons = _comparisons(results, resamples=resamples, seed=seed)
    calibrations = {name: calibration(r.examples) for name, r in results.items() if r.examples}
    reliability_names = {
        name: f"reliability_{_safe(name)}.png"
        for name, found in calibrations.items()
        if found is not None
    }

    payload = {
        "methods": {name: result.to_dict() for name, result in results.items()},
        "warnings": warned,
        "dataset": dataset,
        "setting": setting,
        "paper_figures": papers,
        "comparisons": [c.to_dict() for c in comparisons],
        "calibration": {
            name: found.to_dict() if found is not None else None
            for name, found in calibrations.items()
        },
        "manifest": dict(manifest),
    }
    positive = positive_of(manifest)
    if positive is not None:
        payload["positive"] = positive_payload(
            positive, {name: r.metrics for name, r in results.items()}
        )
    files: dict[str, bytes] = {
        plot_names[name]: png(confusion_figure(result)) for name, result in results.items()
    }
    for name, image in reliability_names.items():
        found = calibrations[name]
        if found is not None:
            files[image] = reliability_png(name, found)
    counted = {name: r.actions for name, r in results.items() if r.actions is not None}
    action_names = {name: f"actions_{_safe(name)}.png" for name in counted}
    for name, actions in counted.items():
        files[action_names[name]] = heatmap_png(
            actions.shares(),
            f"{name}, {dataset}: actions per claim category",
            claims=actions.claims,
            masked=actions.masked,
        )
    files[METRICS_PNG] = png(metrics_figure(f"{dataset}, {setting}", results, papers))
    files[REPORT_MD] = _markdown(
        dataset=dataset,
        setting=setting,
        results=results,
        manifest=manifest,
        positive=positive,
        papers=papers,
        plot_names=plot_names,
        warnings=warned,
        action_names=action_names,
        compared=comparison_lines(comparisons, seed=seed)
        + calibration_lines(calibrations, reliability_names),
    ).encode("utf-8")
    # Last, so that a new report.json means every other file is new as well.
    files[REPORT_JSON] = (
        json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False, default=_json_default)
        + "\n"
    ).encode("utf-8")

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        _write_atomic(out_dir / name, data)


def _comparisons(
    results: Mapping[str, MethodResult], *, resamples: int, seed: int
) -> list[PairedComparison]:
    """Every two results with outcomes, compared on the examples they share."""
    kept = {name: r for name, r in results.items() if r.examples}
    spaces = {r.metrics.labels for r in kept.values()}
    if len(spaces) > 1:
        raise BadInputError(
            "results with per-example outcomes differ in label space: "
            f"{sorted([label.value for label in space] for space in spaces)}"
        )
    labels: tuple[Label, ...] = next(iter(spaces)) if spaces else ()
    outcomes = {name: r.examples for name, r in kept.items()}
    return compare_all(outcomes, labels=labels, resamples=resamples, seed=seed)


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name).strip("_") or "method"


def _json_default(value: Any) -> Any:
    # Manifests may carry paths, dates and enums; anything else is a caller's mistake.
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, date):  # datetime included
        return value.isoformat()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable in a report manifest")


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        # os.open with mode 0o666 lets the umask decide the permissions, as open() does.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# Markdown


def _markdown(
    *,
    dataset: str,
    setting: str,
    results: Mapping[str, MethodResult],
    manifest: Mapping[str, Any],
    positive: Label | None,
    papers: Mapping[str, Mapping[str, float]],
    plot_names: Mapping[str, str],
    warnings: Mapping[str, Sequence[str]],
    action_names: Mapping[str, str],
    compared: Sequence[str] = (),
) -> str:
    # A published figure's column stands right after the measured one of the same
    # metric, and only for metrics some method has a figure for.
    published = {metric for figures in papers.values() for metric in figures}
    grounded = any(result.grounding is not None for result in results.values())
    headers = {
        "accuracy": "accuracy",
        "macro_f1": "macro-F1 [95% CI]",
        "balanced_accuracy": "balanced accuracy",
    }
    sizes = sorted({result.metrics.n for result in results.values()})
    lines = [f"# Benchmark report: {_cell(dataset)}, {_cell(setting)}", ""]
    # First thing a reader sees: a warning changes what the numbers below mean.
    for name, said in warnings.items():
        lines += [f"> **Warning ({_cell(name)}):** {_cell(line)}" for line in said]
    if warnings:
        lines.append("")
    lines += [
        "| | |",
        "|---|---|",
        f"| dataset | {_cell(dataset)} |",
        f"| setting | {_cell(setting)} |",
        f"| examples | {', '.join(str(n) for n in sizes)} |",
        f"| sample seed | {_cell(_text(manifest.get('seed')))} |",
        f"| code version | {_cell(_text(manifest.get('code_version')))} |",
        *_standin_rows(manifest.get("web_standin")),
        *_substitution_rows(manifest.get("substitutions")),
        *_variant_rows(manifest.get("methods")),
        *_weights_rows(manifest.get("methods")),
        "",
        "Scores in percent; macro-F1 with its bootstrap 95% interval"
        + ("; a paper column gives the figure the method's paper reports" if papers else "")
        + ". Usage is the mean per claim; calls on the critical path are those that stood "
        "one after another, seconds in calls add up every call, wall seconds are the "
        "check's own; cost is in US dollars at the models' prices (price unknown for a "
        "model without one, such as the embedded model).",
        "",
    ]
    header = ["method", "n"]
    for metric, title in headers.items():
        header.append(title)
        if metric in published:
            header.append(f"paper {PAPER_METRICS[metric]}")
        if metric == "macro_f1" and positive is not None:
            header.append(positive_title(positive))
        if metric == "accuracy":
            header.append("accuracy per gold label")
            if grounded:
                header += ["grounded", "contradicts label"]
    header += [
        "errors", "LLM calls", "on critical path", "prompt tokens", "completion tokens",
        "seconds in calls", "wall seconds", "cost",
    ]  # fmt: skip
    lines += [
        "| " + " | ".join(header) + " |",
        "|---|" + "".join("---|" if h == "accuracy per gold label" else "--:|" for h in header[1:]),
    ]
    for name, result in results.items():
        m, usage = result.metrics, result.usage_per_claim
        measured = {
            "accuracy": _pct(m.accuracy),
            "macro_f1": _f1_with_ci(m),
            "balanced_accuracy": _pct(m.balanced_accuracy),
        }
        cells = [_cell(name), str(m.n)]
        for metric in headers:
            cells.append(measured[metric])
            if metric in published:
                paper = papers.get(name, {}).get(metric)
                cells.append(_pct(paper) if paper is not None else "-")
            if metric == "macro_f1" and positive is not None:
                f1 = positive_f1(m, positive)
                cells.append(_pct(f1) if f1 is not None else "-")
            if metric == "accuracy":
                cells.append(_per_gold_label(m))
                if grounded:
                    cells += _grounding_cells(result.grounding)
        lines.append(
            "| "
            + " | ".join(
                [
                    *cells,
                    str(m.errors),
                    _number(usage.get("llm_calls"), ".2f"),
                    _number(usage.get("critical_calls"), ".2f"),
                    _number(usage.get("prompt_tokens"), ",.0f"),
                    _number(usage.get("completion_tokens"), ",.0f"),
                    _number(usage.get("seconds"), ".2f"),
                    _number(usage.get("wall_seconds"), ".2f"),
                    cost_per_example(usage),
                ]
            )
            + " |"
        )
    lines += _grounding_rows(results)
    lines += _group_rows(results)
    lines += ["", f"![metrics]({METRICS_PNG})", ""]
    lines += compared
    for name, result in results.items():
        lines += _method_section(name, result, plot_names[name], action_names.get(name))
    return "\n".join(lines).rstrip() + "\n"


def cost_per_example(usage: Mapping[str, float]) -> str:
    """The mean cost of an example, from `usage_per_claim`; "price unknown" when it is.

    A part of the calls at an unknown price is said, never counted as free.
    """
    sent = usage.get("llm_calls", 0.0) - usage.get("cached_calls", 0.0)
    unpriced, dollars = usage.get("unpriced_calls", 0.0), usage.get("cost", 0.0)
    if sent <= 0:
        return "$0"
    if unpriced >= sent - 1e-9:
        return "price unknown"
    shown = as_dollars(dollars)
    return f"{shown} + calls of unknown price" if unpriced > 0 else shown


def _per_gold_label(m: Metrics) -> str:
    """Accuracy on the examples of each gold label (its recall), for labels present."""
    shown = [
        f"{label.value} {_pct(m.per_class[label].recall)}"
        for label in m.labels
        if m.per_class[label].support
    ]
    return ", ".join(shown) or "-"


def _grounding_cells(score: GroundingScore | None) -> list[str]:
    """The main table's grounded share and share contradicting the label ("-" unknown)."""
    if score is None:
        return ["-", "-"]
    return [
        _pct(score.grounded) if score.grounded is not None else "-",
        _pct(score.contradicts_label) if score.contradicts_label is not None else "-",
    ]


def _grounding_rows(results: Mapping[str, MethodResult]) -> list[str]:
    """What the grounding checker did and cost, apart from the methods' own usage."""
    scored = {name: r.grounding for name, r in results.items() if r.grounding is not None}
    if not scored:
        return []
    lines = [
        "",
        "Grounding (`verity.grounding`): grounded is the mean share of an explanation's "
        "factual sentences that its evidence supports; contradicts label is the share of "
        "checked verdicts whose explanation argues for another label. The checker's calls "
        "are its own, per verdict it was asked about, not in the method's usage above.",
        "",
        "| method | checked | checker failed | checker calls | checker tokens | checker cost |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, score in scored.items():
        usage = score.usage_per_verdict
        tokens = usage.get("prompt_tokens", 0.0) + usage.get("completion_tokens", 0.0)
        lines.append(
            f"| {_cell(name)} | {score.checked} | {score.errors} "
            f"| {_number(usage.get('llm_calls'), '.2f')} | {tokens:,.0f} "
            f"| {cost_per_example(usage)} |"
        )
    return lines


def _group_rows(results: Mapping[str, MethodResult]) -> list[str]:
    """The table of accuracy per subset, when any result has subsets."""
    if not any(result.groups for result in results.values()):
        return []
    lines = [
        "",
        "Accuracy by subset. Citing a poisoned passage: the share of verdicts whose evidence "
        "includes one, among those of a method that met the passages through its sources; "
        "a method that does not retrieve got them in the statement's text instead.",
        "",
        "| method | subset | n | accuracy | verdicts citing a poisoned passage |",
        "|---|---|--:|--:|--:|",
    ]
    for name, result in results.items():
        for group, score in result.groups.items():
            if score.cites_poison is not None:
                cited = _pct(score.cites_poison)
            elif score.poison_in_text:
                cited = f"given in text ({score.poison_in_text})"
            else:
                cited = "-"
            lines.append(
                f"| {_cell(name)} | {_cell(group)} | {score.n} | {_pct(score.accuracy)} | {cited} |"
            )
    return lines


def _variant_rows(methods: Any) -> list[str]:
    """A row per method whose configuration says it is not the paper's method as run.

    A method may say so in ``variant_kind`` (ToE: untrained or partly trained, a Table III
    ablation, or a component variant of verity's that the paper never ran; a baseline: a
    substitution), so that no reader takes it for the paper's own method or ablation.
    """
    if not isinstance(methods, Mapping):
        return []
    return [
        f"| variant | {_cell(str(name))}: {_cell(str(config['variant_kind']))} |"
        for name, config in methods.items()
        if isinstance(config, Mapping) and config.get("variant_kind", "paper") != "paper"
    ]


def _weights_rows(methods: Any) -> list[str]:
    """A row per method that ran trained weights: each part's file and content hash.

    A method that loads weights lists them in ``weights_used`` (part -> path, sha256), so
    that a reader knows which weights gave the numbers and can check the files.
    """
    if not isinstance(methods, Mapping):
        return []
    out = []
    for name, config in methods.items():
        used = config.get("weights_used") if isinstance(config, Mapping) else None
        if not isinstance(used, Mapping) or not used:
            continue
        parts = [
            f"{part} {_text(info.get('path'))} (sha256 {_text(info.get('sha256'))})"
            for part, info in used.items()
            if isinstance(info, Mapping)
        ]
        if parts:
            out.append(f"| weights | {_cell(str(name))}: {_cell('; '.join(parts))} |")
    return out


def _substitution_rows(substitutions: Any) -> list[str]:
    """A header row per source that stands in for a paper's tool."""
    if not isinstance(substitutions, Mapping):
        return []
    return [
        f"| substitution | {_cell(str(name))}: {_cell(str(note))} |"
        for name, note in substitutions.items()
    ]


def _standin_rows(standin: Any) -> list[str]:
    if not isinstance(standin, Mapping):
        return []
    excluded = standin.get("excluded") or {}
    dropped = ", ".join(f"{reason} {n}" for reason, n in excluded.items() if n) or "none"
    return [
        f"| web stand-in | corpus {_cell(_text(standin.get('corpus')))}: "
        f"{_text(standin.get('documents'))} documents kept, excluded: {_cell(dropped)}. "
        f"{_cell(_text(standin.get('note')))} |"
    ]


def _method_section(
    name: str, result: MethodResult, plot_name: str, action_name: str | None = None
) -> list[str]:
    m = result.metrics
    lines = [f"## {_cell(name)}", ""]
    if result.extra:
        lines += [f"- {_cell(key)} per claim: {value:.2f}" for key, value in result.extra.items()]
        lines.append("")
    lines += ["| class | precision | recall | F1 | support |", "|---|--:|--:|--:|--:|"]
    for label in m.labels:
        c = m.per_class[label]
        lines.append(
            f"| {label.value} | {_pct(c.precision)} | {_pct(c.recall)} | {_pct(c.f1)} "
            f"| {c.support} |"
        )
    columns = [*(label.value for label in m.labels), OTHER]
    lines += [
        "",
        "Confusion matrix (rows: gold, columns: predicted; "
        f"{OTHER}: failed or outside the label space):",
        "",
        "| gold \\ predicted | " + " | ".join(columns) + " |",
        "|---|" + "--:|" * len(columns),
    ]
    for label, row in zip(m.labels, m.confusion, strict=True):
        lines.append(f"| {label.value} | " + " | ".join(str(cell) for cell in row) + " |")
    lines += ["", f"![confusion matrix of {_cell(name)}]({plot_name})", ""]
    if result.actions is not None and action_name is not None:
        lines += action_section(result.actions, action_name)
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _f1_with_ci(m: Metrics) -> str:
    if m.macro_f1_ci is None:
        return _pct(m.macro_f1)
    low, high = m.macro_f1_ci
    return f"{_pct(m.macro_f1)} [{_pct(low)}, {_pct(high)}]"


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)
