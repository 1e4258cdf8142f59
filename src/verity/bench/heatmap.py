"""Which search actions ToE's retrieval agent takes per claim category (the paper's Fig. 5).

A ToE verdict's trace counts every action its retrieval agent took (``action_counts``,
over every node's search episode, stop included) and names the category its feature
extractor gave the root claim (``category``); the bench runner copies both into each
row's ``extra``, with the dataset's own category (``dataset_category``, as on the
``toe-fig5`` set). From those rows:

    shares = action_shares(rows)        # {'scientific': {'web': 0.25, 'arxiv': 0.5, ...}, ...}
    png = heatmap_png(shares, "toe, toe-fig5")
    summary = summarize_actions(rows)   # counts, claims, masked actions, agreement
    lines = action_table(summary)       # a Markdown table, one row per category

Normalisation. ToE §IV-B records "the frequency with which the retrieval agent selects
each evidence source" per category and quotes cells as percentages (scientific claims:
arXiv 26.4%). Read here as: a category's actions are pooled over its claims (a claim
that searched more weighs more) and each action's count is divided by the category's
total, so a row sums to 1. Stop is one of the agent's eight actions and counts in the
total; the paper does not say whether its figure leaves stop out, and if it does, its
source shares are those here divided by (1 - the stop share).

Claims are grouped by the dataset's category, like the paper's hand-labelled set; where
no row has one, by the method's own category, and the summary says which.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from verity.bench.fig5 import CATEGORIES
from verity.bench.store import ResultRow
from verity.errors import BadInputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# ToE §III-B: the retrieval agent's eight actions, in the paper's order.
ACTIONS = ("web", "counter", "arxiv", "wiki", "social", "factcheck", "reddit", "stop")

# ToE §IV-B, the text on Fig. 5: the only cells of the figure the paper quotes.
PAPER_CELLS = (
    ("scientific", "arxiv", 0.264),
    ("political", "factcheck", 0.355),
    ("health", "factcheck", 0.345),
    ("celebrity", "social", 0.245),
    ("other", "web", 0.324),
)

UNCATEGORISED = "uncategorised"
"""The group of claims that carry no category where the others do."""

Grouping = Literal["dataset", "method"]

# Names come from traces and data: a broken trace must not make a table of thousands of
# columns or a label of a megabyte.
_MAX_NAMES = 64
_NAME_CHARS = 60


@dataclass(frozen=True)
class ActionSummary:
    """One method's actions per claim category, as counts; shares derive from them.

    ``counts[category][action]`` sums the action over the category's claims; every
    category has every action of ``actions`` (the eight of ToE, then any other the
    traces named). ``claims[category]`` is how many claims it holds (0 for a Fig. 5
    category the run did not meet). ``masked`` lists the actions the runs could not
    take. ``agreed`` / ``compared`` count, per category, the claims whose method's own
    category matched the dataset's, among those that have both.

        summary = summarize_actions(rows)
        summary.shares()["scientific"]["arxiv"]       # 0.5
    """

    counts: Mapping[str, Mapping[str, int]]
    claims: Mapping[str, int]
    actions: tuple[str, ...] = ACTIONS
    grouped_by: Grouping = "dataset"
    masked: tuple[str, ...] = ()
    agreed: Mapping[str, int] = field(default_factory=dict)
    compared: Mapping[str, int] = field(default_factory=dict)

    def shares(self) -> dict[str, dict[str, float]]:
        """Each category's share of each action; an empty dict where it took none."""
        out: dict[str, dict[str, float]] = {}
        for category, counts in self.counts.items():
            total = sum(counts.values())
            out[category] = {a: counts.get(a, 0) / total for a in self.actions} if total else {}
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values, as stored under ``methods.NAME.actions`` in ``report.json``."""
        return {
            "grouped_by": self.grouped_by,
            "actions": list(self.actions),
            "masked": list(self.masked),
            "categories": {
                category: {
                    "claims": self.claims.get(category, 0),
                    "counts": dict(counts),
                    "agreed": self.agreed.get(category, 0),
                    "compared": self.compared.get(category, 0),
                }
                for category, counts in self.counts.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ActionSummary:
        """Rebuild a summary from `to_dict` output."""
        categories: Mapping[str, Mapping[str, Any]] = data["categories"]
        grouped_by = data.get("grouped_by", "dataset")
        if grouped_by not in ("dataset", "method"):
            raise BadInputError(f"actions grouped by {grouped_by!r}: not dataset or method")
        return cls(
            counts={c: {a: int(n) for a, n in v["counts"].items()} for c, v in categories.items()},
            claims={c: int(v["claims"]) for c, v in categories.items()},
            actions=tuple(str(a) for a in data["actions"]),
            grouped_by=grouped_by,
            masked=tuple(str(a) for a in data.get("masked", ())),
            agreed={c: int(v.get("agreed", 0)) for c, v in categories.items()},
            compared={c: int(v.get("compared", 0)) for c, v in categories.items()},
        )


@dataclass(frozen=True)
class _Claim:
    """What one row tells about its claim's search."""

    counts: dict[str, int]
    dataset_category: str | None
    method_category: str | None
    masked: tuple[str, ...]


def summarize_actions(rows: Iterable[ResultRow]) -> ActionSummary | None:
    """Action counts per claim category over ``rows``; None when no row carries counts.

    A row counts when its ``extra`` has ``action_counts`` (a failed example has none).
    The six categories of Fig. 5 always come first, then any other, sorted, then
    `UNCATEGORISED`. Raises `BadInputError` on counts that are not whole numbers >= 0,
    on a category that is not text, or on more than 64 categories or actions.
    """
    claims = [claim for claim in map(_claim_of, rows) if claim is not None]
    if not claims:
        return None
    grouped_by: Grouping = "dataset" if any(c.dataset_category for c in claims) else "method"

    def group(claim: _Claim) -> str:
        own = claim.dataset_category if grouped_by == "dataset" else claim.method_category
        return own or UNCATEGORISED

    categories = _ordered({group(c) for c in claims}, CATEGORIES, last=UNCATEGORISED)
    named = {a for c in claims for a in (*c.counts, *c.masked)}
    actions = _ordered(named, ACTIONS)
    for what, names in (("categories", categories), ("actions", actions)):
        if len(names) > _MAX_NAMES:
            raise BadInputError(f"{len(names)} {what} in the traces; at most {_MAX_NAMES}")
    counts = {category: dict.fromkeys(actions, 0) for category in categories}
    members = dict.fromkeys(categories, 0)
    agreed = dict.fromkeys(categories, 0)
    compared = dict.fromkeys(categories, 0)
    for claim in claims:
        category = group(claim)
        members[category] += 1
        for action, n in claim.counts.items():
            counts[category][action] += n
        if grouped_by == "dataset" and claim.dataset_category and claim.method_category:
            compared[category] += 1
            agreed[category] += claim.method_category == claim.dataset_category
    masked = {a for c in claims for a in c.masked}
    return ActionSummary(
        counts=counts,
        claims=members,
        actions=actions,
        grouped_by=grouped_by,
        masked=tuple(a for a in actions if a in masked),
        agreed=agreed,
        compared=compared,
    )


def action_shares(rows: Iterable[ResultRow]) -> dict[str, dict[str, float]]:
    """Each claim category's share of each action, pooled over its claims (Fig. 5).

    A category's row sums to 1 over the actions (stop included); a category with no
    claim, or whose claims took no action, maps to an empty dict. The six categories of
    Fig. 5 are always there.

        action_shares(rows)["scientific"]["arxiv"]    # 0.5: half its actions were arXiv
    """
    summary = summarize_actions(rows)
    if summary is None:
        return {category: {} for category in CATEGORIES}
    return summary.shares()


def _claim_of(row: ResultRow) -> _Claim | None:
    raw = row.extra.get("action_counts")
    if raw is None:
        return None
    where = f"example {row.example_id!r}"
    if not isinstance(raw, Mapping):
        raise BadInputError(f"{where}: action_counts is a {type(raw).__name__}, not a mapping")
    counts: dict[str, int] = {}
    for action, n in raw.items():
        name = _name(action, f"{where}: an action")
        # bool is an int to Python, and a True count is a bug upstream, not a 1.
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise BadInputError(f"{where}: the count of {name!r} is {n!r}, not a whole number")
        counts[name] = counts.get(name, 0) + n
    masked = row.extra.get("masked_actions") or ()
    if not isinstance(masked, list | tuple):
        raise BadInputError(f"{where}: masked_actions is a {type(masked).__name__}, not a list")
    return _Claim(
        counts=counts,
        dataset_category=_category(row.extra.get("dataset_category"), where),
        method_category=_category(row.extra.get("method_category"), where),
        masked=tuple(_name(a, f"{where}: a masked action") for a in masked),
    )


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadInputError(f"{what} is {str(value)[:_NAME_CHARS]!r}, not a name")
    return _short(value)


def _category(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    # Case folded so that the method's "Political" meets the dataset's "political".
    return _name(value, f"{where}: a category").casefold()


def _short(text: str, limit: int = _NAME_CHARS) -> str:
    # One line of single spaces: a newline in a label would break its row of a table.
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ordered(
    names: Iterable[str], first: Sequence[str], last: str | None = None
) -> tuple[str, ...]:
    """``first`` in its order, then the other names sorted, then ``last`` if present."""
    present = set(names)
    rest = sorted(present - set(first) - {last})
    tail = (last,) if last is not None and last in present else ()
    return (*first, *rest, *tail)


# Markdown


def action_table(summary: ActionSummary) -> list[str]:
    """The Markdown table of a summary: a row per category, a column per action, in %.

    A category without actions shows "-" in its cells; a masked action's column says so;
    where the categories are the dataset's, the last column counts the claims whose
    method's own category agreed.
    """
    shares = summary.shares()
    with_agreement = summary.grouped_by == "dataset" and any(summary.compared.values())
    header = [
        "category",
        "claims",
        "actions",
        *(f"{a} (masked)" if a in summary.masked else a for a in summary.actions),
    ]
    if with_agreement:
        header.append("method's category agrees")
    lines = [
        "| " + " | ".join(_cell(h) for h in header) + " |",
        "|---|" + "--:|" * (len(header) - 1),
    ]
    for category, counts in summary.counts.items():
        row = shares[category]
        cells = [
            _cell(category),
            str(summary.claims.get(category, 0)),
            str(sum(counts.values())),
            *(_pct(row[a]) if row else "-" for a in summary.actions),
        ]
        if with_agreement:
            compared = summary.compared.get(category, 0)
            cells.append(f"{summary.agreed.get(category, 0)}/{compared}" if compared else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def action_section(summary: ActionSummary, image: str) -> list[str]:
    """The report's part on actions: how to read it, masked actions, table, plot.

    ``image`` is the file name of the heatmap beside the report.
    """
    grouping = (
        "Claims are grouped by the dataset's category."
        if summary.grouped_by == "dataset"
        else "Claims are grouped by the method's own category: the dataset gives none."
    )
    lines = [
        "### Actions per claim category",
        "",
        "Every action the retrieval agent took on a category's claims (every node's "
        "search, stop included), pooled over the claims; a cell is the action's share of "
        f"the row in percent, so a row sums to 100. {grouping}",
        "",
    ]
    if summary.masked:
        lines += [
            f"> **Unavailable in this run (masked):** {_cell(', '.join(summary.masked))}. "
            "The agent chose among the other actions only, so the shares are not "
            "comparable cell for cell with the paper's Fig. 5, where every tool was there.",
            "",
        ]
    lines += [*action_table(summary), ""]
    compared = sum(summary.compared.values())
    if summary.grouped_by == "dataset" and compared:
        agreed = sum(summary.agreed.values())
        lines += [
            f"The method's own category matched the dataset's on {agreed} of {compared} "
            f"claims ({_pct(agreed / compared)}%).",
            "",
        ]
    quoted = ", ".join(f"{c} {a} {_pct(share)}" for c, a, share in PAPER_CELLS)
    lines += [
        f"The cells of Fig. 5 that the paper's text quotes (ToE §IV-B), in %: {quoted}.",
        "",
        f"![actions per claim category]({image})",
        "",
    ]
    return lines


def _cell(text: str) -> str:
    # The same escape as the rest of report.md: text from data cannot break the table.
    return text.replace("|", "\\|").replace("\n", " ")


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


# Plot: matplotlib's object API with the Agg canvas, as in verity.bench.report. Every
# label comes from data, so mathtext is off: a "$" in a category is a dollar sign.


def heatmap_figure(
    shares: Mapping[str, Mapping[str, float]],
    title: str,
    *,
    claims: Mapping[str, int] | None = None,
    masked: Sequence[str] = (),
) -> Figure:
    """A heatmap of ``shares``: a row per category, a column per action, cells in %.

    Columns are the eight actions of ToE, then any other the shares name. A category
    without shares is drawn grey. ``claims`` adds each category's claim count to its
    label; an action in ``masked`` is labelled as such.
    """
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    if not shares:
        raise BadInputError("a heatmap needs at least one category")
    rows = list(shares)
    columns = _ordered({a for row in shares.values() for a in row} | set(masked), ACTIONS)
    grid = np.full((len(rows), len(columns)), np.nan)
    for i, category in enumerate(rows):
        for j, action in enumerate(columns):
            if shares[category]:
                grid[i, j] = 100 * float(shares[category].get(action, 0.0))
    if not np.all(np.isfinite(grid[~np.isnan(grid)])):
        raise BadInputError("shares must be finite numbers")
    top = float(np.nanmax(grid)) if np.any(~np.isnan(grid)) else 0.0
    top = top if top > 0 else 100.0

    figure = Figure(
        figsize=(max(6.0, 0.85 * len(columns) + 3.0), max(3.5, 0.55 * len(rows) + 2.2)),
        layout="constrained",
    )
    ax = figure.add_subplot()
    cmap = colormaps["Blues"].with_extremes(bad="0.88")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=top, aspect="auto")
    figure.colorbar(image, ax=ax, shrink=0.8, label="% of the category's actions")
    for i in range(len(rows)):
        for j in range(len(columns)):
            value = grid[i, j]
            text = "-" if math.isnan(value) else f"{value:.1f}"
            color = "white" if not math.isnan(value) and value > top / 2 else "black"
            ax.text(j, i, text, ha="center", va="center", color=color, fontsize=8)
    row_labels = [
        _short(c) + (f" (n={claims.get(c, 0)})" if claims is not None else "") for c in rows
    ]
    column_labels = [_short(a) + ("\n(masked)" if a in masked else "") for a in columns]
    ax.set_xticks(range(len(columns)), column_labels, rotation=30, ha="right", parse_math=False)
    ax.set_yticks(range(len(rows)), row_labels, parse_math=False)
    ax.set_xlabel("action")
    ax.set_ylabel("claim category")
    ax.set_title(_short(title, 2 * _NAME_CHARS), parse_math=False)
    return figure


def heatmap_png(
    shares: Mapping[str, Mapping[str, float]],
    title: str,
    *,
    claims: Mapping[str, int] | None = None,
    masked: Sequence[str] = (),
) -> bytes:
    """`heatmap_figure` as PNG bytes.

    Path("actions_toe.png").write_bytes(heatmap_png(action_shares(rows), "toe"))
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = heatmap_figure(shares, title, claims=claims, masked=masked)
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
