"""LLM claim extraction: RefChecker's claim-triplets (or short sub-sentence claims) via litellm.

One extraction request per answer, all answers of a batch concurrently (bounded by the
client). Every failure stays with its answer as `Extraction.error`: an unreadable reply is a
failed extraction, never an answer without claims; only the model's explicit "no claims"
marker makes an answer abstain.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

from refcheck_callbacks.contract.components import Extraction, Extractor, preload
from refcheck_callbacks.contract.registry import build_extractor
from refcheck_callbacks.extract.base import first_claims
from refcheck_callbacks.extract.triplet_prompt import (
    ClaimFormat,
    ExtractionReplyError,
    extraction_messages,
    parse_subsentences,
    parse_triplets,
)
from refcheck_callbacks.llm.budget import BUDGET_EXHAUSTED, JudgeBudget, SpendLedger
from refcheck_callbacks.llm.client import LLMCallError, LLMClient, as_client
from refcheck_callbacks.llm.data_blocks import new_nonce
from refcheck_callbacks.text.lexical import content_tokens, tokens
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.types import CharSpan, CheckRequest, Claim, Triplet

_MIN_SENTENCE_OVERLAP = 0.5
"""Share of a claim's content words a sentence must hold to be named as the claim's span."""


def locate_claims(claims: Sequence[str], answer: str) -> list[CharSpan | None]:
    """Where each claim sits in the answer: its exact text, else the sentence that covers it
    best.

    Triplets and rewritten claims rarely appear verbatim, so the fallback is the answer
    sentence holding the largest share of the claim's content words (at least half of them;
    the first such sentence on a tie). The answer is split into sentences and its words
    indexed once for all its claims, so a claim costs only the sentences it shares words with.
    """
    lowered = _lower_in_place(answer)
    sentences = sentence_spans(answer) if claims else []
    index: dict[str, list[int]] | None = None
    spans: list[CharSpan | None] = []
    for claim in claims:
        start = lowered.find(_lower_in_place(claim))
        if start >= 0:
            spans.append(CharSpan(start=start, end=start + len(claim)))
            continue
        if index is None:
            index = _sentences_by_word(answer, sentences)
        spans.append(_best_sentence(set(content_tokens(claim)), index, sentences))
    return spans


_DOTTED_CAPITAL_I = str.maketrans({"\u0130": "i"})


def _lower_in_place(text: str) -> str:
    """The text lower-cased character by character, so offsets into it are offsets into the
    text. U+0130 ("İ") is the one character whose `lower()` is two characters ("i" and a
    combining dot): it folds to "i", so "İstanbul" is found as "istanbul"."""
    return text.translate(_DOTTED_CAPITAL_I).lower()


def _sentences_by_word(answer: str, sentences: Sequence[tuple[int, int]]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for number, (start, end) in enumerate(sentences):
        for word in set(tokens(answer[start:end])):
            index.setdefault(word, []).append(number)
    return index


def _best_sentence(
    wanted: set[str], index: dict[str, list[int]], sentences: Sequence[tuple[int, int]]
) -> CharSpan | None:
    shared: Counter[int] = Counter()
    for word in wanted:
        shared.update(index.get(word, ()))
    if not shared:
        return None
    best = max(shared, key=lambda number: (shared[number], -number))
    if shared[best] / len(wanted) < _MIN_SENTENCE_OVERLAP:
        return None
    return CharSpan(start=sentences[best][0], end=sentences[best][1])


def locate_claim(claim: str, answer: str) -> CharSpan | None:
    """Where one claim sits in the answer (see `locate_claims`)."""
    return locate_claims([claim], answer)[0]


def _unique(texts: Sequence[str]) -> list[int]:
    """Indices of the first occurrence of each text, compared case- and space-insensitively."""
    seen: set[str] = set()
    keep = []
    for index, text in enumerate(texts):
        key = " ".join(text.lower().split())
        if key not in seen:
            seen.add(key)
            keep.append(index)
    return keep


class LLMExtractor:
    """Extracts claims from answers with an LLM, conditioned on the question.

    Args:
        model: a litellm model name (for a vLLM / OpenAI-compatible server use
            "openai/<served-model-name>" or "hosted_vllm/..." with `api_base`), or a ready
            `LLMClient` for deadlines, retries, concurrency and completion options.
        api_base, api_key: the endpoint, e.g. "http://vllm:8000/v1", when `model` is a name.
        claim_format: "triplet" (RefChecker's (subject, predicate, object), the default) or
            "subsentence" (short self-contained sentences).
        max_claims: claims kept per answer, in the answer's order.
        max_tokens: the longest extraction reply.
        budget: a hard cap on this extractor's spend (`JudgeBudget`); an answer whose call it
            cannot hold is extracted by the budget's fallback extractor instead (noted on the
            result). A monitor's `judge_budget` sets one for its judge and extractor together.
    """

    def __init__(
        self,
        model: str | LLMClient,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        claim_format: str | ClaimFormat = ClaimFormat.TRIPLET,
        max_claims: int = 64,
        max_tokens: int = 1024,
        budget: JudgeBudget | None = None,
    ) -> None:
        self.claim_format = ClaimFormat(claim_format)
        self.max_claims = max_claims
        self.max_tokens = max_tokens
        self.client = as_client(model, api_base, api_key)
        self.name = f"llm-{self.claim_format.value}"
        self._fallback: Extractor | None = None
        if budget is not None:
            self.limit_spend(SpendLedger(budget))

    def limit_spend(self, ledger: SpendLedger) -> None:
        """Hold this extractor's calls to `ledger`'s budget, with its fallback extractor for
        the answers of a refused call. Raises `BudgetError` for a model it cannot price."""
        self.client.limit_spend(ledger)
        self._fallback = build_extractor(ledger.budget.fallback_extractor)
        preload(self._fallback)

    async def extract(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        return list(await asyncio.gather(*(self._extract_one(r) for r in requests)))

    async def _extract_one(self, request: CheckRequest) -> Extraction:
        messages = extraction_messages(
            request.question, request.answer, self.claim_format, new_nonce()
        )
        try:
            completion = await self.client.complete(
                messages, max_tokens=self.max_tokens, role="extractor"
            )
        except LLMCallError as exc:
            if exc.kind == BUDGET_EXHAUSTED and self._fallback is not None:
                return await self._fall_back(request, exc)
            return Extraction(
                error=f"claim extraction failed: {exc}", error_type=exc.kind, usage=exc.usage
            )
        reply = completion.texts[0] if completion.texts else ""
        cut = f"the extraction reply was cut off at max_tokens={self.max_tokens}"
        truncated = completion.finish_reasons[:1] == ["length"]
        try:
            claims, notes = self._claims(reply, request)
        except ExtractionReplyError as exc:
            error = f"{exc} ({cut})" if truncated else str(exc)
            return Extraction(error=error, error_type="unparseable", usage=completion.usage)
        if truncated:
            # The complete claims of a cut-off reply are still worth checking; the result says
            # some are missing.
            notes.append(f"{cut}: claims after the cut were not checked")
        return Extraction(claims=claims, usage=completion.usage, notes=notes)

    async def _fall_back(self, request: CheckRequest, exc: LLMCallError) -> Extraction:
        """The fallback extractor's claims for an answer the budget refused to send."""
        assert self._fallback is not None
        [extraction] = await self._fallback.extract([request])
        note = f"{BUDGET_EXHAUSTED}: claims extracted by {self._fallback.name}, not {self.name}"
        usage = exc.usage if extraction.usage is None else exc.usage + extraction.usage
        return extraction.model_copy(update={"usage": usage, "notes": [*extraction.notes, note]})

    def _claims(self, reply: str, request: CheckRequest) -> tuple[list[Claim], list[str]]:
        """The reply's claims, the first `max_claims` of them, and the note of any cut."""
        if self.claim_format is ClaimFormat.TRIPLET:
            triplets: list[Triplet | None] = list(parse_triplets(reply))
            texts = [t.as_text() for t in triplets if t is not None]
        else:
            texts = parse_subsentences(reply)
            triplets = [None] * len(texts)
        notes: list[str] = []
        keep = first_claims(_unique(texts), self.max_claims, notes)
        spans = locate_claims([texts[i] for i in keep], request.answer)
        claims = [
            Claim(text=texts[i], triplet=triplets[i], span=span)
            for i, span in zip(keep, spans, strict=True)
        ]
        return claims, notes
