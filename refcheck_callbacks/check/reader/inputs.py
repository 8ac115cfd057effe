"""What the reader reads: the claim (a short one with its question), then its best evidence.

Training and checking build the model's input here, with the same code, so a trained reader
sees at check time exactly the kind of text it learned on:

- the claim: its text, and for a short claim (at most `SHORT_CLAIM_WORDS` words, what a short
  answer becomes with its question) the question in front, so "Sydney." is read as the answer
  to "What is the capital of Australia?";
- the evidence: the `EVIDENCE_SEGMENTS` reference segments the embedded checker ranks best for
  the claim (its static-vector similarity plus shared tokens, `embedded.features`), best
  first, joined into one text of about `MAX_LENGTH` tokens with the claim.

The pair goes to the tokenizer as (evidence, claim), the order of the NLI family's (chunk,
claim) pairs, truncated on the evidence only: the exported folder is a plain 3-way NLI
classifier, so `nli:PATH` loads and feeds it unchanged (one segment at a time). Best first
means truncation cuts the least relevant segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.check.segments import Segment
from refcheck_callbacks.embeddings.minilm import bundled_minilm_path
from refcheck_callbacks.support.extras import require

LABELS: dict[int, str] = {0: "entailment", 1: "neutral", 2: "contradiction"}
"""The reader's classes, as `config.id2label` names them (`check.nli.labels` reads them):
supported, not stated, conflicting."""
MAX_LENGTH = 256
"""Tokens per input: claim, evidence and special tokens."""
EVIDENCE_SEGMENTS = 3
"""Segments of evidence per claim (the embedded checker's own `TOP_EVIDENCE`)."""
SHORT_CLAIM_WORDS = 6
"""A claim of at most this many words is read with its question."""


def claim_input(claim: str, question: str | None) -> str:
    """The claim as the reader reads it: a short claim follows its question."""
    if question and len(claim.split()) <= SHORT_CLAIM_WORDS:
        return f"{question.strip()} {claim.strip()}"
    return claim


def evidence_input(segments: Sequence[Segment]) -> str:
    """The evidence as the reader reads it: the segments, best first, one text."""
    return " ".join(" ".join(segment.text.split()) for segment in segments)


@dataclass(frozen=True)
class RankedReferences:
    """A request's references prepared once for ranking all its claims' evidence."""

    prepared: Any
    """`embedded.features.PreparedReferences`."""

    @property
    def segments(self) -> list[Segment]:
        segments: list[Segment] = self.prepared.segments
        return segments


class EvidenceRanker:
    """The embedded checker's ranking of reference segments, with its static token table.

    Loads numpy and the shipped table (no torch); building one costs about a second, so a
    checker keeps one.
    """

    def __init__(self) -> None:
        from refcheck_callbacks.check.embedded import features
        from refcheck_callbacks.check.embedded import model as embedded_model
        from refcheck_callbacks.check.embedded.static_embeddings import (
            StaticEmbeddings,
            load_tokenizer,
        )

        require("numpy", "embedded")
        _, arrays = embedded_model.load_model()
        self._features = features
        self._static = StaticEmbeddings.from_arrays(arrays, load_tokenizer(bundled_minilm_path()))

    def prepare(self, references: Sequence[str]) -> RankedReferences:
        return RankedReferences(self._features.prepare_references(list(references), self._static))

    def best(self, claim: str, references: RankedReferences) -> list[Segment]:
        """The claim's `EVIDENCE_SEGMENTS` best segments, best first (none without text)."""
        if not references.segments:
            return []
        found = self._features.claim_features(claim, references.prepared, self._static)
        return [references.segments[i] for i in found.evidence[:EVIDENCE_SEGMENTS]]
