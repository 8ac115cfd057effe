"""How a conflict finder's answer turns a verdict into a Contradiction or a Neutral.

The finder protocol and what it returns (`ConflictFinder`, `FoundConflict`) are in
`contract.components`.
"""

from __future__ import annotations

from refcheck_callbacks.check.scores import SUPPORT_THRESHOLD
from refcheck_callbacks.contract.components import FoundConflict
from refcheck_callbacks.types import (
    CharSpan,
    CheckItem,
    Evidence,
    Label,
    Verdict,
)

MIN_CONFLICT_SHARE = 0.6
"""P(contradiction | not entailed) of a found conflict, at least: above 1/2, so that
contradiction outweighs neutral."""


CONFLICT_MARGIN = 0.01
"""How much likelier than entailment a found conflict's contradiction is, at least."""


def support(verdict: Verdict) -> float:
    """P(entailment): from the verdict's probabilities, else from its label and confidence."""
    if verdict.probabilities is not None and Label.ENTAILMENT in verdict.probabilities:
        return verdict.probabilities[Label.ENTAILMENT]
    entailed = verdict.label is Label.ENTAILMENT
    return verdict.confidence if entailed else 1.0 - verdict.confidence


def contradiction(
    verdict: Verdict, item: CheckItem, found: FoundConflict, explanation: str | None = None
) -> Verdict:
    """`verdict` as a Contradiction citing `found`.

    P(entailment) stays the checker's own as far as the conflict allows: at most
    (share - CONFLICT_MARGIN) / (1 + share), which leaves P(contradiction) the likeliest label
    by `CONFLICT_MARGIN` (and P(entailment) below 1/2, the support threshold). What is left
    goes to contradiction and neutral in the finder's share (at least `MIN_CONFLICT_SHARE`).
    The checker's ranking of claims by support is kept below that cap: pushing every
    contradiction to the bottom measured worse AUROC on the shared sets (docs/telemetry.md)."""
    share = max(found.share, MIN_CONFLICT_SHARE)
    entailment = min(support(verdict), (share - CONFLICT_MARGIN) / (1.0 + share))
    rest = 1.0 - entailment
    probabilities = {
        Label.ENTAILMENT: entailment,
        Label.NEUTRAL: rest * (1.0 - share),
        Label.CONTRADICTION: rest * share,
    }
    why = explanation if explanation is not None else verdict.explanation
    cited = Evidence(
        reference_index=found.reference_index,
        reference_id=item.references[found.reference_index].id,
        span=CharSpan(start=found.start, end=found.end),
        probability=probabilities[Label.CONTRADICTION],
    )
    return verdict.rescored(
        Label.CONTRADICTION,
        probabilities,
        evidence=(cited,),
        explanation=f"{found.detail} ({found.kind.value})" + (f"; {why}" if why else ""),
        conflict=found.kind,
    )


def only_unsupported(verdict: Verdict) -> Verdict:
    """`verdict` as Neutral: nothing in the references conflicts with the claim, so the
    contradiction share of its probability goes to neutral. P(entailment) is kept up to 1/2:
    a claim not found supported is not likelier supported than not (a checker's Neutral of low
    confidence without probabilities would otherwise read as P(entailment) above 1/2)."""
    entailment = min(support(verdict), SUPPORT_THRESHOLD)
    probabilities = {
        Label.ENTAILMENT: entailment,
        Label.NEUTRAL: 1.0 - entailment,
        Label.CONTRADICTION: 0.0,
    }
    evidence = tuple(
        e.model_copy(update={"probability": probabilities[Label.NEUTRAL]}) for e in verdict.evidence
    )
    return verdict.rescored(Label.NEUTRAL, probabilities, evidence=evidence, conflict=None)
