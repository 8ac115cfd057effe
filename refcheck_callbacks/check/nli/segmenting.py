"""An NLI model's reference segments: in its family's unit (tokens, or words for the families
whose authors chunk by words), each distinct reference text split once and cached.

The default is the family's published chunk size without overlap; for other classifiers half
of `max_length` (at most 256) with an eighth of that as overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from refcheck_callbacks.check.nli.families import ModelFamily
from refcheck_callbacks.check.segments import segment_text
from refcheck_callbacks.support.lru import LRU, digest
from refcheck_callbacks.text.spans import count_words, sentence_spans


class ReferenceSegments:
    """Segment spans of reference texts for one model (`spans`), and token counts."""

    def __init__(
        self,
        tokenizer: Any,
        family: ModelFamily,
        max_length: int,
        size: int | None = None,
        overlap: int | None = None,
    ) -> None:
        chunk = family.chunk
        self.in_words = chunk is not None and chunk.unit == "words"
        self.size = size or (chunk.size if chunk else min(256, max_length // 2))
        if not self.in_words and self.size >= max_length:
            raise ValueError(f"segment_tokens must be below max_length ({max_length})")
        default_overlap = chunk.overlap if chunk else self.size // 8
        self.overlap = default_overlap if overlap is None else overlap
        self._tokenizer = tokenizer
        self._cache: LRU[bytes, tuple[tuple[int, int], ...]] = LRU(4096)

    def spans(self, texts: Iterable[str]) -> dict[str, tuple[tuple[int, int], ...]]:
        """Segment spans of each distinct reference text; each text is split once, then cached.

        In token units, the sentences of every uncached text are counted in one tokenizer call:
        one call per sentence cost more than the split itself.
        """
        spans: dict[str, tuple[tuple[int, int], ...]] = {}
        missing: list[str] = []
        for text in texts:
            cached = self._cache.get(digest(text))
            if cached is None:
                missing.append(text)
            else:
                spans[text] = cached
        counts = (
            {}
            if self.in_words
            else self.token_counts([text[a:b] for text in missing for a, b in sentence_spans(text)])
        )
        for text in missing:
            spans[text] = tuple(
                (s.start, s.end)
                for s in segment_text(
                    text,
                    max_tokens=self.size,
                    overlap_tokens=self.overlap,
                    count_tokens=count_words
                    if self.in_words
                    # Pieces of an over-long sentence are not among the pre-counted sentences.
                    else lambda t: counts[t] if t in counts else self.count_tokens(t),
                )
            )
            self._cache.put(digest(text), spans[text])
        return spans

    def token_counts(self, texts: Sequence[str]) -> dict[str, int]:
        """Tokens in each distinct text (no special tokens), from one batched tokenizer call."""
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return {}
        # verbose=False: counting a long reference is not feeding it to the model.
        ids = self._tokenizer(distinct, add_special_tokens=False, verbose=False)["input_ids"]
        return {text: len(row) for text, row in zip(distinct, ids, strict=True)}

    def count_tokens(self, text: str) -> int:
        return self.token_counts([text])[text]
