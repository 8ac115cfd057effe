"""People's verdicts on checked answers: `RefCheckMonitor.feedback`.

The monitor remembers its latest results (`feedback_memory` of them, least recently used
forgotten) by their request id and by the generation's response id when the app gave one, so
that a verdict given later, from a thumbs-down button or a review queue, finds the checker's
labels. It keeps labels and ids; the text only when a feedback file is written. A verdict
becomes a `gen_ai.evaluation.result` event and agreement counts (the exporters), and a line
of the labelled file `refcheck calibrate` reads (`feedback_file`). What cannot be recorded
returns False and is counted with a `FeedbackReason`; nothing raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from refcheck_callbacks.contract.feedback import ClaimFeedback, Feedback, FeedbackLabel
from refcheck_callbacks.contract.reasons import FeedbackReason
from refcheck_callbacks.engine.feedback_file import (
    AnswerText,
    FeedbackFile,
    Predictions,
    feedback_record,
)
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.support.lru import LRU
from refcheck_callbacks.types import CheckResult, Label, TraceContext

FeedbackLabels = Sequence[object] | str | bool
"""One label per claim (a list, None for a claim not labelled), or one label for the answer:
"Entailment" / "Neutral" / "Contradiction" (any case, or `Label`), or True / False for
supported."""


class RefusedFeedback(Exception):
    """Why a verdict cannot be recorded (internal: `record` returns False and counts it)."""

    def __init__(self, reason: FeedbackReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Remembered:
    """What a later verdict needs of a result."""

    request_id: str
    checker: str | None
    trace_context: TraceContext | None
    predicted: tuple[Label | None, ...]
    text: AnswerText | None
    """None unless a file is written. A result whose redaction failed has no claims, so it
    is never remembered."""
    predictions: Predictions | None
    """The checker's labels, probabilities and evidence, for the file (None without one)."""


def _claim_labels(labels: FeedbackLabels, claims: int) -> list[FeedbackLabel | None]:
    if isinstance(labels, str | bool):
        raise TypeError("one label")
    given = list(labels)
    if len(given) != claims:
        raise ValueError(f"{len(given)} labels for {claims} claims")
    return [None if label is None else FeedbackLabel.of(label) for label in given]


def feedback_of(response_id: str, remembered: Remembered, labels: FeedbackLabels) -> Feedback:
    """The verdict on one remembered result; RefusedFeedback when the labels do not fit it."""
    predicted = remembered.predicted
    supported = all(label is Label.ENTAILMENT for label in predicted)
    try:
        if isinstance(labels, str | bool):
            whole = FeedbackLabel.of(labels)
            # Supported answer: every claim supported; else which claim fails is unknown,
            # unless there is only one.
            each = whole if whole.supported or len(predicted) == 1 else None
            answer, per_claim = whole, [each] * len(predicted)
        else:
            answer, per_claim = None, _claim_labels(labels, len(predicted))
    except (TypeError, ValueError):
        raise RefusedFeedback(FeedbackReason.INVALID_LABELS) from None
    if not any(per_claim) and answer is None:
        raise RefusedFeedback(FeedbackReason.INVALID_LABELS)
    return Feedback(
        response_id=response_id,
        request_id=remembered.request_id,
        checker=remembered.checker,
        trace_context=remembered.trace_context,
        claims=tuple(
            ClaimFeedback(index=index, label=label, predicted=predicted[index])
            for index, label in enumerate(per_claim)
            if label is not None
        ),
        answer=answer,
        answer_predicted_supported=supported,
    )


class FeedbackDesk:
    """Remembers results and turns verdicts on them into `Feedback` (module docstring)."""

    def __init__(self, memory: int, path: str | Path | None) -> None:
        if memory < 0:
            raise ValueError("feedback_memory must be 0 or more")
        self.file = None if path is None else FeedbackFile(path)
        self._results: LRU[str, Remembered] = LRU(memory)
        self._request_ids: LRU[str, str] = LRU(memory)
        """Response id -> request id, for results submitted with one."""
        self._lock = threading.Lock()

    def remember(self, results: Sequence[CheckResult]) -> None:
        """Called with every delivered result; keeps those with claims. Never raises."""
        for result in results:
            if not result.verdicts:
                continue
            request = result.request
            remembered = Remembered(
                request_id=request.request_id,
                checker=result.checker,
                trace_context=request.trace_context,
                predicted=tuple(v.label for v in result.verdicts),
                text=None if self.file is None else AnswerText.of(result),
                predictions=None if self.file is None else Predictions.of(result),
            )
            with self._lock:
                self._results.put(request.request_id, remembered)
                if request.response_id:
                    self._request_ids.put(request.response_id, request.request_id)

    def _find(self, response_id: str) -> Remembered | None:
        found = self._results.get(response_id)
        if found is None and (request_id := self._request_ids.get(response_id)) is not None:
            found = self._results.get(request_id)
        return found

    def record(
        self,
        response_id: str,
        labels: FeedbackLabels,
        export: Callable[[Feedback], None],
        audit: bool = False,
    ) -> Feedback:
        """Write the verdict to the file (if any; marked `"audit": true` for an answer of the
        random audit), then `export` it. RefusedFeedback when it cannot be recorded."""
        with self._lock:
            remembered = self._find(response_id) if isinstance(response_id, str) else None
        if remembered is None:
            raise RefusedFeedback(FeedbackReason.UNKNOWN_RESPONSE)
        feedback = feedback_of(response_id, remembered, labels)
        text, predictions = remembered.text, remembered.predictions
        if self.file is not None and text is not None and predictions is not None:
            try:
                self.file.append(feedback_record(feedback, text, predictions, audit))
            except (OSError, ValueError) as exc:
                logger.warning("refcheck: the feedback file %s: %s", self.file.path, exc)
                raise RefusedFeedback(FeedbackReason.WRITE_FAILED) from None
        export(feedback)
        return feedback
