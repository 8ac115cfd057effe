"""Judging a claim with an LLM preset: one call per chunk of its references, best chunk wins.

The calls of one claim run concurrently through the shared `LLMClient` (its concurrency limit,
deadline and retries apply to each). As in the presets' sources, the claim's support is the
highest P(supported) over the chunks; a chunk whose answer cannot be read (or whose call
failed) cannot make a claim unsupported, so the claim is then an error unless another chunk
supports it. The deciding chunk's segments are the evidence.
"""

from __future__ import annotations

import asyncio

from refcheck_callbacks.check.judge.presets import JudgePreset, Reading
from refcheck_callbacks.check.merge import segment_evidence
from refcheck_callbacks.check.segments import Segment
from refcheck_callbacks.llm.client import LLMCallError, LLMClient
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckItem, Label, Usage, Verdict


async def preset_verdict(client: LLMClient, preset: JudgePreset, item: CheckItem) -> Verdict:
    chunks = preset.chunks([reference.text for reference in item.references])
    if not chunks:
        return Verdict(label=Label.NEUTRAL, confidence=1.0, explanation="no reference text")
    calls = await asyncio.gather(*(_ask(client, preset, item.claim.text, c) for c in chunks))
    usage = sum((spent for _, spent in calls), Usage())
    readings = [reading for reading, _ in calls]
    scored = [(r.support, chunk) for r, chunk in zip(readings, chunks, strict=True)]
    known = [(support, chunk) for support, chunk in scored if support is not None]
    best = max(known, key=lambda pair: pair[0], default=None)
    errors = [r.error for r in readings if r.error]
    if best is None or (best[0] <= 0.5 and errors):
        kinds = {r.kind for r in readings if r.error}
        kind = kinds.pop() if len(kinds) == 1 else None
        error = errors[0] if errors else "no answer"
        return Verdict(label=None, error=error, error_type=kind, usage=usage)
    support, chunk = best
    return _verdict(preset, item, support, chunk, usage)


async def _ask(
    client: LLMClient, preset: JudgePreset, claim: str, chunk: list[Segment]
) -> tuple[Reading, Usage]:
    prompt = preset.prompt(claim, [segment.text for segment in chunk])
    try:
        completion = await client.complete(
            prompt.messages,
            temperature=0.0,
            max_tokens=preset.max_tokens,
            extra={**preset.request, **prompt.extra},
        )
    except LLMCallError as exc:
        return Reading(None, f"{preset.title} call failed: {exc}", exc.kind), exc.usage
    except Exception as exc:
        logger.exception("refcheck: the %s judge failed unexpectedly", preset.title)
        return Reading(None, f"{preset.title} failed: {type(exc).__name__}: {exc}"), Usage()
    if not completion.texts:
        return Reading(None, f"{preset.title} returned no answer"), completion.usage
    positions = completion.logprobs[0] if completion.logprobs else []
    return preset.read(completion.texts[0], positions), completion.usage


def _verdict(
    preset: JudgePreset, item: CheckItem, support: float, chunk: list[Segment], usage: Usage
) -> Verdict:
    label = Label.ENTAILMENT if support > 0.5 else Label.NEUTRAL
    probabilities = {Label.ENTAILMENT: support, Label.NEUTRAL: 1.0 - support}
    probabilities[Label.CONTRADICTION] = 0.0
    confidence = probabilities[label]
    return Verdict(
        label=label,
        confidence=confidence,
        probabilities=probabilities,
        evidence=[segment_evidence(s, item.references, confidence) for s in chunk],
        explanation=f"{preset.title}: P(supported) = {support:.3f}",
        usage=usage,
    )
