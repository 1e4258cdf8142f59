"""The plots of a benchmark report: the metrics per method and each confusion matrix.

    Path("metrics.png").write_bytes(png(metrics_figure("fever, gold", results, papers)))

matplotlib's object API with the Agg canvas, so no pyplot state or GUI backend is touched
and figures are freed with their objects. Method names come from data, so mathtext is
off wherever they are drawn: a "$" in a name is a dollar sign.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import TYPE_CHECKING

from verity.bench.metrics import OTHER

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from verity.bench.results import MethodResult

_BARS = (
    ("accuracy", "accuracy"),
    ("macro_f1", "macro-F1, 95% CI"),
    ("balanced_accuracy", "balanced acc."),
)


def png(figure: Figure) -> bytes:
    """The figure as PNG bytes, at 100 dpi."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def confusion_figure(result: MethodResult) -> Figure:
    """The confusion matrix of one result, its ``other`` column included."""
    from matplotlib.figure import Figure

    m = result.metrics
    columns = [*(label.value for label in m.labels), OTHER]
    rows = [label.value for label in m.labels]
    figure = Figure(
        figsize=(max(4.5, 1.1 * len(columns) + 2.5), max(3.5, 0.9 * len(rows) + 2.2)),
        layout="constrained",
    )
    ax = figure.add_subplot()
    image = ax.imshow(m.confusion, cmap="Blues", vmin=0, vmax=max(1, *map(max, m.confusion)))
    figure.colorbar(image, ax=ax, shrink=0.8)
    threshold = max(1, *map(max, m.confusion)) / 2
    for i, row in enumerate(m.confusion):
        for j, count in enumerate(row):
            ax.text(
                j,
                i,
                str(count),
                ha="center",
                va="center",
                color="white" if count > threshold else "black",
            )
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    # The method's name comes from data: mathtext is off, "$" is a dollar sign.
    ax.set_title(f"{result.name} (n={m.n}, errors={m.errors})", parse_math=False)
    return figure


def metrics_figure(
    title: str, results: Mapping[str, MethodResult], papers: Mapping[str, Mapping[str, float]]
) -> Figure:
    """Accuracy, macro-F1 (with its interval) and balanced accuracy per method.

    ``papers[method][metric]`` puts the published figure as a black diamond on that bar.
    """
    from matplotlib.figure import Figure

    names = list(results)
    width = 0.8 / len(_BARS)
    figure = Figure(figsize=(max(5.0, 1.6 * len(names) + 2.5), 4.5), layout="constrained")
    ax = figure.add_subplot()
    legend_has_paper = False
    for b, (key, legend) in enumerate(_BARS):
        xs = [i + (b - (len(_BARS) - 1) / 2) * width for i in range(len(names))]
        values = [float(getattr(results[name].metrics, key)) for name in names]
        ax.bar(xs, values, width, label=legend)
        if key == "macro_f1":
            for x, name, value in zip(xs, names, values, strict=True):
                ci = results[name].metrics.macro_f1_ci
                if ci is not None:
                    below, above = max(0.0, value - ci[0]), max(0.0, ci[1] - value)
                    ax.errorbar(
                        x, value, yerr=[[below], [above]], fmt="none", ecolor="black", capsize=4
                    )
        # Each published figure as a black diamond on the bar of the metric it reports.
        marked = [
            (x, papers[name][key])
            for x, name in zip(xs, names, strict=True)
            if key in papers.get(name, {})
        ]
        if marked:
            ax.scatter(
                [x for x, _ in marked],
                [v for _, v in marked],
                marker="D",
                color="black",
                zorder=3,
                label="paper figure" if not legend_has_paper else None,
            )
            legend_has_paper = True
    # Method names and the dataset come from data: mathtext is off, "$" is a dollar sign.
    ax.set_xticks(range(len(names)), names, parse_math=False)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("score")
    ax.set_title(title, parse_math=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return figure
