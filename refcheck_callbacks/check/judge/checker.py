"""LLM judges via litellm: RefChecker's LLM checker, ChainPoll's k polls, FAVA's error types,
and fine-tuned checker LLMs (Bespoke-MiniCheck, Granite Guardian) through their presets.

Claims of one request share a prompt (joint checking) or get one each. With `polls=k` every
prompt is answered k times (one request with `n=k` where the endpoint supports it); the label
is the majority vote, the vote shares are the confidence and probabilities, and the reasoning
of a winning poll is the explanation. A claim no poll labelled is a judge error in its verdict
(`label=None`, `error=...`), which the pipeline reports as a partial or failed check. A preset
(`judge.presets`) replaces the prompt and the parsing with the model's published ones.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

from refcheck_callbacks.check.fallback import BudgetFallback
from refcheck_callbacks.check.judge.parse import Judgement, parse_judgements
from refcheck_callbacks.check.judge.preset_calls import preset_verdict
from refcheck_callbacks.check.judge.presets import PRESETS, JudgePreset
from refcheck_callbacks.check.judge.prompt import JudgeMode, judge_messages
from refcheck_callbacks.llm.budget import JudgeBudget, SpendLedger
from refcheck_callbacks.llm.client import Completion, LLMCallError, LLMClient, as_client
from refcheck_callbacks.llm.data_blocks import new_nonce
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CharSpan, CheckItem, Evidence, Label, Usage, Verdict

_SEVERITY = {Label.ENTAILMENT: 0, Label.NEUTRAL: 1, Label.CONTRADICTION: 2}
"""Ties between labels go to the more severe one: a monitor should not hide a possible error."""


def split_usage(usage: Usage, parts: int) -> list[Usage]:
    """A call's usage shared among the claims it judged, so the per-request sums stay exact.

    Tokens are divided evenly (the remainder goes to the first claim); the request count and
    the spend by model (`by_model`, for the metrics) go to the first claim only; the cost is
    divided evenly.
    """
    prompt, completion = divmod(usage.prompt_tokens, parts), divmod(usage.completion_tokens, parts)
    cost = None if usage.cost_usd is None else usage.cost_usd / parts
    return [
        Usage(
            prompt_tokens=prompt[0] + (prompt[1] if i == 0 else 0),
            completion_tokens=completion[0] + (completion[1] if i == 0 else 0),
            requests=usage.requests if i == 0 else 0,
            cost_usd=cost,
            by_model=usage.by_model if i == 0 else (),
        )
        for i in range(parts)
    ]


def _preset(
    name: str | None, polls: int, mode: JudgeMode, hallucination_types: bool
) -> JudgePreset | None:
    if name is None:
        return None
    preset = PRESETS.get(name)
    if preset is None:
        raise ValueError(f"unknown judge preset {name!r}; known: {', '.join(PRESETS)}")
    if polls != 1 or mode is not JudgeMode.ADHERENCE or hallucination_types:
        raise ValueError(
            f"the {preset.title} preset judges adherence to the references with its own prompt "
            "and one answer: polls, mode='correctness' and hallucination_types do not apply"
        )
    return preset


def _vote(judgements: Sequence[Judgement]) -> tuple[Label, dict[Label, float]]:
    votes = Counter(j.label for j in judgements if j.label is not None)
    winner = max(votes, key=lambda label: (votes[label], _SEVERITY[label]))
    valid = sum(votes.values())
    return winner, {label: votes.get(label, 0) / valid for label in Label}


class LLMChecker:
    """Labels claims with an LLM judge.

    Args:
        model: a litellm model name (for a vLLM / OpenAI-compatible server use
            "openai/<served-model-name>" or "hosted_vllm/..." with `api_base`), or a ready
            `LLMClient` for deadlines, retries, concurrency and completion options (one client
            can be shared with an `LLMExtractor`, sharing its concurrency limit).
        api_base, api_key: the endpoint, when `model` is a name.
        joint: judge all claims of a request in one prompt (up to `max_claims_per_prompt`);
            False sends one prompt per claim.
        polls: how many times each prompt is answered (ChainPoll uses 5); the vote shares
            become the confidence.
        mode: "adherence" (supported by the references; RAG) or "correctness" (true of the
            world; references are not sent and not required).
        hallucination_types: also ask for FAVA's hallucination type of each non-entailed
            claim, and a suggested replacement for entity and relation errors.
        poll_temperature: sampling temperature when `polls > 1` (a single poll uses 0).
        max_reference_chars: the documents' share of a prompt, in characters.
        preset: a fine-tuned checker LLM's published prompt and answer ("bespoke-minicheck",
            "granite-guardian"; see `judge.presets`): one call per claim (and per chunk of
            long references), P(supported) from the answer's log-probabilities. Presets judge
            adherence to the references, one poll, no hallucination types.
        budget: a hard cap on this judge's spend (`JudgeBudget`: USD and / or tokens per
            rolling window); a call it cannot hold is not sent, and its claims go to the
            budget's fallback checker. A monitor's `judge_budget` sets one for its judge and
            LLM extractor together (`limit_spend`).
    """

    def __init__(
        self,
        model: str | LLMClient,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        joint: bool = True,
        polls: int = 1,
        mode: str | JudgeMode = JudgeMode.ADHERENCE,
        hallucination_types: bool = False,
        poll_temperature: float = 0.7,
        max_claims_per_prompt: int = 16,
        max_reference_chars: int = 32_000,
        max_tokens_per_claim: int = 300,
        preset: str | None = None,
        budget: JudgeBudget | None = None,
    ) -> None:
        self.preset = _preset(preset, polls, JudgeMode(mode), hallucination_types)
        if polls < 1:
            raise ValueError("polls must be at least 1")
        if max_claims_per_prompt < 1:
            raise ValueError("max_claims_per_prompt must be at least 1")
        self.mode = JudgeMode(mode)
        self.joint = joint
        self.polls = polls
        self.hallucination_types = hallucination_types
        self.poll_temperature = poll_temperature
        self.max_claims_per_prompt = max_claims_per_prompt if joint else 1
        self.max_reference_chars = max_reference_chars
        self.max_tokens_per_claim = max_tokens_per_claim
        self.client = as_client(model, api_base, api_key)
        self.needs_references = self.mode is JudgeMode.ADHERENCE
        """A correctness judge checks claims against the world, not against references."""
        self.name = f"llm-{self.preset.name if self.preset else self.mode.value}"
        self._fallback: BudgetFallback | None = None
        if budget is not None:
            self.limit_spend(SpendLedger(budget))

    def limit_spend(self, ledger: SpendLedger) -> None:
        """Hold this judge's calls to `ledger`'s budget, with its fallback checker for the
        claims of a refused call. Raises `BudgetError` for a model it cannot price."""
        self.client.limit_spend(ledger)
        self._fallback = BudgetFallback(ledger.budget.fallback_checker)

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        verdicts = await self._judged(items)
        if self._fallback is None:
            return verdicts
        return await self._fallback.recheck(items, verdicts)

    async def _judged(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if self.preset is not None:
            preset = self.preset
            return list(
                await asyncio.gather(*(preset_verdict(self.client, preset, i) for i in items))
            )
        prompts = self._prompts(items)
        results = await asyncio.gather(*(self._judge(group) for group in prompts))
        verdicts: list[Verdict | None] = [None] * len(items)
        for judged in results:
            for index, verdict in judged:
                verdicts[index] = verdict
        return [v for v in verdicts if v is not None]

    def _prompts(self, items: Sequence[CheckItem]) -> list[list[tuple[int, CheckItem]]]:
        """Items grouped by request, in chunks of at most `max_claims_per_prompt`."""
        by_request: dict[str, list[tuple[int, CheckItem]]] = {}
        for index, item in enumerate(items):
            by_request.setdefault(item.request_id, []).append((index, item))
        size = self.max_claims_per_prompt
        return [
            group[start : start + size]
            for group in by_request.values()
            for start in range(0, len(group), size)
        ]

    async def _judge(self, group: list[tuple[int, CheckItem]]) -> list[tuple[int, Verdict]]:
        """Verdicts for one prompt's claims; every failure becomes an error verdict."""
        first = group[0][1]
        claims = [item.claim.text for _, item in group]
        messages = judge_messages(
            claims,
            first.references,
            first.question,
            self.mode,
            self.hallucination_types,
            new_nonce(),
            self.max_reference_chars,
        )
        temperature = self.poll_temperature if self.polls > 1 else 0.0
        try:
            completion = await self.client.complete(
                messages,
                n=self.polls,
                temperature=temperature,
                max_tokens=200 + self.max_tokens_per_claim * len(group),
            )
        except LLMCallError as exc:
            return self._failed(group, f"judge call failed: {exc}", exc.usage, exc.kind)
        except Exception as exc:
            logger.exception("refcheck: the LLM judge failed unexpectedly")
            kind = type(exc).__name__
            return self._failed(group, f"judge failed: {kind}: {exc}", Usage(), kind)
        usages = split_usage(completion.usage, len(group))
        polls = self._parse(completion, len(group))
        return [
            (index, self._verdict(item, [poll[i] for poll in polls], usages[i]))
            for i, (index, item) in enumerate(group)
        ]

    @staticmethod
    def _parse(completion: Completion, count: int) -> list[list[Judgement]]:
        return [
            parse_judgements(text, count, truncated=reason == "length")
            for text, reason in zip(completion.texts, completion.finish_reasons, strict=True)
        ]

    def _failed(
        self, group: list[tuple[int, CheckItem]], error: str, usage: Usage, kind: str
    ) -> list[tuple[int, Verdict]]:
        usages = split_usage(usage, len(group))
        return [
            (index, Verdict(label=None, error=error, error_type=kind, usage=usages[i]))
            for i, (index, _) in enumerate(group)
        ]

    def _verdict(self, item: CheckItem, judgements: list[Judgement], usage: Usage) -> Verdict:
        labelled = [j for j in judgements if j.label is not None]
        if not labelled:
            errors = [j.error for j in judgements if j.error] or ["the judge returned no reply"]
            prefix = f"all {len(judgements)} polls failed: " if len(judgements) > 1 else ""
            return Verdict(label=None, error=prefix + errors[0], usage=usage)
        label, probabilities = _vote(labelled)
        chosen = next(j for j in labelled if j.label is label)
        return Verdict(
            label=label,
            confidence=probabilities[label],
            probabilities=probabilities,
            evidence=self._evidence(item, chosen, probabilities[label]),
            explanation=chosen.reasoning,
            hallucination_type=chosen.hallucination_type if self.hallucination_types else None,
            suggestion=chosen.suggestion if self.hallucination_types else None,
            usage=usage,
        )

    def _evidence(self, item: CheckItem, judgement: Judgement, share: float) -> list[Evidence]:
        """The documents the judge cited (whole documents: it does not quote spans)."""
        if self.mode is not JudgeMode.ADHERENCE:
            return []
        evidence = []
        for number in dict.fromkeys(judgement.documents):
            if 1 <= number <= len(item.references):
                reference = item.references[number - 1]
                evidence.append(
                    Evidence(
                        reference_index=number - 1,
                        reference_id=reference.id,
                        span=CharSpan(start=0, end=len(reference.text)),
                        probability=share,
                    )
                )
        return evidence
