"""Relevance judged for one answer in one call, and what a relevance judge is.

The diagnostics stage (`check.diagnose.stage`) scores relevance with the offline head; a
relevance judge (`llm:MODEL`, `check.relevance.llm_relevance`) may score the same things
instead, one call per answer. What it could not score (a budget that refused the call, a
failed call, a grade missing from the reply) it leaves None and lists as a fallback: the head's
score stands there, and the result says so. Only data and a protocol here: importing this
module loads no model and no LLM client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from refcheck_callbacks.types import (
    CheckRequest,
    Claim,
    RelevanceFallback,
    RelevanceSubject,
    Usage,
)


@dataclass(frozen=True)
class JudgedRelevance:
    """What a relevance judge said of one answer; None where it gave no score."""

    scorer: str
    """The judge's name, as results carry it (`CheckResult.relevance_scorer`)."""
    threshold: float
    """A reference whose score is at least this is relevant (the cause rule reads it)."""
    references: tuple[float | None, ...]
    claims: tuple[float | None, ...]
    answer: float | None
    fallbacks: tuple[RelevanceFallback, ...] = ()
    """Every score left None, and why: the offline head gives those."""
    usage: Usage | None = None
    """The call's spend (refused calls included), added to the result's usage."""

    @classmethod
    def failed(
        cls,
        scorer: str,
        threshold: float,
        references: int,
        claims: int,
        reason: str,
        usage: Usage | None = None,
    ) -> JudgedRelevance:
        """Nothing judged: every score falls back, for `reason`."""
        return cls(
            scorer,
            threshold,
            (None,) * references,
            (None,) * claims,
            None,
            fallbacks_for(references, claims, True, reason),
            usage,
        )


def fallbacks_for(
    references: Sequence[int] | int, claims: Sequence[int] | int, answer: bool, reason: str
) -> tuple[RelevanceFallback, ...]:
    """Fallbacks for these references and claims (indices, or a count: all of them) and,
    if `answer`, the answer, all for one reason."""
    if isinstance(references, int):
        references = range(references)
    if isinstance(claims, int):
        claims = range(claims)
    return (
        *(RelevanceFallback(subject=RelevanceSubject.REFERENCE, index=i, reason=reason)
          for i in references),
        *(RelevanceFallback(subject=RelevanceSubject.CLAIM, index=i, reason=reason)
          for i in claims),
        *([RelevanceFallback(subject=RelevanceSubject.ANSWER, reason=reason)] if answer else []),
    )  # fmt: skip


@runtime_checkable
class RelevanceJudge(Protocol):
    """Scores an answer's references, claims and the answer itself against its question,
    in one call (`check.relevance.llm_relevance.LLMRelevance`)."""

    name: str
    threshold: float

    async def judge(self, request: CheckRequest, claims: Sequence[Claim]) -> JudgedRelevance:
        """The scores for `request` (which has a question); never raises for a failed call
        (its scores fall back instead)."""
        ...
