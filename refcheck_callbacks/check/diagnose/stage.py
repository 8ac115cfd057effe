"""The diagnostics stage: relevance of each reference, what the answer used, claim and answer
relevance, non-answers and the cause of each unsupported claim, in one pass after checking.

Cheap by construction: the static MiniLM table the embedded checker already loaded
(`check.relevance.scorer.shipped_static`), each reference tokenised and embedded once, and
a few numpy products per claim. No model call, no I/O.

With a relevance judge (`llm:MODEL`, `check.relevance.llm_relevance`), `judged` asks it first,
one call per answer, on the worker's loop; its scores replace the head's where it gave them,
and the head's stand where it did not (`JudgedRelevance.fallbacks`, carried to the result).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from refcheck_callbacks.check.diagnose.causes import cause_of
from refcheck_callbacks.check.diagnose.non_answers import is_non_answer
from refcheck_callbacks.check.relevance.judged import JudgedRelevance, RelevanceJudge
from refcheck_callbacks.support.extras import require
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import (
    CheckRequest,
    Claim,
    Label,
    ReferenceUse,
    RelevanceFallback,
    Usage,
    Verdict,
)

HEAD = "embedded"
"""`CheckResult.relevance_scorer` when the offline head scored relevance."""


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
    relevance_scorer: str = HEAD
    relevance_fallbacks: tuple[RelevanceFallback, ...] = ()
    """What the relevance judge could not score (the head's scores stand there)."""
    usage: Usage | None = None
    """The relevance judge's spend on this answer."""


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


def _over(head: Sequence[float | None], judged: Sequence[float | None]) -> list[float | None]:
    """The judge's scores, the head's where the judge gave none."""
    return [h if j is None else j for h, j in zip(head, judged, strict=True)]


def _context(
    threshold: float, alone: Sequence[float], claim_alone: Sequence[float], judged: JudgedRelevance
) -> list[bool]:
    """For each claim, whether the context is relevant to the question (the head's rule, on
    the judge's scores where it gave them): some reference is relevant (a judged one from the
    judge's threshold, another from the head's), and the claim does not answer the question
    better than every reference (compared on the judge's scale where it graded the claim and
    a reference, else on the head's)."""
    graded = [score for score in judged.references if score is not None]
    some = any(score >= judged.threshold for score in graded) or any(
        head >= threshold
        for head, score in zip(alone, judged.references, strict=True)
        if score is None
    )
    best, best_graded = max(alone, default=0.0), max(graded, default=None)
    out = []
    for head, score in zip(claim_alone, judged.claims, strict=True):
        better = head > best if score is None or best_graded is None else score > best_graded
        out.append(some and not better)
    return out


class Diagnostics:
    """Diagnoses a checked (or abstained) request; see the module docstring."""

    def __init__(
        self, relevance: RelevanceScorer | None = None, judge: RelevanceJudge | None = None
    ) -> None:
        if relevance is None:
            from refcheck_callbacks.check.relevance.scorer import EmbeddedRelevance

            relevance = EmbeddedRelevance()
        self.relevance: RelevanceScorer = relevance
        self.judge = judge
        """A relevance judge whose scores replace the head's where it gives them; None: the
        head alone."""
        self._threads: Any = None

    async def judged(
        self, request: CheckRequest, claims: Sequence[Claim], timeout: float
    ) -> JudgedRelevance | None:
        """The judge's scores for one answer, within `timeout` seconds; None without a judge
        or a question. Never raises: a judge that fails falls back on every score."""
        judge = self.judge
        if judge is None or not (request.question or "").strip():
            return None
        try:
            return await asyncio.wait_for(judge.judge(request, claims), timeout)
        except Exception as exc:  # the stage deadline, or an app's own judge that raised
            kind = "timeout" if isinstance(exc, asyncio.TimeoutError) else type(exc).__name__
            logger.warning("refcheck: the relevance judge failed (%s); the head scores", kind)
            counts = len(request.references), len(claims)
            return JudgedRelevance.failed(judge.name, judge.threshold, *counts, kind)

    def diagnose(
        self,
        request: CheckRequest,
        claims: Sequence[Claim],
        verdicts: Sequence[Verdict],
        judged: JudgedRelevance | None = None,
    ) -> Diagnosis:
        """The diagnosis, with the judge's scores (`judged`, from `Diagnostics.judged`) where it
        gave them."""
        if self._threads is None:
            threadpoolctl = require("threadpoolctl", "embedded")
            self._threads = threadpoolctl.ThreadpoolController()
        # Small products, as in the embedded checker: multi-threaded BLAS only spins.
        with self._threads.limit(limits=1, user_api="blas"):
            return self._diagnose(request, claims, verdicts, judged)

    def _diagnose(
        self,
        request: CheckRequest,
        claims: Sequence[Claim],
        verdicts: Sequence[Verdict],
        judged: JudgedRelevance | None,
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
        context = None
        if judged is not None:
            reference_relevance = _over(reference_relevance, judged.references)
            claim_relevance = _over(claim_relevance, judged.claims)
            answer_relevance = _over([answer_relevance], [judged.answer])[0]
            context = _context(threshold, alone, claim_alone, judged)
        diagnosed = []
        for index, (claim, verdict) in enumerate(zip(claims, verdicts, strict=False)):
            # Relevant context: some reference bears on the question, and no less than the
            # claim itself does; a claim that answers the question better than anything
            # retrieved came from somewhere else.
            relevant = best >= threshold and claim_alone[index] <= best
            if context is not None:
                relevant = context[index]
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
            relevance_scorer=HEAD if judged is None else judged.scorer,
            relevance_fallbacks=() if judged is None else judged.fallbacks,
            usage=None if judged is None else judged.usage,
        )
