"""The conflict stage of the pipeline: every family's verdicts get the three labels' one meaning."""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.check.conflict import kinds
from refcheck_callbacks.check.conflict.base import contradiction, only_unsupported
from refcheck_callbacks.contract.components import ConflictFinder, FoundConflict
from refcheck_callbacks.types import CharSpan, CheckItem, Label, Verdict

MODEL_CONTRADICTION_BAR = 0.8
"""A checker's own Contradiction (a 3-way model's, a judge's) stays one when its probability
is at least this and it cites evidence; below, it is only unsupported unless the finder finds
the conflict itself. Not fitted: no 3-way model's weights are at hand here to fit it on."""


def needs_finder(verdict: Verdict, screened: bool) -> bool:
    """Whether the stage has to look for a conflict: the checker did not find the claim
    supported, and did not already name the conflict (or run this very finder itself)."""
    if verdict.label is None or verdict.label is Label.ENTAILMENT:
        return False
    if verdict.label is Label.CONTRADICTION:
        return verdict.conflict is None or not verdict.evidence
    return not screened


async def settle(
    finder: ConflictFinder,
    items: Sequence[CheckItem],
    verdicts: Sequence[Verdict],
    screened: bool = False,
    bar: float = MODEL_CONTRADICTION_BAR,
) -> list[Verdict]:
    """The verdicts with Contradiction meaning a conflicting statement was found.

    `screened`: the checker ran `finder` on every claim itself (the embedded checker and its
    stated-fact step), so its Neutral verdicts have been looked at already. A claim checked
    without references (a correctness judge's) keeps its label: there is no statement to cite.
    """
    settled = list(verdicts)
    pending = [
        i
        for i, verdict in enumerate(verdicts)
        if items[i].references and needs_finder(verdict, screened)
    ]
    if not pending:
        return settled
    found = await finder.find([items[i] for i in pending])
    for index, conflict in zip(pending, found, strict=True):
        settled[index] = _settled(items[index], verdicts[index], conflict, bar)
    return settled


def _settled(item: CheckItem, verdict: Verdict, found: FoundConflict | None, bar: float) -> Verdict:
    if found is not None:
        return contradiction(verdict, item, found)
    if verdict.label is Label.CONTRADICTION and verdict.evidence:
        own = _own_contradiction(item, verdict, bar)
        if own is not None:
            return own
    return only_unsupported(verdict)


def _own_contradiction(item: CheckItem, verdict: Verdict, bar: float) -> Verdict | None:
    """The checker's Contradiction, citing the statement of its evidence closest to the claim
    and naming its kind; None when it is less sure than `bar`."""
    probability = (verdict.probabilities or {}).get(Label.CONTRADICTION, verdict.confidence)
    if probability < bar:
        return None
    evidence = verdict.evidence[0]
    text = item.references[evidence.reference_index].text
    start, end = kinds.closest_sentence(
        item.claim.text, text, evidence.span.start, evidence.span.end
    )
    kind = kinds.classify(item.claim.text, text[start:end])
    cited = evidence.model_copy(update={"span": CharSpan(start=start, end=end)})
    return verdict.model_copy(update={"evidence": (cited, *verdict.evidence[1:]), "conflict": kind})
