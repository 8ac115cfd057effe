"""`refcheck bench`: run checkers on labelled sets, score them, write JSON and HTML.

Every claim goes through the same `Pipeline` the monitor uses (claims given, so no
extraction): a checker is measured exactly as it runs in production, failures included. A
claim the checker fails on is counted as failed and left out of the scores.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from refcheck_callbacks import __version__
from refcheck_callbacks.bench import metrics
from refcheck_callbacks.bench.checking import check_examples, subsample
from refcheck_callbacks.bench.contradictions import contradiction_scores
from refcheck_callbacks.bench.data_dir import data_dir
from refcheck_callbacks.bench.datasets import (
    DATASET_NAMES,
    RELEVANCE,
    LabelledExample,
    gold_supported,
    load_dataset,
)
from refcheck_callbacks.bench.labelled_file import PREFIX as FILE_PREFIX
from refcheck_callbacks.bench.labelled_file import load_labelled_file
from refcheck_callbacks.bench.planted_edits import ANY_PREFIX as PLANTED_ANY_PREFIX
from refcheck_callbacks.bench.planted_edits import PREFIX as PLANTED_PREFIX
from refcheck_callbacks.bench.planted_edits import planted_examples
from refcheck_callbacks.bench.rate_scores import rate_scores
from refcheck_callbacks.bench.relevance_results import RelevanceReport
from refcheck_callbacks.bench.report import render_html, render_markdown
from refcheck_callbacks.bench.results import (
    HISTOGRAM_BINS,
    BenchReport,
    BinaryScores,
    CheckerScores,
    DatasetResult,
    ResponseScores,
    ThreeWayScores,
)
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.contract.registry import ConflictSource
from refcheck_callbacks.engine.pipeline import DEFAULT_CONFLICT
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Label, Verdict

_LABEL_ORDER = (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION)


@dataclass
class BenchOptions:
    datasets: Sequence[str]
    path: Path | None = None
    limit: int | None = None
    output_dir: Path = Path("bench-results")
    batch_size: int = 64
    progress: bool = True
    seed: int = 0
    conflict: ConflictSource = DEFAULT_CONFLICT
    """The conflict stage the checkers' verdicts go through (`contract.registry`)."""


@dataclass
class BenchOutcome:
    report: BenchReport
    json_path: Path
    html_path: Path
    results: list[DatasetResult] = field(default_factory=list)


def support_score(verdict: Verdict) -> float:
    """P(Entailment) when the checker gives probabilities, else derived from its confidence."""
    if verdict.probabilities is not None and Label.ENTAILMENT in verdict.probabilities:
        return verdict.probabilities[Label.ENTAILMENT]
    return verdict.confidence if verdict.label is Label.ENTAILMENT else 1.0 - verdict.confidence


def _three_way(pairs: list[tuple[LabelledExample, Verdict]]) -> ThreeWayScores | None:
    labelled = [(e.label, v.label) for e, v in pairs if e.label is not None and v.label is not None]
    if not labelled or len({g for g, _ in labelled}) < 2:
        return None
    gold = [g for g, _ in labelled]
    predicted = [p for _, p in labelled]
    present = set(gold) | set(predicted)
    labels = [label for label in _LABEL_ORDER if label in present]
    return ThreeWayScores(
        labels=[label.value for label in labels],
        examples=len(gold),
        accuracy=metrics.accuracy(gold, predicted),
        macro_f1=metrics.macro_f1(gold, predicted, labels),
        per_label={
            label.value: scores
            for label, scores in metrics.per_label_scores(gold, predicted, labels).items()
        },
        confusion=metrics.confusion_matrix(gold, predicted, labels),
    )


def _binary(pairs: list[tuple[LabelledExample, Verdict]]) -> BinaryScores | None:
    rows = [(gold_supported(e), v) for e, v in pairs]
    known = [(g, v) for g, v in rows if g is not None]
    if not known:
        return None
    gold = [g for g, _ in known]
    predicted = [v.label is Label.ENTAILMENT for _, v in known]
    scores = [support_score(v) for _, v in known]
    return BinaryScores(
        examples=len(gold),
        supported=sum(gold),
        balanced_accuracy=metrics.balanced_accuracy(gold, predicted),
        accuracy=metrics.accuracy(gold, predicted),
        auroc=metrics.auroc(gold, scores),
        confusion=metrics.confusion_matrix(gold, predicted, [True, False]),
        roc=metrics.roc_curve(gold, scores),
        histogram_supported=metrics.histogram(
            [s for s, g in zip(scores, gold, strict=True) if g], HISTOGRAM_BINS
        ),
        histogram_unsupported=metrics.histogram(
            [s for s, g in zip(scores, gold, strict=True) if not g], HISTOGRAM_BINS
        ),
        predicted_labels=_predicted_labels(known),
    )


def _predicted_labels(known: list[tuple[bool, Verdict]]) -> dict[str, dict[str, int]]:
    counts = {
        gold: {label.value: 0 for label in _LABEL_ORDER} for gold in ("supported", "unsupported")
    }
    for supported, verdict in known:
        if verdict.label is not None:
            counts["supported" if supported else "unsupported"][verdict.label.value] += 1
    return counts


def _response_level(pairs: list[tuple[LabelledExample, Verdict]]) -> ResponseScores | None:
    """Hallucination rate per response (share of claims not supported), for responses with
    at least two checked claims; a single claim's rate is just its binary label."""
    by_response: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for example, verdict in pairs:
        gold = gold_supported(example)
        if example.response_id is not None and gold is not None:
            by_response[example.response_id].append((gold, verdict.label is Label.ENTAILMENT))
    claims = [c for c in by_response.values() if len(c) >= 2]
    if len(claims) < 2:
        return None
    gold_rate = [sum(not g for g, _ in c) / len(c) for c in claims]
    predicted_rate = [sum(not p for _, p in c) / len(c) for c in claims]
    return ResponseScores(
        responses=len(claims),
        pearson=metrics.pearson(predicted_rate, gold_rate),
        spearman=metrics.spearman(predicted_rate, gold_rate),
    )


def score(
    name: str,
    examples: Sequence[LabelledExample],
    verdicts: Sequence[Verdict | None],
    seconds: float,
) -> CheckerScores:
    pairs = [(e, v) for e, v in zip(examples, verdicts, strict=True) if v is not None]
    return CheckerScores(
        checker=name,
        examples=len(examples),
        failed=len(examples) - len(pairs),
        seconds=seconds,
        claims_per_second=len(examples) / seconds if seconds > 0 else 0.0,
        three_way=_three_way(pairs),
        binary=_binary(pairs),
        response_level=_response_level(pairs),
        contradiction=contradiction_scores(pairs, [gold_supported(e) for e, _ in pairs]),
        rates=rate_scores(pairs),
    )


def _dataset_names(requested: Sequence[str]) -> list[str]:
    # `all` also names the set that cannot be checked, so the report says why it is missing.
    every = [*DATASET_NAMES, "refchecker_annotations"] if "all" in requested else []
    expanded = {"all", RELEVANCE}  # the relevance bench is not a claim set: run apart
    for prefix in (PLANTED_PREFIX, PLANTED_ANY_PREFIX):
        if f"{prefix}all" in requested:
            every += [f"{prefix}{name}" for name in DATASET_NAMES]
        expanded.add(f"{prefix}all")
    return list(dict.fromkeys([*every, *(name for name in requested if name not in expanded)]))


def _load_one(name: str, options: BenchOptions) -> tuple[str, list[LabelledExample]]:
    if name.startswith(FILE_PREFIX):
        path = Path(name.removeprefix(FILE_PREFIX))
        return path.stem, load_labelled_file(path)
    for prefix, in_context in ((PLANTED_PREFIX, True), (PLANTED_ANY_PREFIX, False)):
        if name.startswith(prefix):
            source = load_dataset(name.removeprefix(prefix), options.path)
            return name, planted_examples(source, in_context)
    return name, load_dataset(name, options.path)


def load_sets(
    options: BenchOptions, unavailable: dict[str, str]
) -> dict[str, list[LabelledExample]]:
    """The requested sets that load, subsampled to `options.limit`; the others go in
    `unavailable` with the reason (and a line on stderr)."""
    loaded = {}
    for name in _dataset_names(options.datasets):
        try:
            label, examples = _load_one(name, options)
        except (OSError, ValueError, KeyError) as exc:
            unavailable[name] = f"{type(exc).__name__}: {exc}"
            print(f"refcheck: dataset {name} skipped: {exc}", file=sys.stderr)
            continue
        if options.limit is not None:
            examples = subsample(examples, options.limit, options.seed)
        loaded[label] = examples
    return loaded


def prediction_rows(
    checker: str, examples: Sequence[LabelledExample], verdicts: Sequence[Verdict | None]
) -> Iterator[dict[str, object]]:
    """One row per example for error analysis: gold beside what the checker said."""
    for example, verdict in zip(examples, verdicts, strict=True):
        yield {
            "dataset": example.dataset,
            "example_id": example.example_id,
            "response_id": example.response_id,
            "checker": checker,
            "gold_label": None if example.label is None else example.label.value,
            "gold_supported": gold_supported(example),
            "label": None if verdict is None or verdict.label is None else verdict.label.value,
            "support_score": None if verdict is None else support_score(verdict),
        }


async def _score_all(
    options: BenchOptions,
    checkers: dict[str, Checker],
    loaded: dict[str, list[LabelledExample]],
    predictions: TextIO,
) -> tuple[list[DatasetResult], RelevanceReport | None]:
    """Every checker on every loaded set; then the relevance bench, when asked for."""
    results = []
    for name, examples in loaded.items():
        scored = []
        for spec, checker in checkers.items():
            progress = Progress(len(examples), f"{name} / {spec}", enabled=options.progress)
            started = time.perf_counter()
            verdicts = await check_examples(
                checker, examples, options.batch_size, progress, options.conflict
            )
            progress.close()
            scored.append(score(spec, examples, verdicts, time.perf_counter() - started))
            for row in prediction_rows(spec, examples, verdicts):
                predictions.write(json.dumps(row, ensure_ascii=False) + "\n")
        results.append(DatasetResult(dataset=name, examples=len(examples), checkers=scored))
    if RELEVANCE not in options.datasets:
        return results, None
    from refcheck_callbacks.bench.relevance_bench import relevance_report

    relevance = await relevance_report(
        checkers, options.limit, options.seed, options.path, options.conflict, options.progress
    )
    return results, relevance


def run_bench(options: BenchOptions, checkers: dict[str, Checker]) -> BenchOutcome:
    """Score every checker on every dataset that loads, and run the relevance bench when
    `relevance` is among the datasets; write bench.json, bench.html, bench.md and
    predictions.jsonl (every example's gold and predicted label)."""
    unavailable: dict[str, str] = {}
    options.output_dir.mkdir(parents=True, exist_ok=True)
    loaded = load_sets(options, unavailable)
    with (options.output_dir / "predictions.jsonl").open("w", encoding="utf-8") as predictions:
        # One event loop for the whole run: async checkers (LLM clients) may keep
        # connections that belong to the loop they were first used on.
        results, relevance = asyncio.run(_score_all(options, checkers, loaded, predictions))
    report = BenchReport(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        version=__version__,
        data_dir=str(options.path or data_dir()),
        limit=options.limit,
        datasets=results,
        unavailable=unavailable,
        relevance=relevance,
    )
    json_path = options.output_dir / "bench.json"
    html_path = options.output_dir / "bench.html"
    json_path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    html_path.write_text(render_html(report), encoding="utf-8")
    (options.output_dir / "bench.md").write_text(render_markdown(report), encoding="utf-8")
    return BenchOutcome(report, json_path, html_path, results)
