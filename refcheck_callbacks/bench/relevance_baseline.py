"""The relevance bench's baseline: the cosine of the bundled static MiniLM table, as a scorer.

What the shipped head (`check.relevance.scorer.EmbeddedRelevance`) is measured against: the
same table's weighted-mean vectors of query and passage, their cosine mapped onto [0, 1] as
(1 + cosine) / 2 (the same order; a relevance lies in [0, 1]). It follows the diagnostics
stage's `RelevanceScorer` protocol, so the cause probes can run the stage with it in place of
the head. A cosine has no context: a passage scores the same among others as alone. Its cut
(`threshold`) is fitted on labelled pairs by `balanced_threshold`, the rule the head's cut was
chosen by (best balanced accuracy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from refcheck_callbacks.check.relevance.features import MAX_PASSAGE_CHARS

BASELINE_NAME = "static cosine"


class StaticCosineRelevance:
    """(1 + cosine) / 2 of the static MiniLM vectors of query and passage; cut at `threshold`."""

    name = BASELINE_NAME

    def __init__(self, threshold: float = 0.5, static: Any = None) -> None:
        self._threshold = threshold
        self._static = static

    def _table(self) -> Any:
        if self._static is None:
            from refcheck_callbacks.check.relevance.scorer import shipped_static

            self._static = shipped_static()
        return self._static

    @property
    def threshold(self) -> float:
        return self._threshold

    def with_threshold(self, threshold: float) -> StaticCosineRelevance:
        return StaticCosineRelevance(threshold, self._static)

    def prepare(self, texts: Sequence[str]) -> list[Any]:
        """One unit vector per text (clipped as the head clips it)."""
        static = self._table()
        vectors = static.embed(static.token_ids([text[:MAX_PASSAGE_CHARS] for text in texts]))
        return list(vectors)

    def score(self, query: str, passages: Sequence[Any]) -> list[float]:
        if not passages:
            return []
        [vector] = self.prepare([query])
        return [min(1.0, max(0.0, (1.0 + float(p @ vector)) / 2.0)) for p in passages]

    def claim_scores(self, question: str, claims: Sequence[Any]) -> list[float]:
        """Each claim against the question alone: the cosine reads no other claim."""
        return self.score(question, claims)

    def scores(self, query: str, passages: Sequence[Any]) -> tuple[list[float], list[float]]:
        """Among the others and alone: the same, a cosine has no context."""
        scored = self.score(query, passages)
        return scored, list(scored)


def balanced_threshold(relevant: Sequence[bool], scores: Sequence[float]) -> float:
    """The cut (score >= cut counts as relevant) with the best balanced accuracy, midway
    between two adjacent distinct scores; 0.5 when a class is missing."""
    positives = sum(relevant)
    negatives = len(relevant) - positives
    if positives == 0 or negatives == 0:
        return 0.5
    rows = sorted(zip(scores, relevant, strict=True), key=lambda row: -row[0])
    best, cut = -1.0, rows[0][0] + 1e-6
    hits = false_hits = 0
    for index, (score, label) in enumerate(rows):
        hits += label
        false_hits += not label
        if index + 1 < len(rows) and rows[index + 1][0] == score:
            continue
        accuracy = (hits / positives + 1 - false_hits / negatives) / 2
        if accuracy > best:
            below = rows[index + 1][0] if index + 1 < len(rows) else score - 1e-6
            best, cut = accuracy, (score + below) / 2
    return cut
