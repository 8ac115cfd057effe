"""The diagnostics stage: relevance of each reference, what the answer used, claim and answer
relevance, non-answers and the cause of each unsupported claim, in one pass after checking.

Cheap by construction: the static MiniLM table the embedded checker already loaded
(`check.relevance.scorer.shipped_static`), each reference tokenised and embedded once, and
a few numpy products per claim. No model call, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from refcheck_callbacks.check.diagnose.causes import cause_of
from refcheck_callbacks.check.diagnose.non_answers import is_non_answer
from refcheck_callbacks.support.extras import require
from refcheck_callbacks.types import CheckRequest, Claim, Label, ReferenceUse, Verdict


class RelevanceScorer(Protocol):
    """Scores texts against a query in [0, 1] (`check.relevance.scorer.EmbeddedRelevance`)."""

    @property
    def threshold(self) -> float: ...

    def prepare(self, texts: Sequence[str]) -> list[Any]: ...

    def score(self, query: str, passages: Sequence[Any]) -> list[float]: ...

    def scores(self, query: str, passages: Sequence[Any]) -> tuple[list[float], list[float]]: ...

    def claim_scores(self, question: str, claims: Sequence[Any]) -> list[float]: ...


@dataclass(frozen=True)
class Diagnosis:
    """What diagnostics add to one result."""

    references: tuple[ReferenceUse, ...]
    verdicts: list[Verdict]
    """The verdicts with `relevance` and `cause` set."""
    answer_relevance: float | None
    non_answer: bool


def _supports(verdicts: Sequence[Verdict], references: int) -> list[list[int]]:
    """For each reference, the claims whose Entailment it is the evidence of."""
    supports: list[list[int]] = [[] for _ in range(references)]
    for index, verdict in enumerate(verdicts):
        if verdict.label is not Label.ENTAILMENT:
            continue
        for evidence in verdict.evidence:
            if evidence.reference_index >= references:
                continue
            claims = supports[evidence.reference_index]
            if index not in claims:
                claims.append(index)
    return supports


class Diagnostics:
    """Diagnoses a checked (or abstained) request; see the module docstring."""

    def __init__(self, relevance: RelevanceScorer | None = None) -> None:
        if relevance is None:
            from refcheck_callbacks.check.relevance.scorer import EmbeddedRelevance

            relevance = EmbeddedRelevance()
        self.relevance: RelevanceScorer = relevance
        self._threads: Any = None

    def diagnose(
        self, request: CheckRequest, claims: Sequence[Claim], verdicts: Sequence[Verdict]
    ) -> Diagnosis:
        if self._threads is None:
            threadpoolctl = require("threadpoolctl", "embedded")
            self._threads = threadpoolctl.ThreadpoolController()
        # Small products, as in the embedded checker: multi-threaded BLAS only spins.
        with self._threads.limit(limits=1, user_api="blas"):
            return self._diagnose(request, claims, verdicts)

    def _diagnose(
        self, request: CheckRequest, claims: Sequence[Claim], verdicts: Sequence[Verdict]
    ) -> Diagnosis:
        question = (request.question or "").strip() or None
        threshold = self.relevance.threshold
        passages = self.relevance.prepare([reference.text for reference in request.references])
        reference_relevance: list[float | None] = [None] * len(passages)
        alone: list[float] = []
        if question and passages:
            among, alone = self.relevance.scores(question, passages)
            reference_relevance = list(among)
        claim_relevance: list[float | None] = [None] * len(claims)
        claim_alone: list[float] = [0.0] * len(claims)
        answer_relevance = None
        if question:
            # The claims and the answer in one batch: one tokenisation call, not two.
            *claim_passages, answer = self.relevance.prepare(
                [*(claim.text for claim in claims), request.answer]
            )
            if claims:
                claim_alone = self.relevance.scores(question, claim_passages)[1]
                claim_relevance = list(self.relevance.claim_scores(question, claim_passages))
            answer_relevance = self.relevance.score(question, [answer])[0]
        best = max(alone, default=0.0)
        diagnosed = []
        for index, (claim, verdict) in enumerate(zip(claims, verdicts, strict=False)):
            # Relevant context: some reference bears on the question, and no less than the
            # claim itself does; a claim that answers the question better than anything
            # retrieved came from somewhere else.
            relevant = best >= threshold and claim_alone[index] <= best
            if question is None and verdict.label is Label.NEUTRAL and passages:
                # No question: the references are judged against the claim's own subject.
                relevant = max(self.relevance.scores(claim.text, passages)[1]) >= threshold
            cause = cause_of(verdict, relevant, refusal=is_non_answer(claim.text))
            diagnosed.append(
                verdict.model_copy(update={"relevance": claim_relevance[index], "cause": cause})
            )
        supports = _supports(verdicts, len(passages))
        return Diagnosis(
            references=tuple(
                ReferenceUse(
                    index=index,
                    relevance=reference_relevance[index],
                    used=bool(supports[index]),
                    supports=tuple(supports[index]),
                )
                for index in range(len(passages))
            ),
            verdicts=diagnosed,
            answer_relevance=answer_relevance,
            non_answer=is_non_answer(request.answer),
        )
