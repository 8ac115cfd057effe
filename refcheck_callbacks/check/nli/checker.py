"""NLI checker: a grounding model of a known family, batched across requests.

The model's family (`nli.families`: MiniCheck, HHEM, FactCG, AlignScore, any 2- or 3-way
classifier) is recognised from its name and config (`nli.recognise`), and decides the input
format, the chunk size and how a claim's chunk scores become its verdict (`nli.aggregation`).

RefChecker's NLI checker runs every (claim, segment) pair of one request in input order, in
fixed batches padded to the longest pair, in fp32. Here the engine's whole batch of requests
becomes one stream of pairs: references are split into segments of the family's chunk size
(the shared segmentation), optionally narrowed to the top-k segments per claim by MiniLM
similarity, deduplicated, looked up in an LRU cache, and only then tokenised (`nli.encoding`),
sorted by length and packed into batches by a token budget (`nli.pair_batching`). On CUDA the
model runs in bf16 (fp16 where bf16 is missing); on a CPU it can run in bf16 or with int8
matrix products; with `recheck_in_fp32`, pairs that reduced precision could mislabel are
re-scored in fp32 (see `nli.precision`).

    monitor = RefCheckMonitor(checker=NLIChecker(top_k_segments=4))  # DeBERTa-v3-large NLI
    monitor = RefCheckMonitor(checker=NLIChecker("lytang/MiniCheck-Flan-T5-Large"))
    monitor = RefCheckMonitor(checker=NLIChecker("/models/mc", family="minicheck-deberta"))
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refcheck_callbacks.check.base import SyncChecker
from refcheck_callbacks.check.merge import SegmentScore
from refcheck_callbacks.check.nli import aggregation
from refcheck_callbacks.check.nli.encoding import Encoded, Pair, PairEncoder
from refcheck_callbacks.check.nli.labels import LabelScheme
from refcheck_callbacks.check.nli.loading import (
    NLIDtype,
    describe,
    load,
    model_location,
    pick_device,
    pick_dtype,
    reduced,
)
from refcheck_callbacks.check.nli.pair_batching import TokenBudget, padded_length, run_packed
from refcheck_callbacks.check.nli.precision import TieGuard, recheck
from refcheck_callbacks.check.nli.preselection import closest_segments
from refcheck_callbacks.check.nli.recognise import named_family, recognise
from refcheck_callbacks.check.nli.scoring import Head, Row
from refcheck_callbacks.check.nli.segmenting import ReferenceSegments
from refcheck_callbacks.check.segments import Segment
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.support.extras import require
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.support.lru import LRU, digest
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.types import CheckItem, Label, Verdict

DEFAULT_NLI_MODEL = "MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli"
_MIN_PREMISE_TOKENS = 16
"""A claim must leave at least this much of `max_length` to the reference segment."""


@dataclass
class NLICounts:
    """What the checker did, cumulative: how much work deduplication and the cache saved."""

    pairs_requested: int = 0
    """(claim, segment) pairs the checked claims needed, duplicates included."""
    pairs_scored: int = 0
    """Pairs the model actually ran on."""
    cache_hits: int = 0
    oom_retries: int = 0
    """Batches halved after the device ran out of memory."""
    pairs_rechecked: int = 0
    """Scored pairs re-scored in fp32 (`recheck_in_fp32`): calibration, near-ties, audits."""


@dataclass(frozen=True)
class _ScoredClaim:
    units: list[str]
    segments: list[Segment]
    fits: bool
    """Every unit leaves the model room for a segment."""


@dataclass(frozen=True)
class _Scored:
    claims: list[_ScoredClaim]
    rows: Mapping[Pair, Row]


class NLIChecker(SyncChecker):
    """Labels claims with a grounding model of a known family; see the module docstring.

    Args:
        model: a hub name or a local directory, loaded with the family's `from_pretrained`.
        family: the model's family (`nli.families.FAMILIES`: "minicheck-roberta",
            "minicheck-deberta", "minicheck-flan-t5", "hhem", "factcg", "alignscore", "nli",
            "nli-binary"); None recognises it from the name and `config.json`, and a model
            that matches none is refused with what was found.
        device: "auto" (CUDA when available, else CPU) or any torch device string.
        dtype: "auto" (bf16 / fp16 on CUDA, fp32 elsewhere), "float32", "bfloat16", "float16"
            or "int8": on a CPU only, every linear layer dynamically quantized to int8 (see
            `nli.precision.quantized_int8`); CUDA is refused rather than silently given another
            precision, as its int8 kernels need other tooling and bf16 is its fast path.
        max_length: tokens per model input; the chunk is truncated, the claim never. Default:
            the family's (MiniCheck-RoBERTa 512, MiniCheck-DeBERTa / Flan-T5 and FactCG 2048),
            else the tokenizer's limit, at most 512.
        batch_tokens: padded tokens per model batch (rows x padded length). Default: 32k on
            CUDA, to fill the device (an out-of-memory error halves it); 8k elsewhere, where
            activations that stay in the CPU cache ran faster (32k: 30% slower on one thread).
        max_batch_size: rows per model batch.
        segment_tokens, segment_overlap_tokens: the reference segmentation, in the family's
            unit (tokens, or words for MiniCheck-Flan-T5, FactCG and AlignScore). Default: the
            family's published chunk size without overlap; for other classifiers half of
            max_length (at most 256) with an eighth of that as overlap.
        top_k_segments: check each claim against only its k most similar segments (bundled
            MiniLM); None checks every segment.
        encoder: the sentence encoder for preselection (shared with other components).
        labels: class index -> name, overriding the model's `config.id2label` (classifiers
            whose family does not fix the class order).
        cache_size: (claim, segment) results kept across calls; 0 turns the cache off.
        recheck_in_fp32: with a bf16 / fp16 / int8 dtype, keep an fp32 copy of the model and
            re-score in fp32 every pair whose two likeliest labels are close enough for the
            reduced precision to have swapped them (the margin is learned from this model's
            own pairs; see `nli.precision`). Labels then match fp32 unless a pair moves several
            times further than any pair measured; probabilities of pairs not re-scored keep
            the reduced precision's error, so of two segments that carry a claim's label with
            nearly equal probability either may be its evidence. Costs an fp32 model copy.

    The model loads here, so a wrong name, an unknown family, a missing extra or an
    unreadable label scheme fails when the checker is built, not in the background worker.
    """

    def __init__(
        self,
        model: str | Path = DEFAULT_NLI_MODEL,
        *,
        family: str | None = None,
        device: str = "auto",
        dtype: NLIDtype = "auto",
        max_length: int | None = None,
        batch_tokens: int | None = None,
        max_batch_size: int = 512,
        segment_tokens: int | None = None,
        segment_overlap_tokens: int | None = None,
        top_k_segments: int | None = None,
        encoder: SentenceEncoder | None = None,
        labels: Mapping[int, str] | None = None,
        cache_size: int = 100_000,
        recheck_in_fp32: bool = False,
    ) -> None:
        self._torch = require("torch", "nli")
        if top_k_segments is not None and top_k_segments <= 0:
            raise ValueError("top_k_segments must be positive (or None to check every segment)")
        if family is not None:
            named_family(family)  # an unknown name fails before anything is downloaded
        self.model_name = model_location(str(model))
        self.device = pick_device(device)
        self.dtype = pick_dtype(dtype, self.device)
        found = describe(self.model_name)
        self.family = recognise(found, family, labels)
        self.name = self.family.name
        loaded = load(self.model_name, self.family, found, labels)
        self.tokenizer = loaded.tokenizer
        self.scheme: LabelScheme = loaded.scheme
        if recheck_in_fp32 and self.dtype == self._torch.float32:
            raise ValueError(
                "recheck_in_fp32 needs a reduced-precision dtype (bfloat16, float16, int8)"
            )
        self._exact_model = (
            copy.deepcopy(loaded.model).to(device=self.device).eval() if recheck_in_fp32 else None
        )
        self.tie_guard = TieGuard() if recheck_in_fp32 else None
        self.model = reduced(loaded.model.eval(), self.device, self.dtype)
        self.head = Head(self.family.architecture, loaded.label_token_ids, loaded.decoder_start_id)
        self.max_length = (
            max_length or self.family.max_length or min(512, int(self.tokenizer.model_max_length))
        )
        self.pairs = PairEncoder(self.tokenizer, self.family, loaded.template, self.max_length)
        self._claim_limit = self.max_length - self.pairs.overhead() - _MIN_PREMISE_TOKENS
        if self._claim_limit <= 0:
            raise ValueError(f"max_length {self.max_length} leaves no room for a claim")
        self.segments = ReferenceSegments(
            self.tokenizer, self.family, self.max_length, segment_tokens, segment_overlap_tokens
        )
        self.segment_tokens = self.segments.size
        self.segment_overlap_tokens = self.segments.overlap
        self.segment_in_words = self.segments.in_words
        """The reference segmentation, in the family's unit (tokens, or words)."""
        self.top_k_segments = top_k_segments
        self._encoder = encoder
        on_cuda = self.device.startswith("cuda")
        self.budget = TokenBudget(
            tokens=batch_tokens or (32_768 if on_cuda else 8_192), max_rows=max_batch_size
        )
        self.counts = NLICounts()
        self._pair_cache: LRU[bytes, Row] = LRU(cache_size)
        self._lock = threading.Lock()
        logger.info(
            "refcheck: NLI model %s (%s) on %s (%s)",
            self.model_name, self.family.title, self.device, self.dtype,
        )  # fmt: skip

    support_threshold = 0.5
    """P(entailment) from which a claim is entailed: the 2-way families' rule (a 3-way model's
    argmax can say Entailment from 1/3)."""

    @property
    def encoder(self) -> SentenceEncoder:
        if self._encoder is None:
            self._encoder = SentenceEncoder(device=self.device)
        return self._encoder

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        with self._lock:
            scored = self._scored(items)
        return [
            self._verdict(item, claim.units, claim.segments, scored.rows)
            if claim.fits
            else self._too_long(item, claim.units)
            for item, claim in zip(items, scored.claims, strict=True)
        ]

    def segment_scores(self, items: Sequence[CheckItem]) -> list[list[SegmentScore] | None]:
        """Each claim's probabilities on each of its segments (None for a claim too long for
        the model), unmerged: what a conflict finder reads."""
        with self._lock:
            scored = self._scored(items)
        return [
            [
                SegmentScore(segment, self.scheme.probabilities(scored.rows[(unit, segment.text)]))
                for unit in claim.units
                for segment in claim.segments
            ]
            if claim.fits
            else None
            for claim in scored.claims
        ]

    def _scored(self, items: Sequence[CheckItem]) -> _Scored:
        """Segments, scored units and the model's rows for a batch (under the lock)."""
        spans = self.segments.spans({r.text for item in items for r in item.references})
        segments = [
            [
                Segment(index, start, end, reference.text[start:end])
                for index, reference in enumerate(item.references)
                for start, end in spans[reference.text]
            ]
            for item in items
        ]
        if self.top_k_segments is not None:
            segments = closest_segments(self.encoder, items, segments, self.top_k_segments)
        units = [self._units(item.claim.text) for item in items]
        unit_tokens = self.segments.token_counts([u for item_units in units for u in item_units])
        claims = [
            _ScoredClaim(us, ss, all(unit_tokens[u] <= self._claim_limit for u in us))
            for us, ss in zip(units, segments, strict=True)
        ]
        pairs = [
            (unit, segment.text)
            for claim in claims
            if claim.fits
            for unit in claim.units
            for segment in claim.segments
        ]
        return _Scored(claims, self._rows(pairs))

    def classify_pairs(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> list[dict[Label, float]]:
        """Label probabilities of each (premise, hypothesis) pair, unmerged and unsegmented."""
        pairs = list(zip(hypotheses, premises, strict=True))
        with self._lock:
            rows = self._rows(pairs)
        return [self.scheme.probabilities(rows[pair]) for pair in pairs]

    def _units(self, claim: str) -> list[str]:
        """What is scored of a claim: the claim, or each of its sentences (AlignScore)."""
        if not self.family.claim_sentences:
            return [claim]
        return [claim[a:b] for a, b in sentence_spans(claim)] or [claim]

    def _rows(self, pairs: Sequence[Pair]) -> dict[Pair, Row]:
        """The model's softmax row for every pair: each distinct pair from cache or scored once."""
        self.counts.pairs_requested += len(pairs)
        rows: dict[Pair, Row] = {}
        missing: list[Pair] = []
        for pair in dict.fromkeys(pairs):
            cached = self._pair_cache.get(digest(*pair))
            if cached is None:
                missing.append(pair)
            else:
                rows[pair] = cached
                self.counts.cache_hits += 1
        for pair, row in zip(missing, self._score(missing), strict=True):
            rows[pair] = row
            self._pair_cache.put(digest(*pair), row)
        return rows

    def _score(self, pairs: Sequence[Pair]) -> list[Row]:
        """Softmax rows for pairs: tokenised once, then sorted and packed by the token budget."""
        if not pairs:
            return []
        encoded = self.pairs.encode(pairs)
        self.counts.pairs_scored += len(pairs)
        rows = self._run(encoded, self.model)
        if self.tie_guard is not None:
            exact_model = self._exact_model
            self.counts.pairs_rechecked += recheck(
                rows,
                self.tie_guard,
                lambda picked: self._run([encoded[i] for i in picked], exact_model),
            )
        return rows

    def _run(self, encoded: list[Encoded], model: Any) -> list[Row]:
        """`model`'s softmax rows for tokenised pairs, packed by the token budget."""
        return run_packed(
            [len(ids) for ids, _ in encoded],
            self.budget,
            lambda batch: self._forward([encoded[i] for i in batch], model),
            self._is_oom,
            self._on_oom,
        )

    def _forward(self, encoded: list[Encoded], model: Any) -> list[Row]:
        longest = max(len(ids) for ids, _ in encoded)
        target = min(padded_length(longest, self.budget.pad_multiple), self.max_length)
        batch = {
            name: self._torch.from_numpy(array).to(self.device)
            for name, array in self.pairs.padded(encoded, target).items()
        }
        return self.head.rows(model, batch)

    def _is_oom(self, error: BaseException) -> bool:
        torch = self._torch
        if isinstance(error, torch.OutOfMemoryError):
            return True
        return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()

    def _on_oom(self, rows: int) -> None:
        self.counts.oom_retries += 1
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()
        logger.warning(
            "refcheck: NLI batch of %d pairs ran out of memory; halving it and the token budget",
            rows,
        )

    def _verdict(
        self,
        item: CheckItem,
        units: list[str],
        segments: list[Segment],
        rows: Mapping[Pair, Row],
    ) -> Verdict:
        return aggregation.verdict(
            self.family.aggregation,
            units,
            segments,
            item.references,
            lambda unit, segment: self.scheme.probabilities(rows[(unit, segment.text)]),
        )

    def _too_long(self, item: CheckItem, units: list[str]) -> Verdict:
        longest = max(self.segments.count_tokens(unit) for unit in units)
        what = "a sentence of the claim" if len(units) > 1 else "the claim"
        return Verdict(
            label=None,
            error=(
                f"{what} is {longest} tokens; with max_length={self.max_length} the model "
                f"takes claims of at most {self._claim_limit} tokens"
            ),
        )
