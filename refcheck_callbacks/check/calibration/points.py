"""The decision points a calibration sets, and the label a verdict gets under them.

Three points, each read from what every checker's verdict already carries after the conflict
stage, so one rule serves every checker family:

- `support_threshold`: P(entailment) at or above which a claim is Entailment (the embedded
  checker's trained threshold, 0.5 for a checker that declares none);
- `keep_vetoes`: whether a claim the checker left Neutral above its own threshold stays so
  (the embedded checker's contradiction head vetoes support where it outweighs both others);
- `min_contradiction`: P(contradiction) a conflict's Contradiction needs to stay one;
- `conflict_kinds`: the kinds of conflict (`types.ConflictKind`) that count as Contradiction
  for this app: a domain where figures are quoted loosely can drop `value` and keep `entity`.

A Contradiction the points do not accept is Neutral: the claim stays unsupported (the
conflict the stage found still speaks against it), only not a contradiction an alert pages
on. The two decisions stay apart: the threshold moves balanced accuracy (supported or not),
the conflict points move the false-contradiction rate. Any other verdict keeps its label unless
its P(entailment) lies between the checker's own threshold and the calibrated one (`relabel`):
the decision point moves, the rest of the checker's logic stays. P(entailment) is mapped so that
the calibrated threshold lands on 1/2 (`check.scores.at_half`, monotone), keeping the label's
probability the largest (a Contradiction's stays below 1/2 and under its conflict's cap). So a
support score's ranking (AUROC) is the same after calibration, but for Contradictions whose
P(entailment) passes a calibrated threshold below 1/2.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from refcheck_callbacks.check.conflict.base import CONFLICT_MARGIN, only_unsupported, support
from refcheck_callbacks.check.scores import SUPPORT_THRESHOLD, at_half
from refcheck_callbacks.types import SCORE_TOLERANCE, ConflictKind, Label, Verdict

DEFAULT_SUPPORT_THRESHOLD = 0.5
"""The support threshold of a checker that declares none (`support_threshold` attribute)."""


class DecisionPoints(BaseModel):
    """Where a checker's scores are cut into labels (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    support_threshold: float = Field(ge=0.0, le=1.0)
    keep_vetoes: bool = True
    """Whether a claim the checker left Neutral although its P(entailment) passed the
    checker's own threshold stays Neutral (`relabel`); False cuts it at the threshold too."""
    min_contradiction: float = Field(default=0.0, ge=0.0, le=1.0)
    conflict_kinds: tuple[ConflictKind, ...] = tuple(ConflictKind)


def defaults_of(checker: object) -> DecisionPoints:
    """The points a checker decides at by itself: its own threshold, every conflict kept."""
    threshold = getattr(checker, "support_threshold", DEFAULT_SUPPORT_THRESHOLD)
    return DecisionPoints(support_threshold=float(threshold))


def contradiction_probability(verdict: Verdict) -> float:
    """P(contradiction): from the verdict's probabilities, else its confidence."""
    return (verdict.probabilities or {}).get(Label.CONTRADICTION, verdict.confidence)


def keeps_contradiction(verdict: Verdict, points: DecisionPoints) -> bool:
    """Whether `verdict` is a Contradiction these points accept. One without a named kind (a
    pipeline without conflict stage) is judged by its probability alone."""
    if verdict.label is not Label.CONTRADICTION:
        return False
    if verdict.conflict is not None and verdict.conflict not in points.conflict_kinds:
        return False
    return contradiction_probability(verdict) >= points.min_contradiction


def relabel(verdict: Verdict, points: DecisionPoints, own_threshold: float) -> Verdict:
    """`verdict` labelled at `points` (module docstring); a failed claim stays as it is.

    `own_threshold` is the checker's own support threshold: the threshold moves from there,
    so a verdict changes only where its P(entailment) lies between the two. A claim the
    checker left Neutral although its P(entailment) passed its own threshold (a veto: the
    embedded checker's contradiction head can overrule support) stays Neutral unless the
    points drop vetoes (`keep_vetoes`); at the checker's own points every verdict is as the
    checker gave it."""
    if verdict.label is None:
        return verdict
    entailment = support(verdict)
    if verdict.label is Label.CONTRADICTION:
        # Mapped as every other verdict, so the ranking stays; below 1/2 all the same (a
        # conflict was found), and for a kept one under the conflict's cap.
        mapped = min(at_half(entailment, points.support_threshold), SUPPORT_THRESHOLD)
        if keeps_contradiction(verdict, points):
            return _contradiction_with_support(verdict, mapped)
        return only_unsupported(_with_support(verdict, mapped))
    supported = entailment >= points.support_threshold
    if verdict.label is Label.NEUTRAL and points.keep_vetoes:
        supported = supported and entailment < own_threshold
    # The calibrated threshold lands on 1/2, as a checker's own does (`check.scores`).
    mapped = at_half(entailment, points.support_threshold)
    label = Label.ENTAILMENT if supported else Label.NEUTRAL
    if label is verdict.label and abs(mapped - entailment) <= SCORE_TOLERANCE:
        return verdict
    if not supported:
        if entailment >= points.support_threshold:
            return verdict  # a kept veto: the checker's own verdict and score
        return only_unsupported(_with_support(verdict, mapped))
    probabilities = {Label.ENTAILMENT: mapped, Label.NEUTRAL: 1.0 - mapped}
    probabilities[Label.CONTRADICTION] = 0.0
    evidence = tuple(e.model_copy(update={"probability": mapped}) for e in verdict.evidence)
    return verdict.rescored(Label.ENTAILMENT, probabilities, evidence=evidence, conflict=None)


def _contradiction_with_support(verdict: Verdict, entailment: float) -> Verdict:
    """A kept Contradiction with P(entailment) `entailment` (under the conflict's cap), the
    rest split between neutral and contradiction as the verdict split it."""
    probabilities = verdict.probabilities or {}
    neutral = probabilities.get(Label.NEUTRAL, 0.0)
    share = 1.0 - neutral / max(1e-12, 1.0 - support(verdict))
    entailment = min(entailment, (share - CONFLICT_MARGIN) / (1.0 + share))
    if abs(entailment - support(verdict)) <= SCORE_TOLERANCE:
        return verdict
    rest = 1.0 - entailment
    return verdict.rescored(
        Label.CONTRADICTION,
        {
            Label.ENTAILMENT: entailment,
            Label.NEUTRAL: rest * (1.0 - share),
            Label.CONTRADICTION: rest * share,
        },
    )


def _with_support(verdict: Verdict, entailment: float) -> Verdict:
    """`verdict` with P(entailment) `entailment` (at most 1/2), for `only_unsupported`."""
    return verdict.rescored(
        Label.NEUTRAL,
        {Label.ENTAILMENT: entailment, Label.NEUTRAL: 1.0 - entailment, Label.CONTRADICTION: 0.0},
        conflict=None,
    )
