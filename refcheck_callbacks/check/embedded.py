"""The offline default checker: MiniLM evidence retrieval plus lexical signals.

No network, no key, no GPU. For each claim it finds the reference sentences closest in
meaning (bundled MiniLM), then reads lexical signals between the claim and that evidence:
content-word coverage, numbers the evidence states differently, a flipped negation. A small
fixed scoring turns those into E / N / C probabilities. It is an honest baseline: it catches
changed numbers and negations and unsupported additions, not paraphrased contradictions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.check.base import SyncChecker
from refcheck_callbacks.check.encoder import SentenceEncoder
from refcheck_callbacks.check.lexical import copy_rate, coverage, has_negation, numbers
from refcheck_callbacks.text import sentence_spans
from refcheck_callbacks.types import CharSpan, CheckItem, Evidence, Label, Reference, Verdict

_TOP_K = 3


@dataclass(frozen=True, slots=True)
class _Sentence:
    reference_index: int
    start: int
    end: int
    text: str


def _reference_sentences(references: Sequence[Reference]) -> list[_Sentence]:
    return [
        _Sentence(index, start, end, reference.text[start:end])
        for index, reference in enumerate(references)
        for start, end in sentence_spans(reference.text)
    ]


def _softmax(logits: dict[Label, float]) -> dict[Label, float]:
    top = max(logits.values())
    exps = {label: math.exp(value - top) for label, value in logits.items()}
    total = sum(exps.values())
    return {label: value / total for label, value in exps.items()}


def _probabilities(
    claim: str, best: _Sentence, top: list[_Sentence], sim: float
) -> dict[Label, float]:
    evidence_texts = [s.text for s in top]
    support = 0.5 * sim + 0.5 * coverage(claim, evidence_texts)
    evidence_numbers = numbers(" ".join(evidence_texts))
    # The evidence talks in figures, and the claim's figure is not among them.
    number_conflict = bool(numbers(claim) - evidence_numbers) and bool(evidence_numbers)
    negation_conflict = has_negation(claim) != has_negation(best.text) and (
        copy_rate(claim, best.text, 1) > 0.5
    )
    conflict = number_conflict or negation_conflict
    return _softmax(
        {
            Label.ENTAILMENT: 10.0 * (support - 0.62) - (5.0 if conflict else 0.0),
            Label.CONTRADICTION: 6.0 * (sim - 0.45) + 1.0 if conflict else -3.0,
            Label.NEUTRAL: 0.0,
        }
    )


class EmbeddedChecker(SyncChecker):
    """Offline checker on the bundled MiniLM encoder; see the module docstring."""

    name = "embedded"

    def __init__(self, encoder: SentenceEncoder | None = None) -> None:
        self._encoder = encoder

    @property
    def encoder(self) -> SentenceEncoder:
        if self._encoder is None:
            self._encoder = SentenceEncoder()
        return self._encoder

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        sentences_by_request: dict[str, list[_Sentence]] = {}
        for item in items:
            if item.request_id not in sentences_by_request:
                sentences_by_request[item.request_id] = _reference_sentences(item.references)
        texts = [item.claim.text for item in items] + [
            s.text for sentences in sentences_by_request.values() for s in sentences
        ]
        vectors = self.encoder.encode(texts)
        row_of = {text: row for row, text in enumerate(texts)}
        return [
            self._verdict(item, sentences_by_request[item.request_id], vectors, row_of)
            for item in items
        ]

    def _verdict(
        self,
        item: CheckItem,
        sentences: list[_Sentence],
        vectors: Any,
        row_of: dict[str, int],
    ) -> Verdict:
        if not sentences:
            return Verdict(label=Label.NEUTRAL, confidence=1.0, explanation="no reference text")
        claim_vector = vectors[row_of[item.claim.text]]
        sims = vectors[[row_of[s.text] for s in sentences]] @ claim_vector
        order = sims.argsort()[::-1][:_TOP_K]
        top = [sentences[i] for i in order]
        best, sim = top[0], float(sims[order[0]])
        probabilities = _probabilities(item.claim.text, best, top, sim)
        label = max(probabilities, key=probabilities.__getitem__)
        return Verdict(
            label=label,
            confidence=probabilities[label],
            probabilities=probabilities,
            evidence=[
                Evidence(
                    reference_index=best.reference_index,
                    reference_id=item.references[best.reference_index].id,
                    span=CharSpan(start=best.start, end=best.end),
                    probability=probabilities[label],
                )
            ],
        )
