"""`refcheck bench --dataset relevance` end to end on a few questions and items of the shared
data: the report's shape, and figures that behave as the probes are built to make them."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from required import skip_or_fail

from refcheck_callbacks.bench.datasets import DATASET_NAMES
from refcheck_callbacks.bench.relevance_baseline import BASELINE_NAME
from refcheck_callbacks.bench.relevance_bench import HEAD_NAME
from refcheck_callbacks.bench.relevance_results import ProbeFigures, RelevanceReport
from refcheck_callbacks.bench.results import BenchReport
from refcheck_callbacks.cli.main import main

LIMIT = 6
SCORERS = [HEAD_NAME, BASELINE_NAME]

pytestmark = [pytest.mark.slow, pytest.mark.labelled_data]


@pytest.fixture(scope="module")
def run(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[RelevanceReport, str, Path]:
    """The command's report, what it printed, and its output folder."""
    absent = [name for name in ("wikiqa", "trecqa") if not (shared_data / name).is_dir()]
    if absent:
        skip_or_fail(f"{', '.join(absent)} not in {shared_data}")
    out = tmp_path_factory.mktemp("relevance")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main(
            ["bench", "--dataset", "relevance", "--path", str(shared_data), "--limit", str(LIMIT),
             "--output-dir", str(out), "--no-progress"]
        )  # fmt: skip
    assert status == 0
    report = BenchReport.model_validate_json((out / "bench.json").read_text(encoding="utf-8"))
    assert report.datasets == [] and report.relevance is not None
    return report.relevance, stdout.getvalue(), out


def _probes(report: RelevanceReport, name: str, scorer: str = HEAD_NAME) -> list[ProbeFigures]:
    return [p for p in report.probes if p.probe == name and p.scorer == scorer]


def _pooled_label(probes: list[ProbeFigures], label: str) -> float:
    claims = sum(p.claims for p in probes)
    return sum(p.labels[label] * p.claims for p in probes) / claims


def _pooled_cause(probes: list[ProbeFigures], cause: str) -> float:
    unsupported = sum(p.unsupported for p in probes)
    return sum(p.causes[cause] * p.unsupported for p in probes) / unsupported


def test_reference_relevance_is_reported_per_split_for_both_scorers(
    run: tuple[RelevanceReport, str, Path],
) -> None:
    report = run[0]
    assert [(f.split, f.scorer) for f in report.ranking] == [
        (split, scorer) for split in ("wikiqa dev", "trecqa DEV") for scorer in SCORERS
    ]
    for figures in report.ranking:
        assert figures.questions == LIMIT and figures.pairs > figures.questions
        for value in (figures.map, figures.mrr, figures.auroc, figures.auroc_alone):
            assert value is not None and 0.0 < value <= 1.0
    for head, baseline in zip(report.ranking[0::2], report.ranking[1::2], strict=True):
        assert baseline.auroc == baseline.auroc_alone  # a cosine has no context
        assert head.pairs == baseline.pairs
    assert report.baseline_threshold is not None and 0.0 < report.baseline_threshold < 1.0


def test_claim_relevance_is_scored_against_the_informativeness_ratings(
    run: tuple[RelevanceReport, str, Path],
) -> None:
    report = run[0]
    assert [f.scorer for f in report.claims] == SCORERS
    for figures in report.claims:
        assert 0 < figures.relevant < figures.claims
        assert figures.auroc is not None and 0.0 <= figures.auroc <= 1.0
        assert figures.auroc_question_only is not None


def test_every_probe_is_run_with_both_scorers_and_its_shares_add_up(
    run: tuple[RelevanceReport, str, Path],
) -> None:
    report = run[0]
    names = {p.probe for p in report.probes}
    assert names == {
        "right vs topical", "right vs positives", "wrong vs positives",
        "right vs counterfactual", "swapped references", "planted edit", "inconsistent summary",
    }  # fmt: skip
    assert {p.source for p in _probes(report, "swapped references")} == set(DATASET_NAMES)
    for probe in report.probes:
        assert probe.checker == "embedded" and probe.scorer in SCORERS
        assert set(probe.figures) == set(probe.targets)
        if probe.claims:
            assert sum(probe.labels.values()) == pytest.approx(1.0, abs=1e-3)
        if probe.unsupported:
            assert sum(probe.causes.values()) <= 1.0 + 1e-3
    for head, baseline in zip(report.probes[0::2], report.probes[1::2], strict=True):
        # The same verdicts, diagnosed twice: labels do not depend on relevance.
        assert (head.scorer, baseline.scorer) == (HEAD_NAME, BASELINE_NAME)
        assert (head.probe, head.source) == (baseline.probe, baseline.source)
        assert head.labels == baseline.labels and head.claims == baseline.claims


def test_the_probes_behave_as_they_are_built_to(run: tuple[RelevanceReport, str, Path]) -> None:
    report = run[0]
    positives = _probes(report, "right vs positives")
    topical = _probes(report, "right vs topical")
    assert _pooled_label(positives, "entailment") > _pooled_label(topical, "entailment")
    swapped = _probes(report, "swapped references")
    assert _pooled_label(swapped, "entailment") < 0.5  # another item's references: unsupported
    planted = _probes(report, "planted edit") + _probes(report, "inconsistent summary")
    # A wrong claim against its own document: the context is relevant, retrieval did not miss.
    assert _pooled_cause(planted, "retrieval_missed") < _pooled_cause(swapped, "retrieval_missed")
    wrong = _probes(report, "wrong vs positives") + _probes(report, "right vs counterfactual")
    assert _pooled_label(wrong, "contradiction") > _pooled_label(positives, "contradiction")


def test_the_tables_are_printed_and_written(run: tuple[RelevanceReport, str, Path]) -> None:
    report, printed, out = run
    markdown = (out / "bench.md").read_text(encoding="utf-8")
    for text in (printed, markdown):
        assert "| split | questions | pairs | MAP head | MAP static cosine |" in text
        assert "| right vs topical | wikiqa dev | embedded |" in text
        assert "expertqa" in text
    assert 'id="relevance"' in (out / "bench.html").read_text(encoding="utf-8")
    written = json.loads((out / "bench.json").read_text(encoding="utf-8"))["relevance"]
    assert written["limit"] == LIMIT and len(written["probes"]) == len(report.probes)
