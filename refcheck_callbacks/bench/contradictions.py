"""How far the Contradiction label can be trusted: the figures an alert on it depends on.

A dashboard of correct answers should show no contradictions; a spike alert pages on them. So
beside balanced accuracy and AUROC (which read only supported vs not), `refcheck bench`
reports per set:

- false-contradiction rate: the share of gold-supported claims labelled Contradiction, the
  noise floor of the contradiction rate on clean traffic;
- contradiction precision: of the claims labelled Contradiction, the share gold calls not
  supported (for planted edits and 3-way sets also the share gold calls Contradiction);
- hallucination floor: the share of gold-supported claims labelled Neutral or Contradiction,
  the noise floor of the hallucination rate;
- contradiction recall, where gold has Contradiction labels (planted edits, Climate-FEVER).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.types import Label, Verdict


class ContradictionScores(BaseModel):
    supported: int
    """Gold-supported claims."""
    contradictions: int
    """Claims labelled Contradiction."""
    false_contradiction_rate: float | None
    contradiction_precision: float | None
    """Of the Contradiction labels, the share on claims gold calls not supported."""
    hallucination_floor: float | None
    gold_contradictions: int = 0
    contradiction_recall: float | None = None
    """Of the gold Contradiction claims, the share labelled Contradiction."""
    contradiction_precision_3way: float | None = None
    """Of the Contradiction labels, the share on gold Contradiction claims (3-way gold)."""


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def contradiction_scores(
    pairs: Sequence[tuple[LabelledExample, Verdict]], supported: Sequence[bool | None]
) -> ContradictionScores | None:
    """The scores of checked (example, verdict) pairs; `supported` is gold's binary view of
    each (None where unknown). None when gold says nothing about support."""
    known = [(s, v.label) for s, (_, v) in zip(supported, pairs, strict=True) if s is not None]
    if not known:
        return None
    on_supported = [label for s, label in known if s]
    flagged = [s for s, label in known if label is Label.CONTRADICTION]
    gold = [(e.label, v.label) for e, v in pairs if e.label is not None]
    gold_contradictions = [label for g, label in gold if g is Label.CONTRADICTION]
    three_way_flagged = [g for g, label in gold if label is Label.CONTRADICTION]
    has_gold_contradictions = bool(gold_contradictions)
    return ContradictionScores(
        supported=len(on_supported),
        contradictions=len(flagged),
        false_contradiction_rate=_share(on_supported.count(Label.CONTRADICTION), len(on_supported)),
        contradiction_precision=_share(flagged.count(False), len(flagged)),
        hallucination_floor=_share(
            sum(label is not Label.ENTAILMENT for label in on_supported), len(on_supported)
        ),
        gold_contradictions=len(gold_contradictions),
        contradiction_recall=_share(
            gold_contradictions.count(Label.CONTRADICTION), len(gold_contradictions)
        ),
        contradiction_precision_3way=_share(
            three_way_flagged.count(Label.CONTRADICTION), len(three_way_flagged)
        )
        if has_gold_contradictions
        else None,
    )
