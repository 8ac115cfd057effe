"""Relevance judged by an LLM (`llm:MODEL`): one call per answer, not per reference.

For teams that already run an LLM judge: the offline head (`check.relevance.scorer`) tells
answer-bearing passages from topical ones only so well (docs/diagnostics.md), and a judge
reads the question. One call grades, against the question, every reference the prompt holds,
every claim and the answer (`llm_prompt` has the prompt and the strict reading). The call goes
through the same `LLMClient` as the judge (bounded concurrency, deadline, retries, spend in the
result's usage under the role `relevance`) and, in a monitor, under the same `JudgeBudget`
ledger as its judge and extractor. The monitor's redact hook has run on the request before
the diagnostics stage sees it, so only redacted text is sent.

Whatever it cannot score falls back to the offline head, counted in the result
(`CheckResult.relevance_fallbacks`, by reason) and in the metrics
(`refcheck.relevance.fallbacks`; a refused call also in `refcheck.llm.budget.fallbacks`): a
call the budget refused (`budget_exhausted`) or that failed (its kind), an item the reply
gives no valid grade (`unreadable`), a reference left out of the prompt by its document budget
(`left_out`).
"""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.check.relevance.judged import JudgedRelevance, fallbacks_for
from refcheck_callbacks.check.relevance.llm_prompt import (
    RELEVANT_FROM,
    Asked,
    read_grades,
    relevance_messages,
)
from refcheck_callbacks.llm.budget import JudgeBudget, SpendLedger
from refcheck_callbacks.llm.client import LLMCallError, LLMClient, as_client
from refcheck_callbacks.llm.data_blocks import new_nonce
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest, Claim, RelevanceFallback, Usage

ROLE = "relevance"
"""`refcheck.llm.role` of the relevance judge's calls (`ModelSpend.role`)."""
UNREADABLE = "unreadable"
LEFT_OUT = "left_out"
_TOP_LOGPROBS = 5


class LLMRelevance:
    """Scores an answer's references, claims and the answer against its question with an LLM.

    Args:
        model: a litellm model name, or a ready `LLMClient` (deadlines, retries, concurrency;
            one may be shared with the judge).
        api_base, api_key: the endpoint, when `model` is a name.
        claims: grade the claims too, in the same call (a few output tokens each); False
            leaves them to the offline head.
        logprobs: ask for the grade tokens' log-probabilities and score the expected grade
            (a server that returns none gives the grade as written).
        max_reference_chars: the documents' share of the prompt, in characters; references
            past it are left out and scored by the head.
        max_tokens_per_item: the reply's bound per graded line (a line is about 5 tokens).
        budget: a spend cap of this scorer's own (`JudgeBudget`); in a monitor its
            `judge_budget` holds judge, extractor and this scorer together (`limit_spend`).
    """

    name = "llm"
    threshold = RELEVANT_FROM

    def __init__(
        self,
        model: str | LLMClient,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        claims: bool = True,
        logprobs: bool = True,
        max_reference_chars: int = 32_000,
        max_tokens_per_item: int = 12,
        budget: JudgeBudget | None = None,
    ) -> None:
        if max_tokens_per_item < 1 or max_reference_chars < 1:
            raise ValueError("max_tokens_per_item and max_reference_chars must be at least 1")
        self.client = as_client(model, api_base, api_key)
        self.claims = claims
        self.logprobs = logprobs
        self.max_reference_chars = max_reference_chars
        self.max_tokens_per_item = max_tokens_per_item
        if budget is not None:
            self.limit_spend(SpendLedger(budget))

    def limit_spend(self, ledger: SpendLedger) -> None:
        """Hold this scorer's calls to `ledger` (shared with a monitor's judge and extractor);
        a refused call's scores fall back to the offline head. Raises `BudgetError` for a
        model it cannot price."""
        self.client.limit_spend(ledger)

    async def judge(self, request: CheckRequest, claims: Sequence[Claim]) -> JudgedRelevance:
        """One call for `request` (it has a question); never raises for a failed call."""
        references = request.references
        claim_texts = [claim.text for claim in claims] if self.claims else []
        messages, asked = relevance_messages(
            request.question or "",
            references,
            request.answer,
            claim_texts,
            new_nonce(),
            self.max_reference_chars,
        )
        items = asked.documents + asked.claims + 1
        extra = {"logprobs": True, "top_logprobs": _TOP_LOGPROBS} if self.logprobs else {}
        try:
            completion = await self.client.complete(
                messages,
                temperature=0.0,
                max_tokens=16 + self.max_tokens_per_item * items,
                extra=extra,
                role=ROLE,
            )
        except LLMCallError as exc:
            return self._failed(len(references), len(claims), asked, exc.kind, exc.usage)
        except Exception as exc:
            logger.exception("refcheck: the LLM relevance judge failed unexpectedly")
            return self._failed(len(references), len(claims), asked, type(exc).__name__)
        text = completion.texts[0] if completion.texts else ""
        positions = completion.logprobs[0] if completion.logprobs else []
        grades = read_grades(text, asked, positions)
        documents = [*grades.documents, *[None] * (len(references) - asked.documents)]
        scored_claims = [*grades.claims, *[None] * (len(claims) - asked.claims)]
        return JudgedRelevance(
            self.name,
            self.threshold,
            tuple(documents),
            tuple(scored_claims),
            grades.answer,
            self._fallbacks(asked, documents, scored_claims, grades.answer),
            completion.usage,
        )

    def _failed(
        self, references: int, claims: int, asked: Asked, kind: str, usage: Usage | None = None
    ) -> JudgedRelevance:
        """No call answered: every score falls back (all references: those left out of the
        prompt would have too; the claims only if they were asked)."""
        return JudgedRelevance(
            self.name,
            self.threshold,
            (None,) * references,
            (None,) * claims,
            None,
            fallbacks_for(references, asked.claims, True, kind),
            usage,
        )

    @staticmethod
    def _fallbacks(
        asked: Asked,
        documents: Sequence[float | None],
        claims: Sequence[float | None],
        answer: float | None,
    ) -> tuple[RelevanceFallback, ...]:
        """Why each asked score is None: not read in the reply, or its reference left out of
        the prompt. Claims not asked (`claims=False`) are the head's by choice: no fallback."""
        unread = fallbacks_for(
            [i for i, score in enumerate(documents[: asked.documents]) if score is None],
            [i for i, score in enumerate(claims[: asked.claims]) if score is None],
            answer is None,
            UNREADABLE,
        )
        left_out = fallbacks_for(range(asked.documents, len(documents)), [], False, LEFT_OUT)
        return (*unread, *left_out)
