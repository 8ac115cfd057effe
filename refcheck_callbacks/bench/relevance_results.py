"""What `refcheck bench --dataset relevance` reports (`bench.relevance_bench`): how well the
relevance head ranks references and claims, and what the cause rule says on probes whose
cause is known. Written into bench.json as `relevance`, drawn by `bench.relevance_report`."""

from __future__ import annotations

from pydantic import BaseModel


class RankingFigures(BaseModel):
    """One scorer ranking one split's candidate passages against their questions."""

    split: str
    """`wikiqa dev` or `trecqa DEV`."""
    scorer: str
    questions: int
    """Questions with at least one answer-bearing and one topical candidate (MAP's filter)."""
    pairs: int
    map: float | None
    mrr: float | None
    auroc: float | None
    """Pooled over the split's pairs: answer-bearing vs topical candidates of the same
    questions (RGB's negatives), each scored among its question's candidates."""
    auroc_alone: float | None
    """The same with each candidate scored alone: what the cause rule reads."""


class ClaimRelevanceFigures(BaseModel):
    """The diagnostics stage's claim relevance against ExpertQA's expert judgement of each
    claim's relevance to the question (`informativeness`)."""

    scorer: str
    claims: int
    relevant: int
    """Claims judged "Very relevant" or "A bit relevant"."""
    auroc: float | None
    """Of `Verdict.relevance` as the stage writes it."""
    auroc_question_only: float | None
    """Of the scorer's question-passage score of each claim, among its answer's claims."""


class ProbeFigures(BaseModel):
    """One probe (claims whose cause is known by construction) through one checker, the
    diagnostics stage using one relevance scorer."""

    probe: str
    source: str
    """The split or set the probe was built from."""
    checker: str
    scorer: str
    requests: int
    claims: int
    labels: dict[str, float]
    """Share of the claims per label (claims with no label: none of them)."""
    unsupported: int
    """Claims labelled Neutral or Contradiction."""
    causes: dict[str, float]
    """Share of the unsupported claims per cause."""
    figures: dict[str, float | None]
    """What the probe is about, by name: `label:NAME` (share of the claims with that label),
    `cause:NAME` (share of the claims with that cause), `unsupported:NAME` (share of the
    unsupported claims with that cause); None when no claim counts."""
    targets: dict[str, str]
    """What a right diagnosis gives for each figure, e.g. `>= 0.80`, `~0`, `low`."""


class RelevanceReport(BaseModel):
    limit: int
    """At most this many questions per split, answers of ExpertQA, items per set."""
    seed: int
    baseline_threshold: float | None
    """The baseline's cut, fitted for balanced accuracy on this run's QA pairs."""
    ranking: list[RankingFigures]
    claims: list[ClaimRelevanceFigures]
    probes: list[ProbeFigures]
    unavailable: dict[str, str]
    """Parts that could not be measured (data missing), and why."""
    seconds: float
