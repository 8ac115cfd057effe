"""How a conflict finder's answer turns a verdict into a Contradiction or a Neutral.

The finder protocol and what it returns (`ConflictFinder`, `FoundConflict`) are in
`contract.components`.
"""

from __future__ import annotations

from refcheck_callbacks.contract.components import FoundConflict
from refcheck_callbacks.types import (
    CharSpan,
    CheckItem,
    Evidence,
    Label,
    Verdict,
)


def support(verdict: Verdict) -> float:
    """P(entailment): from the verdict's probabilities, else from its label and confidence."""
    if verdict.probabilities is not None and Label.ENTAILMENT in verdict.probabilities:
        return verdict.probabilities[Label.ENTAILMENT]
    entailed = verdict.label is Label.ENTAILMENT
    return verdict.confidence if entailed else 1.0 - verdict.confidence


def contradiction(
    verdict: Verdict, item: CheckItem, found: FoundConflict, explanation: str | None = None
) -> Verdict:
    """`verdict` as a Contradiction citing `found`. P(entailment) stays the checker's own: the
    conflict decides the label, not how well the rest of the claim is supported."""
    entailment = support(verdict)
    rest = 1.0 - entailment
    probabilities = {
        Label.ENTAILMENT: entailment,
        Label.NEUTRAL: rest * (1.0 - found.share),
        Label.CONTRADICTION: rest * found.share,
    }
    confidence = probabilities[Label.CONTRADICTION]
    why = explanation if explanation is not None else verdict.explanation
    return verdict.model_copy(
        update={
            "label": Label.CONTRADICTION,
            "confidence": confidence,
            "probabilities": probabilities,
            "evidence": (
                Evidence(
                    reference_index=found.reference_index,
                    reference_id=item.references[found.reference_index].id,
                    span=CharSpan(start=found.start, end=found.end),
                    probability=confidence,
                ),
            ),
            "explanation": f"{found.detail} ({found.kind.value})" + (f"; {why}" if why else ""),
            "conflict": found.kind,
        }
    )


def only_unsupported(verdict: Verdict) -> Verdict:
    """`verdict` as Neutral: nothing in the references conflicts with the claim, so the
    contradiction share of its probability goes to neutral."""
    entailment = support(verdict)
    probabilities = {
        Label.ENTAILMENT: entailment,
        Label.NEUTRAL: 1.0 - entailment,
        Label.CONTRADICTION: 0.0,
    }
    evidence = tuple(
        e.model_copy(update={"probability": probabilities[Label.NEUTRAL]}) for e in verdict.evidence
    )
    return verdict.model_copy(
        update={
            "label": Label.NEUTRAL,
            "confidence": probabilities[Label.NEUTRAL],
            "probabilities": probabilities,
            "evidence": evidence,
            "conflict": None,
        }
    )
