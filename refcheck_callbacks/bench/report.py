"""The bench report as one self-contained HTML page: tables and inline SVG, no scripts, no
external files, so it opens offline and can be attached to a ticket or a pull request."""

from __future__ import annotations

from html import escape

from refcheck_callbacks.bench.plots import checker_colour, confusion_plot, histogram_plot, roc_plot
from refcheck_callbacks.bench.relevance_report import relevance_html, relevance_markdown
from refcheck_callbacks.bench.results import BenchReport, CheckerScores, DatasetResult

_STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #ffffff; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; } figcaption { font-size: 12px; color: #555; }
.note { color: #555; font-size: 13px; }
"""


def _number(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


_HEADLINE = (
    "accuracy (3-way)",
    "macro-F1 (3-way)",
    "balanced acc.",
    "AUROC",
    "false C rate",
    "C precision",
    "halluc. floor",
    "C recall",
    "Pearson (resp.)",
    "Spearman (resp.)",
)
"""The summary tables' number columns (false C rate: gold-supported claims labelled
Contradiction; halluc. floor: gold-supported claims labelled Neutral or Contradiction;
`bench.contradictions`)."""


def _headline(scores: CheckerScores) -> list[float | None]:
    """The numbers of the summary tables, in `_HEADLINE` order."""
    three, binary, response = scores.three_way, scores.binary, scores.response_level
    contradiction = scores.contradiction
    return [
        three.accuracy if three else None,
        three.macro_f1 if three else None,
        binary.balanced_accuracy if binary else None,
        binary.auroc if binary else None,
        contradiction.false_contradiction_rate if contradiction else None,
        contradiction.contradiction_precision if contradiction else None,
        contradiction.hallucination_floor if contradiction else None,
        contradiction.contradiction_recall if contradiction else None,
        response.pearson if response else None,
        response.spearman if response else None,
    ]


def _summary_table(result: DatasetResult) -> str:
    head = (
        "<tr><th>checker</th><th>claims</th><th>failed</th><th>claims/s</th>"
        + "".join(f"<th>{escape(name)}</th>" for name in _HEADLINE)
        + "</tr>"
    )
    rows = []
    for scores in result.checkers:
        cells = _headline(scores)
        rows.append(
            f"<tr><td>{escape(scores.checker)}</td><td>{scores.examples}</td>"
            f"<td>{scores.failed}</td><td>{scores.claims_per_second:.1f}</td>"
            + "".join(f"<td>{_number(value)}</td>" for value in cells)
            + "</tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


def _per_label_table(scores: CheckerScores) -> str:
    if scores.three_way is None:
        return ""
    rows = "".join(
        f"<tr><td>{escape(label)}</td><td>{s.precision:.3f}</td><td>{s.recall:.3f}</td>"
        f"<td>{s.f1:.3f}</td><td>{s.support}</td></tr>"
        for label, s in scores.three_way.per_label.items()
    )
    return (
        f"<table><caption>{escape(scores.checker)}: per label (3-way)</caption>"
        "<tr><th>label</th><th>precision</th><th>recall</th><th>F1</th><th>gold</th></tr>"
        f"{rows}</table>"
    )


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def _plots(result: DatasetResult) -> str:
    figures = []
    curves = [
        (s.checker, checker_colour(i), s.binary.roc, s.binary.auroc)
        for i, s in enumerate(result.checkers)
        if s.binary is not None and s.binary.roc is not None
    ]
    if curves:
        figures.append(
            _figure(roc_plot(curves, f"{result.dataset} ROC"), "ROC of the support score")
        )
    for scores in result.checkers:
        name = scores.checker
        if scores.three_way is not None:
            svg = confusion_plot(
                scores.three_way.confusion, scores.three_way.labels, f"{result.dataset} {name}"
            )
            figures.append(_figure(svg, f"{name}: 3-way confusion (counts)"))
        if scores.binary is not None:
            binary = scores.binary
            svg = confusion_plot(
                binary.confusion, ["supported", "unsupported"], f"{result.dataset} {name}"
            )
            figures.append(_figure(svg, f"{name}: supported vs not (counts)"))
            svg = histogram_plot(
                binary.histogram_supported, binary.histogram_unsupported, f"{name} scores"
            )
            figures.append(_figure(svg, f"{name}: support score by gold class (share per bin)"))
    return f'<div class="plots">{"".join(figures)}</div>'


def _dataset_section(result: DatasetResult) -> str:
    tables = "".join(_per_label_table(scores) for scores in result.checkers)
    return (
        f'<section id="{escape(result.dataset)}"><h2>{escape(result.dataset)}</h2>'
        f'<p class="note">{result.examples} labelled claims.</p>'
        f"{_summary_table(result)}{tables}{_plots(result)}</section>"
    )


def _rates_lines(report: BenchReport) -> list[str]:
    """The estimated hallucination rate per (dataset, checker) (`bench.rate_scores`)."""
    lines = [
        "",
        "Hallucination rate of each set's other claims, estimated from a 200-label audit "
        "(docs/rates.md):",
        "",
        "| dataset | checker | audit labels | claims | true rate | raw | estimated "
        "| 90% interval |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for result in report.datasets:
        for scores in result.checkers:
            rates = scores.rates
            if rates is not None:
                lines.append(
                    f"| {result.dataset} | {scores.checker} | {rates.audit_labels} | "
                    f"{rates.claims} | {rates.true:.3f} | {_number(rates.raw)} | "
                    f"{_number(rates.adjusted)} | [{_number(rates.low)}, {_number(rates.high)}] |"
                )
    return lines if len(lines) > 5 else []


def render_markdown(report: BenchReport) -> str:
    """The summary table as Markdown, one row per (dataset, checker), for docs and PRs; then
    the estimated hallucination rates; then the relevance bench's tables, when it ran."""
    lines = [
        "| dataset | checker | claims | failed | " + " | ".join(_HEADLINE) + " | claims/s |",
        "|---|---|---:|---:|" + "---:|" * len(_HEADLINE) + "---:|",
    ]
    for result in report.datasets:
        for scores in result.checkers:
            cells = " | ".join(_number(value) for value in _headline(scores))
            lines.append(
                f"| {result.dataset} | {scores.checker} | {scores.examples} | {scores.failed} "
                f"| {cells} | {scores.claims_per_second:.1f} |"
            )
    if not report.datasets:
        lines = []
    lines += _rates_lines(report)
    if report.relevance is not None:
        lines += ([""] if lines else []) + relevance_markdown(report.relevance)
    return "\n".join(lines).rstrip("\n") + "\n"


def render_html(report: BenchReport) -> str:
    """The whole report page."""
    unavailable = "".join(
        f"<li><b>{escape(name)}</b>: {escape(reason)}</li>"
        for name, reason in report.unavailable.items()
    )
    sections = "".join(_dataset_section(result) for result in report.datasets)
    limit = "all examples" if report.limit is None else f"about {report.limit} per dataset"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>refcheck bench</title>"
        f"<style>{_STYLE}</style></head><body><h1>refcheck bench</h1>"
        f'<p class="note">refcheck-callbacks {escape(report.version)}, {escape(report.created_at)};'
        f" data: {escape(report.data_dir)}; {limit}. Support score = the checker's P(Entailment);"
        " binary scores treat Entailment as supported. False C rate: gold-supported claims labelled"
        " Contradiction; C precision: Contradiction labels on claims gold calls not supported;"
        " halluc. floor: gold-supported claims labelled Neutral or Contradiction; C recall: gold"
        " Contradiction claims labelled Contradiction. Response-level correlations compare the"
        " share of unsupported claims per response (responses with two or more claims).</p>"
        + (f"<h2>Not loaded</h2><ul>{unavailable}</ul>" if unavailable else "")
        + sections
        + ("" if report.relevance is None else relevance_html(report.relevance))
        + "</body></html>"
    )
