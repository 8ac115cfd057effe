"""A person's verdict on a checked answer (`RefCheckMonitor.feedback`), as exporters see it.

A label is one of the checker's three labels, or a boolean for "supported": people often know
only whether a claim holds, not whether the documents contradict it. The checker agrees with a
three-way label when it gave that label, and with a boolean when its verdict is on the same
side (Entailment for true; Neutral or Contradiction for false). A claim the checker failed on
has no agreement.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from refcheck_callbacks.types import Label, TraceContext


class FeedbackLabel(str, Enum):
    """A person's label, as exported (`refcheck.feedback.label`)."""

    ENTAILMENT = "entailment"
    NEUTRAL = "neutral"
    CONTRADICTION = "contradiction"
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"

    @classmethod
    def of(cls, label: object) -> FeedbackLabel:
        """The label a person gave: a `Label`, its name in any case, or a bool (supported).
        ValueError for anything else."""
        if isinstance(label, bool):
            return cls.SUPPORTED if label else cls.UNSUPPORTED
        if isinstance(label, str):
            try:
                return cls(Label(label.strip().lower()).value)
            except ValueError:
                pass
        raise ValueError(
            f"{label!r} is no label: give Entailment, Neutral, Contradiction, or true / false "
            "for supported"
        )

    @property
    def supported(self) -> bool:
        return self in (FeedbackLabel.ENTAILMENT, FeedbackLabel.SUPPORTED)

    @property
    def three_way(self) -> Label | None:
        """The checker's label this is, None for a boolean."""
        if self in (FeedbackLabel.SUPPORTED, FeedbackLabel.UNSUPPORTED):
            return None
        return Label(self.value)

    def agrees(self, predicted: Label | None) -> bool | None:
        """Whether the checker's `predicted` label agrees (module docstring); None when the
        checker gave none."""
        if predicted is None:
            return None
        if self.three_way is not None:
            return predicted is self.three_way
        return (predicted is Label.ENTAILMENT) == self.supported


class ClaimFeedback(BaseModel):
    """A person's label of one claim, beside the checker's."""

    model_config = ConfigDict(frozen=True)

    index: int
    label: FeedbackLabel
    predicted: Label | None

    @property
    def agreed(self) -> bool | None:
        return self.label.agrees(self.predicted)


class Feedback(BaseModel):
    """A person's verdict on one checked answer: labels of its claims, or of the answer.

    An answer judged supported has every claim supported, so that label is given to each claim
    (`claims`); an answer judged otherwise does not say which of several claims fail, so only
    `answer` holds it then (and `answer_agreed` compares it with the checker's verdict on the
    answer: at least one claim not supported). Labels and ids only, never text.
    """

    model_config = ConfigDict(frozen=True)

    response_id: str
    """The id the feedback was given for (the generation's response id, or the request id)."""
    request_id: str
    checker: str | None
    trace_context: TraceContext | None
    claims: tuple[ClaimFeedback, ...]
    """The claims with a label, in the answer's order."""
    answer: FeedbackLabel | None = None
    """The label given to the whole answer, when one was."""
    answer_predicted_supported: bool = True
    """Whether the checker found every claim of the answer supported."""

    @property
    def answer_agreed(self) -> bool | None:
        if self.answer is None:
            return None
        return self.answer.supported == self.answer_predicted_supported


@runtime_checkable
class FeedbackExporter(Protocol):
    """An exporter that also exports people's verdicts (optional: an exporter without this
    method gets none). Called in the thread that called `monitor.feedback`; one that raises is
    isolated and counted (`errors`, `exporter`)."""

    def feedback(self, feedback: Feedback) -> None: ...
