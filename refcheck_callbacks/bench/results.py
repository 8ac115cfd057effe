"""What `refcheck bench` reports: the scores of each checker on each labelled set.

Pydantic models, written as bench.json by the runner (`bench.runner`) and drawn by the report
(`bench.report`); neither needs the other.
"""

from __future__ import annotations

from pydantic import BaseModel

from refcheck_callbacks.bench.contradictions import ContradictionScores
from refcheck_callbacks.bench.metrics import LabelScores, RocCurve
from refcheck_callbacks.bench.relevance_results import RelevanceReport

HISTOGRAM_BINS = 20


class ThreeWayScores(BaseModel):
    labels: list[str]
    """Labels present in the gold or predicted labels, in E / N / C order (as scikit-learn)."""
    examples: int
    accuracy: float
    macro_f1: float
    per_label: dict[str, LabelScores]
    confusion: list[list[int]]
    """Gold rows by predicted columns, in `labels` order."""


class BinaryScores(BaseModel):
    examples: int
    supported: int
    balanced_accuracy: float
    accuracy: float
    auroc: float | None
    confusion: list[list[int]]
    """Rows gold [supported, unsupported], columns predicted the same."""
    roc: RocCurve | None
    histogram_supported: list[int]
    """Support scores of gold-supported claims in HISTOGRAM_BINS bins over [0, 1]."""
    histogram_unsupported: list[int]
    predicted_labels: dict[str, dict[str, int]] = {}
    """`supported` / `unsupported` (gold) -> predicted label -> claims: the per-label rates a
    traffic simulation draws from (`benchmarks/alert_sim.py`). Empty in reports made before
    it existed."""


class ResponseScores(BaseModel):
    """Correlation of the hallucination rate per response, predicted vs gold."""

    responses: int
    pearson: float | None
    spearman: float | None


class RateScores(BaseModel):
    """The hallucination rate of a set's traffic: true, raw and estimated (90% interval)."""

    audit_labels: int
    claims: int
    true: float
    raw: float | None
    adjusted: float | None
    low: float | None
    high: float | None


class CheckerScores(BaseModel):
    checker: str
    examples: int
    failed: int
    seconds: float
    claims_per_second: float
    three_way: ThreeWayScores | None = None
    binary: BinaryScores | None = None
    response_level: ResponseScores | None = None
    contradiction: ContradictionScores | None = None
    rates: RateScores | None = None
    """The estimated hallucination rate from a 200-label audit (`bench.rate_scores`)."""


class DatasetResult(BaseModel):
    dataset: str
    examples: int
    checkers: list[CheckerScores]


class BenchReport(BaseModel):
    created_at: str
    version: str
    data_dir: str
    limit: int | None
    datasets: list[DatasetResult]
    unavailable: dict[str, str]
    """Datasets that could not be loaded, and why."""
    relevance: RelevanceReport | None = None
    """The relevance bench (`--dataset relevance`, `bench.relevance_bench`); None when it
    was not asked for."""
