"""What the relevance head sees of a (query, passage) pair: meaning, shared words, answer type.

- meaning: the static MiniLM cosine (`check.embedded.static_embeddings`) of the query to the
  whole passage and to its closest segment, and how well the query's tokens align with some
  passage token (a static BERTScore recall);
- shared words: the SIF-weighted share of the query's tokens the passage holds (rare words
  weigh more: an IDF-weighted overlap), its content words and bigrams;
- answer type (`answer_types`): the kind of answer the question asks for, and whether the
  passage holds one it does not already state;
- shape: the passage's and the query's length, and the share of the passage's content words
  the query lacks (an answer adds something to its question).

Passages are prepared once (`prepare_passages`) and scored against several queries (the
question, each claim, the answer). Imports numpy: loaded only when diagnostics first run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from refcheck_callbacks.check.embedded.static_embeddings import StaticEmbeddings, unit_rows
from refcheck_callbacks.check.relevance.answer_types import (
    ANSWER_TYPES,
    AnswerType,
    defines,
    expected_type,
    type_present,
)
from refcheck_callbacks.text.lexical import NEGATIONS, STOPWORDS, content_tokens, ngrams, tokens

SEGMENT_TOKENS = 64
"""A long reference is also judged by its closest window of this many tokens (about two
sentences), cut from its own token ids: no second tokenisation."""
MAX_PASSAGE_CHARS = 20_000
"""Relevance reads at most this much of a reference: the rest rarely changes the verdict, and
the cost stays bounded whatever a retriever returns."""

LEAD_CHARS = 60
"""The opening of a passage, where its subject is named."""

BASE_NAMES: tuple[str, ...] = (
    "cosine",
    "cosine_best_segment",
    "align",
    "idf_overlap",
    "content_overlap",
    "bigram_overlap",
    "novel_share",
    "log_passage_words",
    "log_query_words",
    "type_present",
    "defines",
    "leads_with_query_words",
    *(f"type_{kind.value}" for kind in ANSWER_TYPES),
    *(f"present_{kind.value}" for kind in ANSWER_TYPES),
    "cosine_x_idf_overlap",
)
IN_CONTEXT = ("cosine", "cosine_best_segment", "align", "idf_overlap", "content_overlap")
"""Signals also given against the best of the other passages retrieved with this one: the
question's own difficulty cancels out, and "closest of what was retrieved" is what ranks."""
FEATURE_NAMES: tuple[str, ...] = (*BASE_NAMES, *(f"{name}_below_best" for name in IN_CONTEXT))
_CONTEXT_COLUMNS = [BASE_NAMES.index(name) for name in IN_CONTEXT]


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage, tokenised and embedded once for every query it is scored against."""

    text: str
    ids: Any
    vector: Any
    weighted_sum: Any
    """`vector` before its normalisation: the sums of texts joined add up
    (`claim_context_cosines`)."""
    segment_vectors: Any
    token_vectors: Any
    words: frozenset[str]
    content: frozenset[str]
    bigrams: frozenset[tuple[str, ...]]
    word_count: int


def prepare_passages(
    texts: Sequence[str], static: StaticEmbeddings, checked: Any = None
) -> list[Passage]:
    """Each text tokenised once (one batch), embedded whole and by windows of its tokens; or,
    given the embedded checker's `PreparedReferences` of the same texts (`checked`), from its
    token ids and segment vectors, with no tokenisation at all."""
    clipped = [text[:MAX_PASSAGE_CHARS] for text in texts]
    if checked is None:
        ids = static.token_ids(clipped)
        sums = static.weighted_sums(ids)
        vectors = unit_rows(sums)
        windows = [
            _windows(text_ids, vector, static)
            for text_ids, vector in zip(ids, vectors, strict=True)
        ]
    else:
        ids, sums, windows = _from_checked(len(texts), checked, static)
        vectors = unit_rows(sums)
    out = []
    rows = zip(clipped, ids, vectors, sums, windows, strict=True)
    for text, text_ids, vector, weighted_sum, segment_vectors in rows:
        words = tokens(text)
        distinct = np.unique(text_ids)
        out.append(
            Passage(
                text=text,
                ids=distinct,
                vector=vector,
                weighted_sum=weighted_sum,
                segment_vectors=segment_vectors,
                token_vectors=static.exact_vectors(distinct),
                words=frozenset(words),
                content=frozenset(w for w in words if w not in STOPWORDS and w not in NEGATIONS),
                bigrams=frozenset(ngrams(words, 2)),
                word_count=len(words),
            )
        )
    return out


def _windows(ids: Any, vector: Any, static: StaticEmbeddings) -> Any:
    windows = [ids[start : start + SEGMENT_TOKENS] for start in range(0, len(ids), SEGMENT_TOKENS)]
    return static.embed(windows) if len(windows) > 1 else vector[None, :]


def _from_checked(count: int, checked: Any, static: StaticEmbeddings) -> tuple[Any, Any, Any]:
    """Per reference: its token ids, weighted sum and segment vectors, from the checker's
    segments."""
    rows: list[list[int]] = [[] for _ in range(count)]
    for row, segment in enumerate(checked.segments):
        rows[segment.reference_index].append(row)
    empty: Any = np.zeros(0, dtype=np.int32)
    ids = [
        np.concatenate([checked.segment_ids[r] for r in chosen]) if chosen else empty
        for chosen in rows
    ]
    sums = static.weighted_sums(ids)
    vectors = unit_rows(sums)
    windows = [
        checked.segment_vectors[chosen] if chosen else vector[None, :]
        for chosen, vector in zip(rows, vectors, strict=True)
    ]
    return ids, sums, windows


def _share(wanted: set[Any] | frozenset[Any], available: frozenset[Any]) -> float:
    return len(wanted & available) / len(wanted) if wanted else 0.0


def in_context(base: Any) -> Any:
    """`base` rows (one query against the passages retrieved together) with each `IN_CONTEXT`
    signal's distance below the best passage's appended: the full `FEATURE_NAMES` rows."""
    if len(base) == 0:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    chosen = base[:, _CONTEXT_COLUMNS]
    return np.concatenate([base, chosen - chosen.max(axis=0)], axis=1).astype(np.float32)


def query_features(query: str, passages: Sequence[Passage], static: StaticEmbeddings) -> Any:
    """A (len(passages), len(FEATURE_NAMES)) float32 array for `query` against each passage."""
    return in_context(base_features(query, passages, static))


def base_features(query: str, passages: Sequence[Passage], static: StaticEmbeddings) -> Any:
    """A (len(passages), len(BASE_NAMES)) float32 array: each passage on its own."""
    out: Any = np.zeros((len(passages), len(BASE_NAMES)), dtype=np.float32)
    if not passages:
        return out
    query_ids = static.token_ids([query])[0]
    vector = static.embed([query_ids])[0]
    distinct = np.unique(query_ids)
    weights = static.weights[distinct].astype(np.float64)
    total = max(float(weights.sum()), 1e-9)
    query_vectors = static.exact_vectors(distinct)
    words = tokens(query)
    content, bigrams = set(content_tokens(query)), ngrams(words, 2)
    kind = expected_type(query)
    kinds = [float(kind is k) for k in ANSWER_TYPES]
    for row, passage in enumerate(passages):
        cosine = float(passage.vector @ vector)
        if len(distinct) and len(passage.ids):
            best = (query_vectors @ passage.token_vectors.T).max(axis=1)
            align = float(best @ weights) / total
            held = np.isin(distinct, passage.ids)
            idf = float(weights[held].sum()) / total
        else:
            align = idf = 0.0
        present = type_present(kind, query, passage.text)
        out[row] = [
            cosine,
            float((passage.segment_vectors @ vector).max()),
            align,
            idf,
            _share(content, passage.content),
            _share(bigrams, passage.bigrams),
            1.0 - _share(set(passage.content), frozenset(content)) if passage.content else 0.0,
            math.log1p(passage.word_count),
            math.log1p(len(words)),
            present,
            defines(passage.text),
            _share(content, frozenset(content_tokens(passage.text[:LEAD_CHARS]))),
            *kinds,
            *(present * k for k in kinds),
            cosine * idf,
        ]
    return out


def claim_context_cosines(
    question: str, claims: Sequence[Passage], static: StaticEmbeddings
) -> Any:
    """Each claim's static cosine to the question joined with the answer's other claims (the
    claim itself left out, by subtracting its weighted sum: only the question is tokenised)."""
    if not claims:
        return np.zeros(0)
    question_sum = static.weighted_sums(static.token_ids([question]))[0]
    claim_sums = np.stack([claim.weighted_sum for claim in claims])
    contexts = unit_rows(question_sum + claim_sums.sum(axis=0) - claim_sums)
    return (unit_rows(claim_sums) * contexts).sum(axis=1)


__all__ = [
    "BASE_NAMES",
    "FEATURE_NAMES",
    "AnswerType",
    "Passage",
    "claim_context_cosines",
    "prepare_passages",
    "query_features",
]
