"""What a prevalence estimate needs from a random audit: the checker's flag rates per class.

A checker's raw flag share is biased by its error rates, differently in every domain. Given the
share `q` of claims a checker flags in some traffic, and its flag rates measured on a uniform
random audit of labelled claims (TPR: flagged given the rate's kind, FPR: flagged given not),
the traffic's true share is estimated by the adjusted count `(q - FPR) / (TPR - FPR)`.

This module is the contract between `refcheck calibrate` (which fits a `RateFit` per rate from
audit labels), the monitor (which counts flags by `flags` and exports the fit as gauges, so
recording rules can adjust over any window), and `refcheck rates` (which estimates from a
checked file). The estimator itself lives beside it.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from refcheck_callbacks.types import Label, Verdict


class RateName(str, Enum):
    """The two rates a dashboard shows: a claim is of the hallucination rate's kind when it is
    not supported (Neutral or Contradiction), of the contradiction rate's when it is
    contradicted."""

    HALLUCINATION = "hallucination"
    CONTRADICTION = "contradiction"


class SweepPoint(BaseModel):
    """The audit's flag counts for one support threshold of the median sweep: a claim counts
    as flagged there when its P(entailment) is below `threshold`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(ge=0.0, le=1.0)
    flagged_positives: int = Field(ge=0)
    flagged_negatives: int = Field(ge=0)


class RateFit(BaseModel):
    """A checker's flag counts on audit labels, for one rate. `positives` are labelled claims of
    the rate's kind (unsupported, or contradicted), `negatives` the rest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    positives: int = Field(ge=0)
    negatives: int = Field(ge=0)
    flagged_positives: int = Field(ge=0)
    flagged_negatives: int = Field(ge=0)
    positive_design_effect: float = Field(default=1.0, ge=1.0)
    """How much more the flag rate of positives varies than if its claims were independent
    (claims of one audited answer are flagged together: `clusters.design_effect`); 1 where
    each answer gave one label. Read by `refcheck rates`, not by the closed form."""
    negative_design_effect: float = Field(default=1.0, ge=1.0)
    """The same for the negatives."""
    sweep: tuple[SweepPoint, ...] = ()
    """Flag counts at other support thresholds, for the median sweep `refcheck rates` prints
    (`sweep.median_sweep`); empty for the contradiction rate, which has none."""

    @property
    def labels(self) -> int:
        return self.positives + self.negatives

    @property
    def true_positive_rate(self) -> float | None:
        return self.flagged_positives / self.positives if self.positives else None

    @property
    def false_positive_rate(self) -> float | None:
        return self.flagged_negatives / self.negatives if self.negatives else None


def flags(rate: RateName, verdict: Verdict) -> bool:
    """Whether a checked claim counts as flagged for `rate`, as the pipeline labelled it (after
    any calibration points). A failed claim (no label) is never flagged; callers leave it out
    of the claim count too."""
    if verdict.label is None:
        return False
    if rate is RateName.HALLUCINATION:
        return verdict.label is not Label.ENTAILMENT
    return verdict.label is Label.CONTRADICTION


MIN_AUDIT_LABELS = 200
"""The audit labels a rate is marked uncalibrated below, when a class is still missing
(docs/rates.md: what 200 labels buy)."""


def labels_needed(fit: RateFit | None) -> int:
    """How many more audit labels the rate needs before it can be estimated: none once both
    classes are labelled, else what is left to `MIN_AUDIT_LABELS` (at least 1)."""
    if fit is not None and fit.positives and fit.negatives:
        return 0
    return max(MIN_AUDIT_LABELS - (fit.labels if fit is not None else 0), 1)
