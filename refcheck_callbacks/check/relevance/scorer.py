"""Relevance scores in [0, 1] from the shipped head over `features.FEATURE_NAMES`.

The static token table is the embedded checker's own (`shipped_static`, loaded once per
process and shared), so diagnostics add no model and no torch to the default pipeline.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from refcheck_callbacks.check.relevance import features
from refcheck_callbacks.check.relevance.head import HEAD_PATH, RelevanceHead, load_head


@functools.lru_cache(maxsize=1)
def shipped_static() -> Any:
    """The embedded checker's shipped static MiniLM table with the bundled tokenizer."""
    from refcheck_callbacks.check.embedded import model as embedded_model
    from refcheck_callbacks.check.embedded.static_embeddings import (
        StaticEmbeddings,
        load_tokenizer,
    )
    from refcheck_callbacks.embeddings.minilm import bundled_minilm_path

    _, arrays = embedded_model.load_model()
    return StaticEmbeddings.from_arrays(arrays, load_tokenizer(bundled_minilm_path()))


class EmbeddedRelevance:
    """Scores passages against a query with the learned head (numpy only, thread-safe)."""

    name = "embedded"

    def __init__(self, head_path: Path = HEAD_PATH, static: Any = None) -> None:
        self._head_path = head_path
        self._static = static
        self._head: RelevanceHead | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[RelevanceHead, Any]:
        with self._lock:
            if self._head is None:
                self._head = load_head(self._head_path)
                if self._head.feature_names != features.FEATURE_NAMES:
                    raise ValueError(
                        "the relevance head was trained on other features than this version "
                        "computes; retrain it (python -m refcheck_callbacks.training."
                        "relevance_training)"
                    )
            if self._static is None:
                self._static = shipped_static()
            return self._head, self._static

    @property
    def threshold(self) -> float:
        return self._load()[0].threshold

    def prepare(self, texts: Sequence[str]) -> list[features.Passage]:
        """Passages prepared once for several `score` calls (from what the embedded checker
        prepared of the same texts, when it just did: `check.embedded.recent`)."""
        from refcheck_callbacks.check.embedded import recent

        _, static = self._load()
        checked = recent.recall(texts) if static is shipped_static() else None
        return features.prepare_passages(texts, static, checked)

    def claim_scores(self, question: str, claims: Sequence[features.Passage]) -> list[float]:
        """Each claim's relevance to the question, read with the rest of its answer: the
        question alone says little of what a long answer's claims should cover, the other
        claims do (a claim far from them and from the question is a digression). Leaving the
        claim itself out keeps a one-claim answer from judging itself. A logistic of the static
        cosine (`RelevanceHead.claim_probability`), fitted on ExpertQA's judgements."""
        if not claims:
            return []
        head, static = self._load()
        cosines = features.claim_context_cosines(question, claims, static)
        return [float(p) for p in head.claim_probability(cosines)]

    def score(self, query: str, passages: Sequence[features.Passage]) -> list[float]:
        """The relevance of each passage to `query`, among the others."""
        return self.scores(query, passages)[0]

    def scores(
        self, query: str, passages: Sequence[features.Passage]
    ) -> tuple[list[float], list[float]]:
        """Each passage's relevance among the others (what ranks them) and alone (what the
        cause rule reads: the best of several topical passages is not thereby relevant)."""
        if not passages:
            return [], []
        head, static = self._load()
        base = features.base_features(query, passages, static)
        among = features.in_context(base)
        alone = np.concatenate([base, np.zeros((len(base), len(features.IN_CONTEXT)))], axis=1)
        return (
            [float(p) for p in head.probability(among)],
            [float(p) for p in head.probability(alone)],
        )
