"""A reader that corrects the embedded checker: its support logit as the reader's starting point.

Trained on its own, the reader loses to the embedded checker on every held-out set
(docs/reader.md): it has to relearn from a few thousand pairs the lexical and vector signal the
embedded checker already carries. A correcting reader starts from that checker's verdict
instead. Its entailment logit is offset by the embedded checker's support logit, so a reader
whose head outputs nothing reads exactly as the embedded checker does:

    logits = reader(evidence, claim) + (support_logit + ln 2, 0, 0)
    P(entailment) = sigmoid(support_logit)   when the reader's logits are equal

and training teaches the head only what the embedded checker gets wrong (a negation, a swapped
role, an antonym, a paraphrase it cannot align). Training and checking compute the offset
here, with the same code. A folder trained so says `"corrects_embedded": true` in
`refcheck_reader.json`; read as plain `nli:PATH` it gives the correction alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.types import CheckItem, Claim, Label, Reference

TRAINING_FILE = "refcheck_reader.json"
"""Beside a reader's weights: how it was trained (the plan, the data, the step)."""
LOGIT_LIMIT = 8.0
"""Support logits are clipped here (P within about 3e-4 of 0 or 1): a sure embedded verdict
must leave the reader room to overrule it."""
OFFSET_CLASSES = (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION)
"""The order of the reader's classes (`reader.inputs.LABELS`)."""


def corrects_embedded(folder: str | Path) -> bool:
    """Whether the reader in `folder` was trained to correct the embedded checker."""
    path = Path(folder) / TRAINING_FILE
    if not path.is_file():
        return False
    training = json.loads(path.read_text(encoding="utf-8")).get("training", {})
    return bool(training.get("corrects_embedded", False))


def support_logit(entailment: float | None) -> float:
    """The embedded checker's P(entailment) as a clipped logit; 0 (no opinion) without one."""
    if entailment is None:
        return 0.0
    p = min(max(entailment, 1e-6), 1 - 1e-6)
    return max(-LOGIT_LIMIT, min(LOGIT_LIMIT, math.log(p / (1 - p))))


def offset(logit: float) -> tuple[float, float, float]:
    """What is added to the reader's (entailment, neutral, contradiction) logits."""
    return (logit + math.log(2.0), 0.0, 0.0)


def corrected(probabilities: dict[Label, float], logit: float) -> dict[Label, float]:
    """The reader's own probabilities with the offset applied (a softmax of shifted logits
    is the renormalised product of its probabilities and the exponentiated shift)."""
    shift = dict(zip(OFFSET_CLASSES, offset(logit), strict=True))
    top = max(shift.values())
    weights = {
        label: probabilities[label] * math.exp(shift[label] - top) for label in OFFSET_CLASSES
    }
    total = sum(weights.values())
    if total <= 0.0:
        return {label: float(probabilities[label]) for label in OFFSET_CLASSES}
    return {label: float(weight / total) for label, weight in weights.items()}


class SupportPrior:
    """The embedded checker's support logits for claims, at check time or for training pairs."""

    def __init__(self, checker: EmbeddedChecker | None = None) -> None:
        self.checker = checker or EmbeddedChecker()

    def for_items(self, items: Sequence[CheckItem]) -> list[float]:
        verdicts = self.checker.check_batch(items)
        return [
            support_logit(v.probabilities.get(Label.ENTAILMENT) if v.probabilities else None)
            for v in verdicts
        ]

    def for_pairs(self, pairs: Sequence[tuple[str, Sequence[str]]]) -> list[float]:
        """Logits for (claim, references) pairs; consecutive pairs with the same references
        share one request, so a document is prepared once."""
        items: list[CheckItem] = []
        last: tuple[str, ...] | None = None
        request = 0
        for claim, references in pairs:
            key = tuple(references)
            if key != last:
                last, request = key, request + 1
            items.append(
                CheckItem(
                    claim=Claim(text=claim),
                    references=tuple(
                        Reference(text=text, id=str(i)) for i, text in enumerate(references)
                    ),
                    request_id=f"pair-{request}",
                    claim_index=len(items),
                )
            )
        return self.for_items(items)
