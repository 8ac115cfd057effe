"""Inline SVG plots for the bench report: ROC curves, confusion matrices, score histograms.

Hand-written SVG keeps the report one self-contained file that opens offline, with no
plotting library to install. Colours come from one palette so a reader (and the report's
screenshot test) can tell checkers and classes apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from refcheck_callbacks.bench.metrics import RocCurve

CHECKER_COLOURS = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
"""One colour per checker, in the order the checkers were given."""
SUPPORTED_COLOUR = "#2ca02c"
UNSUPPORTED_COLOUR = "#d62728"
HEAT_LOW = (247, 251, 255)
HEAT_HIGH = (8, 48, 107)
AXIS_COLOUR = "#444444"
GRID_COLOUR = "#dddddd"

_FONT = 'font-family="sans-serif" font-size="11"'


def checker_colour(position: int) -> str:
    return CHECKER_COLOURS[position % len(CHECKER_COLOURS)]


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _frame(left: int, top: int, size: int, x_label: str, y_label: str) -> list[str]:
    """Axes from 0 to 1 with a light grid, for plots in the unit square."""
    parts = []
    for step in range(6):
        offset = size * step / 5
        value = f"{step / 5:.1f}"
        parts.append(
            f'<line x1="{left + offset}" y1="{top}" x2="{left + offset}" y2="{top + size}" '
            f'stroke="{GRID_COLOUR}"/>'
            f'<line x1="{left}" y1="{top + size - offset}" x2="{left + size}" '
            f'y2="{top + size - offset}" stroke="{GRID_COLOUR}"/>'
            f'<text x="{left + offset}" y="{top + size + 14}" text-anchor="middle" {_FONT}>'
            f"{value}</text>"
            f'<text x="{left - 6}" y="{top + size - offset + 4}" text-anchor="end" {_FONT}>'
            f"{value}</text>"
        )
    parts.append(
        f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" '
        f'stroke="{AXIS_COLOUR}"/>'
        f'<text x="{left + size / 2}" y="{top + size + 30}" text-anchor="middle" {_FONT}>'
        f"{escape(x_label)}</text>"
        f'<text transform="translate({left - 34},{top + size / 2}) rotate(-90)" '
        f'text-anchor="middle" {_FONT}>{escape(y_label)}</text>'
    )
    return parts


def roc_plot(curves: Sequence[tuple[str, str, RocCurve, float | None]], title: str) -> str:
    """ROC curves, one per `(name, colour, curve, auroc)`, with the chance diagonal."""
    left, top, size = 50, 10, 240
    body = _frame(left, top, size, "false positive rate", "true positive rate")
    body.append(
        f'<line x1="{left}" y1="{top + size}" x2="{left + size}" y2="{top}" '
        f'stroke="{AXIS_COLOUR}" stroke-dasharray="4 4"/>'
    )
    for row, (name, colour, curve, area) in enumerate(curves):
        points = " ".join(
            f"{left + x * size:.1f},{top + (1 - y) * size:.1f}"
            for x, y in zip(curve.false_positive_rate, curve.true_positive_rate, strict=True)
        )
        body.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2.5"/>'
        )
        legend_y = top + size + 50 + 16 * row
        auc = "n/a" if area is None else f"{area:.3f}"
        body.append(
            f'<rect x="{left}" y="{legend_y - 9}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{left + 18}" y="{legend_y + 1}" {_FONT}>{escape(name)} '
            f"(AUROC {auc})</text>"
        )
    return _svg(left + size + 20, top + size + 50 + 16 * len(curves), body, title)


def _heat(share: float) -> str:
    rgb = [round(lo + (hi - lo) * share) for lo, hi in zip(HEAT_LOW, HEAT_HIGH, strict=True)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def confusion_plot(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str) -> str:
    """A heatmap of counts, gold labels as rows and predictions as columns; shade = row share."""
    cell, left, top = 64, 96, 40
    body = [
        f'<text x="{left + cell * len(labels) / 2}" y="14" text-anchor="middle" {_FONT}>'
        "predicted</text>"
    ]
    for column, label in enumerate(labels):
        body.append(
            f'<text x="{left + cell * column + cell / 2}" y="{top - 8}" text-anchor="middle" '
            f"{_FONT}>{escape(label)}</text>"
        )
    for row, (label, counts) in enumerate(zip(labels, matrix, strict=True)):
        total = sum(counts) or 1
        y = top + cell * row
        body.append(
            f'<text x="{left - 6}" y="{y + cell / 2 + 4}" text-anchor="end" {_FONT}>'
            f"gold {escape(label)}</text>"
        )
        for column, count in enumerate(counts):
            share = count / total
            ink = "#ffffff" if share > 0.5 else "#000000"
            x = left + cell * column
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{_heat(share)}" '
                f'stroke="#ffffff"/><text x="{x + cell / 2}" y="{y + cell / 2 + 4}" '
                f'text-anchor="middle" fill="{ink}" {_FONT}>{count}</text>'
            )
    size = len(labels) * cell
    return _svg(left + size + 10, top + size + 10, body, title)


def histogram_plot(supported: Sequence[int], unsupported: Sequence[int], title: str) -> str:
    """Support-score histograms of gold-supported and gold-unsupported claims, side by side
    in each bin; bar heights are shares of their class so classes of unequal size compare."""
    left, top, width, height = 50, 10, 300, 160
    bins = len(supported)
    body = _frame_histogram(left, top, width, height)
    bar = width / bins / 2
    shares = [
        [count / (sum(counts) or 1) for count in counts] for counts in (supported, unsupported)
    ]
    peak = max(max(class_shares, default=0.0) for class_shares in shares) or 1.0
    for shift, (class_shares, colour) in enumerate(
        zip(shares, (SUPPORTED_COLOUR, UNSUPPORTED_COLOUR), strict=True)
    ):
        for index, share in enumerate(class_shares):
            if not share:
                continue
            h = height * share / peak
            x = left + index * 2 * bar + shift * bar
            body.append(
                f'<rect x="{x:.1f}" y="{top + height - h:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}" fill="{colour}"/>'
            )
    for row, (name, colour) in enumerate(
        (("gold supported", SUPPORTED_COLOUR), ("gold unsupported", UNSUPPORTED_COLOUR))
    ):
        x = left + 150 * row
        body.append(
            f'<rect x="{x}" y="{top + height + 36}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{x + 18}" y="{top + height + 46}" {_FONT}>{name}</text>'
        )
    return _svg(left + width + 20, top + height + 56, body, title)


def _frame_histogram(left: int, top: int, width: int, height: int) -> list[str]:
    parts = [
        f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" '
        f'stroke="{AXIS_COLOUR}"/>'
    ]
    for step in range(6):
        x = left + width * step / 5
        parts.append(
            f'<text x="{x}" y="{top + height + 14}" text-anchor="middle" {_FONT}>'
            f"{step / 5:.1f}</text>"
        )
    parts.append(
        f'<text x="{left + width / 2}" y="{top + height + 28}" text-anchor="middle" {_FONT}>'
        "support score P(Entailment)</text>"
    )
    return parts
