"""What an integration hands over, and all it may use of the monitor: the `AnswerSink`.

An integration (LangChain, LlamaIndex, a trace receiver, your own) captures an answer on the
app's thread and calls `sink.submit(**fields)` with `AnswerFields`; what it cannot capture it
counts with `skipped`, `dropped` or `errored`, by a reason of `contract.reasons`. `limits`
says how much of an answer is checked, so the integration keeps no more than that. The sink
is a `RefCheckMonitor` in an app; the integration needs nothing else of it.

Where telling the answer's references apart needs reading text (which documents reached the
answering model's prompt, which of several generations saw them), the integration does not
read it on the app's thread, where the time would grow with the documents: it submits a
`Pairing`, the candidates it captured, and the monitor's worker calls `Pairing.pair` before it
builds the request. The rules live in one place, the integration's `Pairing`; the worker only
calls it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from refcheck_callbacks.contract.reasons import DropReason, ErrorReason, SkipReason
from refcheck_callbacks.types import TraceContext

if TYPE_CHECKING:
    from typing_extensions import Unpack


@dataclass(frozen=True)
class InputLimits:
    """Bounds on what one request may hold; beyond them the field is cut, the cut is noted in
    the request and counted (`Tally.TRUNCATED`, by field). A field is read no further than its
    limit, so a huge one costs what its limit does."""

    max_answer_chars: int = 20_000
    max_reference_chars: int = 200_000
    """Across all references of a request."""
    max_references: int = 100
    max_claims: int = 64
    """Claims checked per request, given or extracted; the rest are left out, and noted."""
    max_claim_chars: int = 2_000
    """Each given claim's text (an extracted one is a part of the answer)."""
    max_question_chars: int = 20_000
    max_model_chars: int = 256
    max_response_id_chars: int = 256
    """A longer response id is left out rather than cut: a prefix of one id may be another's."""
    max_metadata_chars: int = 16_384
    """The request's metadata: characters of its keys and text values, each other value and
    each item counting one. Items past it are left out."""
    max_metadata_depth: int = 8
    """Levels of nesting kept in the metadata; a container nested deeper is left out."""


@dataclass(frozen=True, slots=True)
class Paired:
    """What a `Pairing` decided: the fields of `AnswerFields` of the same names."""

    answer: Any
    references: Any
    model: str | None = None
    response_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    """Added to the request's metadata (how the pairing was decided, where that matters)."""
    question: Any = None
    """The user's question, where the pairing decides it too; None keeps the submitted one."""


class Pairing(ABC):
    """An answer as an integration captured it, paired in the monitor's worker.

    The callback keeps references to what it saw (candidate documents, the prompts of the
    generations that may have answered, what the app chose) and submits this; `pair` reads the
    texts, off the app's thread. One implementation per integration holds its rules.
    """

    @abstractmethod
    def pair(self) -> Paired | SkipReason | None:
        """The answer, its references and the generation's model and id; None when the
        answering model saw nothing to check against (counted as skipped `no_references`); a
        `SkipReason` when the capture holds nothing to check for that reason (counted so:
        `no_answer` for a run that returned a decision, not an answer). Runs in the monitor's
        worker; what it raises fails this request alone."""


class AnswerFields(TypedDict, total=False):
    """What `AnswerSink.submit` (and `RefCheckMonitor.check`, `acheck`) take, all by keyword.

    Every field is optional and taken as given: turning it into a valid `CheckRequest` happens
    later, off the caller's path, and notes every repair.
    """

    answer: Any
    """The answer the user got: str, or bytes (decoded as UTF-8, invalid bytes replaced)."""
    references: Any
    """The documents the answering model saw: texts, mappings with "text" (and "id", "score",
    "metadata"), `Reference`s, or a zero-argument callable returning them (called in the
    worker, so that converting the caller's own objects runs off its thread; an integration
    that must also decide the answer submits a `Pairing` instead)."""
    question: Any
    claims: Any
    """Claims to check instead of extracting them: texts or `Claim`s."""
    trace_context: TraceContext | None
    """The span to parent the evaluation to; by default the caller's current span. None: none."""
    metadata: Mapping[str, Any] | None
    model: str | None
    """The model that wrote the answer (`gen_ai.request.model`)."""
    response_id: str | None
    """The generation's id (`gen_ai.response.id`)."""
    pairing: Pairing | None
    """Instead of `answer`, `references`, `model` and `response_id`: an integration's capture
    of them, decided in the worker (`Pairing.pair`)."""


ANSWER_FIELDS = frozenset(AnswerFields.__annotations__)


@runtime_checkable
class AnswerSink(Protocol):
    """All an integration may use of the monitor. Every method is O(1), never blocks on I/O
    and never raises into the app."""

    limits: InputLimits
    """How much of one answer is checked: an integration keeps no more references than
    `limits.max_references`."""

    def submit(self, **fields: Unpack[AnswerFields]) -> bool:
        """Queue an answer for checking; False when it will not be checked (and is counted)."""
        ...

    def skipped(self, reason: SkipReason, count: int = 1) -> None:
        """Count answers deliberately not checked."""
        ...

    def dropped(self, reason: DropReason, count: int = 1) -> None:
        """Count answers not checked for lack of capacity."""
        ...

    def errored(self, reason: ErrorReason, count: int = 1) -> None:
        """Count a failure of the integration's own code (a callback that raised)."""
        ...
