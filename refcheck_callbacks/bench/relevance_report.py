"""The relevance bench's figures (`bench.relevance_results`) as tables, in Markdown (bench.md,
the terminal) and HTML (bench.html): every scorer of a figure side by side in one row."""

from __future__ import annotations

from html import escape

from refcheck_callbacks.bench.relevance_results import ProbeFigures, RelevanceReport

Table = tuple[str, list[str], list[list[str]]]
"""A caption, the header, the rows (cells already formatted)."""


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell == "–"
    return True


def _scorers(report: RelevanceReport) -> list[str]:
    names = [f.scorer for f in report.ranking] + [f.scorer for f in report.claims]
    names += [f.scorer for f in report.probes]
    return list(dict.fromkeys(names))


def _ranking_table(report: RelevanceReport, scorers: list[str]) -> Table:
    metrics = (("MAP", "map"), ("MRR", "mrr"), ("AUROC", "auroc"), ("AUROC alone", "auroc_alone"))
    header = ["split", "questions", "pairs"]
    header += [f"{label} {scorer}" for label, _ in metrics for scorer in scorers]
    rows = []
    for split in dict.fromkeys(f.split for f in report.ranking):
        by_scorer = {f.scorer: f for f in report.ranking if f.split == split}
        first = next(iter(by_scorer.values()))
        row = [split, str(first.questions), str(first.pairs)]
        for _, field in metrics:
            row += [
                _number(getattr(by_scorer[s], field)) if s in by_scorer else "–" for s in scorers
            ]
        rows.append(row)
    caption = (
        "Reference relevance to the question (questions with an answering and a topical "
        "candidate; AUROC: answering vs topical candidates, pooled; alone: each candidate "
        "scored without the others, as the cause rule reads it)"
    )
    return caption, header, rows


def _claims_table(report: RelevanceReport, scorers: list[str]) -> Table:
    by_scorer = {f.scorer: f for f in report.claims}
    first = report.claims[0]
    metrics = [("AUROC", "auroc"), ("AUROC question only", "auroc_question_only")]
    header = ["set", "claims", "relevant"]
    header += [f"{label} {scorer}" for label, _ in metrics for scorer in scorers]
    row = ["expertqa", str(first.claims), str(first.relevant)]
    for _, field in metrics:
        row += [_number(getattr(by_scorer[s], field)) if s in by_scorer else "–" for s in scorers]
    caption = (
        "Claim relevance vs ExpertQA informativeness (relevant: Very relevant or A bit "
        "relevant; AUROC: Verdict.relevance as the diagnostics stage writes it; question only: "
        "the scorer's question-passage score of the claim; target >= 0.62)"
    )
    return caption, header, [row]


def _probe_key(figures: ProbeFigures) -> tuple[str, str, str]:
    return figures.probe, figures.source, figures.checker


def _probes_table(report: RelevanceReport, scorers: list[str]) -> Table:
    groups: dict[tuple[str, str, str], dict[str, ProbeFigures]] = {}
    for figures in report.probes:
        groups.setdefault(_probe_key(figures), {})[figures.scorer] = figures
    header = ["probe", "source", "checker", "claims", "figure", *scorers, "target"]
    rows = []
    for (probe, source, checker), by_scorer in groups.items():
        first = next(iter(by_scorer.values()))
        for name, target in first.targets.items():
            values = [
                _number(by_scorer[s].figures.get(name)) if s in by_scorer else "–" for s in scorers
            ]
            rows.append([probe, source, checker, str(first.claims), name, *values, target])
    caption = (
        "Cause probes (label: share of the claims; cause: share of the claims; unsupported: "
        "share of the unsupported claims)"
    )
    return caption, header, rows


def _details_table(report: RelevanceReport) -> Table:
    header = ["probe", "source", "checker", "relevance", "claims", "E", "N", "C", "unsupported"]
    header += ["retrieval_missed", "unsupported_by_relevant_context", "contradicted"]
    rows = [
        [
            f.probe,
            f.source,
            f.checker,
            f.scorer,
            str(f.claims),
            *(_number(f.labels.get(k)) for k in ("entailment", "neutral", "contradiction")),
            str(f.unsupported),
            *(
                _number(f.causes.get(k))
                for k in ("retrieval_missed", "unsupported_by_relevant_context", "contradicted")
            ),
        ]
        for f in report.probes
    ]
    caption = "Each probe's labels (share of the claims) and causes (share of the unsupported)"
    return caption, header, rows


def relevance_tables(report: RelevanceReport) -> list[Table]:
    scorers = _scorers(report)
    tables = []
    if report.ranking:
        tables.append(_ranking_table(report, scorers))
    if report.claims:
        tables.append(_claims_table(report, scorers))
    if report.probes:
        tables += [_probes_table(report, scorers), _details_table(report)]
    return tables


def _notes(report: RelevanceReport) -> list[str]:
    notes = [
        f"Relevance bench: at most {report.limit} items per part, seed {report.seed}, "
        f"{report.seconds:.0f} s; baseline cut {_number(report.baseline_threshold)} (fitted "
        "for balanced accuracy on these QA pairs)."
    ]
    notes += [f"Not measured: {name}: {reason}" for name, reason in report.unavailable.items()]
    return notes


def relevance_markdown(report: RelevanceReport) -> list[str]:
    lines = [*_notes(report), ""]
    for caption, header, rows in relevance_tables(report):
        lines += [f"{caption}:", "", "| " + " | ".join(header) + " |"]
        first = rows[0] if rows else header
        lines.append("|" + "|".join("---:" if _numeric(c) else "---" for c in first) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    return lines


def relevance_html(report: RelevanceReport) -> str:
    parts = [f'<p class="note">{escape(note)}</p>' for note in _notes(report)]
    for caption, header, rows in relevance_tables(report):
        head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
        )
        parts.append(f"<table><caption>{escape(caption)}</caption><tr>{head}</tr>{body}</table>")
    return f'<section id="relevance"><h2>Relevance and causes</h2>{"".join(parts)}</section>'
