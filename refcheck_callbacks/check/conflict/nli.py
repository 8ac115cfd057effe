"""A 3-way NLI model as the conflict finder (on a GPU): the segment it reads as contradicting.

The stated-fact finder sees figures, dates, names and a few exclusive terms; a 3-way NLI model
(`MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli`, RefChecker's RoBERTa) also reads
swapped roles and paraphrased denials. For a claim its checker did not find supported, the
segment with the highest P(contradiction) is the conflicting statement when that is at least
`bar` and the segment's likeliest label; its kind is read from the two texts (`kinds`).

    RefCheckMonitor(checker="nli:lytang/MiniCheck-Flan-T5-Large", conflict="nli:MODEL")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from refcheck_callbacks.check.conflict import kinds
from refcheck_callbacks.check.conflict.stage import MODEL_CONTRADICTION_BAR
from refcheck_callbacks.check.merge import SegmentScore
from refcheck_callbacks.check.nli.checker import DEFAULT_NLI_MODEL, NLIChecker
from refcheck_callbacks.check.nli.families import Aggregation
from refcheck_callbacks.contract.components import FoundConflict
from refcheck_callbacks.support.blocking import run_blocking
from refcheck_callbacks.types import CheckItem, Label


class NLIConflictFinder:
    """Finds conflicts with a 3-way NLI model; `options` go to `NLIChecker` (device, dtype,
    top_k_segments, ...). A model that only says supported / unsupported is refused: it
    cannot tell a contradiction from missing evidence."""

    def __init__(
        self,
        model: str | Path = DEFAULT_NLI_MODEL,
        bar: float = MODEL_CONTRADICTION_BAR,
        **options: Any,
    ) -> None:
        self.checker = NLIChecker(model, **options)
        family = self.checker.family
        if self.checker.scheme.binary or family.aggregation is not Aggregation.REFCHECKER:
            raise ValueError(
                f"a conflict finder needs a 3-way NLI model (entailment / neutral / "
                f"contradiction); {model} is a {family.title}"
            )
        self.bar = bar
        self.name = f"nli:{self.checker.model_name}"

    def preload(self) -> None:
        """The model loads when the finder is built: nothing is left to load."""

    def find_batch(self, items: Sequence[CheckItem]) -> list[FoundConflict | None]:
        return [
            None if scores is None else self._found(item, scores)
            for item, scores in zip(items, self.checker.segment_scores(items), strict=True)
        ]

    async def find(self, items: Sequence[CheckItem]) -> list[FoundConflict | None]:
        return await run_blocking(self.find_batch, items)

    def _found(self, item: CheckItem, scores: list[SegmentScore]) -> FoundConflict | None:
        if not scores:
            return None
        best = max(scores, key=lambda score: score.probabilities[Label.CONTRADICTION])
        probability = best.probabilities[Label.CONTRADICTION]
        if probability < self.bar or best.label is not Label.CONTRADICTION:
            return None
        segment = best.segment
        return FoundConflict(
            kinds.classify(item.claim.text, segment.text),
            segment.reference_index,
            segment.start,
            segment.end,
            probability,
            f"the NLI model reads this segment as contradicting the claim ({probability:.2f})",
        )
