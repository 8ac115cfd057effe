"""The data that crosses module boundaries: requests in, results out.

Everything an integration hands to the monitor, and everything an exporter or hook receives,
is one of these pydantic models. Inside the pipeline they are treated as plain values.
"""

from __future__ import annotations

import time
import uuid
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Label(str, Enum):
    """RefChecker's three claim labels."""

    ENTAILMENT = "entailment"
    NEUTRAL = "neutral"
    CONTRADICTION = "contradiction"


class ConflictKind(str, Enum):
    """What a Contradiction's evidence states differently from the claim.

    A Contradiction means a conflicting statement was found, and this names which kind; a
    claim the references only fail to support is Neutral."""

    VALUE = "value"
    """Another figure or amount for the same thing (`330 metres` against `450 metres`)."""
    DATE = "date"
    """Another year, month, weekday or day."""
    ENTITY = "entity"
    """Another name in the same place (`Jupiter is the largest planet` against `Saturn`)."""
    NEGATION = "negation"
    """The same statement, negated on one side only."""
    EXCLUSIVE = "exclusive"
    """A relation that rules the claim's out (`Nobel Prizes in physics and chemistry`
    against `a Nobel Prize in biology`), or a model's contradiction of no lexical kind."""


class ResponseLabel(str, Enum):
    """The label of a whole answer: an aggregate of its claims, or abstain when it has none."""

    ENTAILMENT = "entailment"
    NEUTRAL = "neutral"
    CONTRADICTION = "contradiction"
    ABSTAIN = "abstain"


class Outcome(str, Enum):
    """What happened to a request; every request ends in exactly one of these."""

    CHECKED = "checked"
    """Every claim got a verdict."""
    PARTIAL = "partial"
    """Some claims got a verdict, others failed (see each `Verdict.error`)."""
    ABSTAIN = "abstain"
    """The answer holds no checkable claim (a refusal, a question, a greeting)."""
    EMPTY_ANSWER = "empty_answer"
    NO_REFERENCES = "no_references"
    INVALID_INPUT = "invalid_input"
    TIMEOUT = "timeout"
    ERROR = "error"


class Cause(str, Enum):
    """Why a claim is not supported, from retrieval diagnostics (docs/diagnostics.md has the
    rule): `retrieval_missed` when no reference is relevant to the claim or to the question
    (the claim came from somewhere else), `unsupported_by_relevant_context` when relevant
    references are there but do not support it, `contradicted` when a reference conflicts
    with it. A supported claim has no cause (None)."""

    RETRIEVAL_MISSED = "retrieval_missed"
    UNSUPPORTED_BY_RELEVANT_CONTEXT = "unsupported_by_relevant_context"
    CONTRADICTED = "contradicted"


class Placement(str, Enum):
    """Where a result's claims were checked: what the app paid for them, and where to look."""

    THREAD = "thread"
    """In the app's process, on the monitor's background thread (shares the app's GIL)."""
    PROCESS = "process"
    """In a child process of the app, on the same machine."""
    SERVICE = "service"
    """By a checker service over HTTP (`refcheck serve`, reached through `RemoteChecker`)."""


class _Model(BaseModel):
    """Immutable values: one result goes to every exporter and hook, so none can change what
    the next one sees. Sequences are tuples; change a value with `model_copy(update=...)`."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class CharSpan(_Model):
    """A half-open character range `[start, end)` into a text."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> CharSpan:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before its start {self.start}")
        return self

    def of(self, text: str) -> str:
        """The text this span covers."""
        return text[self.start : self.end]


class Triplet(_Model):
    """A claim-triplet as RefChecker extracts it."""

    subject: str
    predicate: str
    object: str

    def as_text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"


class Reference(_Model):
    """A retrieved document: the text a claim is checked against."""

    text: str
    id: str | None = None
    score: float | None = None
    """The retriever's relevance score, when the retriever gave one."""
    metadata: dict[str, Any] = Field(default_factory=dict)


class Claim(_Model):
    """One checkable statement taken from the answer."""

    text: str
    triplet: Triplet | None = None
    span: CharSpan | None = None
    """Where the claim sits in the answer; None when it could not be located."""


class Evidence(_Model):
    """The reference text that decided a verdict."""

    reference_index: int = Field(ge=0)
    reference_id: str | None = None
    span: CharSpan
    """Characters of `request.references[reference_index].text`."""
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    """The checker's probability of the verdict's label on this piece of evidence."""

    @field_validator("probability", mode="after")
    @classmethod
    def _plain_probability(cls, value: float | None) -> float | None:
        return None if value is None else float(value)


def _plus(first: float | None, second: float | None) -> float | None:
    """A sum of costs that may be unknown: unknown only when both are."""
    if first is None and second is None:
        return None
    return (first or 0.0) + (second or 0.0)


class ModelSpend(_Model):
    """What one model spent in one role (`checker`, `extractor`): the figures behind the spend
    metrics by model and role, and the budget's state after its last call."""

    model: str
    role: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    """None when the model has no known price."""
    refused: int = 0
    """Calls the budget refused (`JudgeBudget`): their work went to the fallback."""
    budget_used: float | None = None
    """The largest share of a budget limit (USD or tokens) spent or reserved in the rolling
    window after the last call; None without a budget."""

    def __add__(self, other: ModelSpend) -> ModelSpend:
        used = [u for u in (self.budget_used, other.budget_used) if u is not None]
        return self.model_copy(
            update={
                "prompt_tokens": self.prompt_tokens + other.prompt_tokens,
                "completion_tokens": self.completion_tokens + other.completion_tokens,
                "cost_usd": _plus(self.cost_usd, other.cost_usd),
                "refused": self.refused + other.refused,
                "budget_used": max(used) if used else None,
            }
        )


class Usage(_Model):
    """Tokens and money spent on a request by LLM-backed stages."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = None
    by_model: tuple[ModelSpend, ...] = ()
    """The same spend by model and role (and what the budget refused), for the metrics."""

    def __add__(self, other: Usage) -> Usage:
        merged: dict[tuple[str, str], ModelSpend] = {}
        for spend in (*self.by_model, *other.by_model):
            key = (spend.model, spend.role)
            merged[key] = merged[key] + spend if key in merged else spend
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            requests=self.requests + other.requests,
            cost_usd=_plus(self.cost_usd, other.cost_usd),
            by_model=tuple(merged.values()),
        )


class StageVerdict(_Model):
    """What one stage of a `CascadeChecker` said about a claim."""

    stage: str
    label: Label | None
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    seconds: float = Field(default=0.0, ge=0.0)
    """Wall time of the stage's call that held the claim (shared by the claims it batched)."""


SCORE_TOLERANCE = 1e-9
"""Rounding allowed where a verdict's scores are compared (`Verdict`'s score rule)."""


class Verdict(_Model):
    """A checker's decision on one claim. `label` is None when the checker failed on it."""

    label: Label | None
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    probabilities: dict[Label, float] | None = None
    evidence: tuple[Evidence, ...] = ()
    explanation: str | None = None
    error: str | None = None
    """Why no label could be given (for example an unparseable judge reply)."""
    error_type: str | None = None
    """The kind of that failure, when the checker knows it: an LLM failure kind
    (`LLMCallError.kind`: rate_limit, server_error, timeout, ...) or an exception class name.
    A request whose claims all failed with one kind gets it as its `error_type`."""
    hallucination_type: str | None = None
    """A FAVA hallucination type (entity, relation, contradictory, invented, subjective,
    unverifiable), when the checker assigns one."""
    suggestion: str | None = None
    """A suggested replacement text for the claim, when the checker proposes one."""
    usage: Usage | None = None
    stages: tuple[StageVerdict, ...] = ()
    """Cascade checkers: each stage the claim went through, in order; the last one decided."""
    conflict: ConflictKind | None = None
    """For a Contradiction: the kind of conflicting statement its first evidence makes (set
    by the pipeline's conflict stage); None for other labels."""
    decided_by: str | None = None
    """The checker that gave this verdict: the result's checker, or the fallback that took the
    claim (`fallback` says why). Set by the pipeline when the checker leaves it out."""
    fallback: str | None = None
    """Why a fallback checker decided this claim: `budget_exhausted` (the judge's
    `JudgeBudget` refused the call); None when the checker itself did."""
    relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    """How much the claim bears on the question, in [0, 1]; None without a question or
    without diagnostics."""
    cause: Cause | None = None
    """Why the claim is not supported (`Cause`); None when it is supported, failed, or no
    diagnostics ran."""

    @field_validator("confidence", mode="after")
    @classmethod
    def _plain_confidence(cls, value: float) -> float:
        return float(value)  # numpy.float64 is a float subclass pydantic would keep

    @field_validator("probabilities", mode="after")
    @classmethod
    def _plain_probabilities(cls, value: dict[Label, float] | None) -> dict[Label, float] | None:
        if value is None:
            return None
        return {label: float(probability) for label, probability in value.items()}

    @model_validator(mode="after")
    def _failed_verdicts_say_why(self) -> Verdict:
        if self.label is None and not self.error:
            raise ValueError("a verdict without a label must say why in `error`")
        if self.conflict is not None and self.label is not Label.CONTRADICTION:
            raise ValueError("only a contradiction names a kind of conflict")
        return self

    @model_validator(mode="after")
    def _label_and_score_agree(self) -> Verdict:
        """The score rule every checker family keeps (docs/telemetry.md): the label's
        probability is the largest of the three and is the confidence. A Contradiction's
        P(entailment) is then at most 1/2, the support threshold every family reports at."""
        if self.label is None or not self.probabilities or self.label not in self.probabilities:
            return self
        own = self.probabilities[self.label]
        if any(other > own + SCORE_TOLERANCE for other in self.probabilities.values()):
            raise ValueError(
                f"a {self.label.value} verdict's probability {own:.4f} is not the largest "
                f"of { ({k.value: round(v, 4) for k, v in self.probabilities.items()}) }"
            )
        if abs(self.confidence - own) > SCORE_TOLERANCE:
            raise ValueError(
                f"confidence {self.confidence:.4f} is not P({self.label.value}) = {own:.4f}"
            )
        return self

    def rescored(self, label: Label, probabilities: dict[Label, float], **update: Any) -> Verdict:
        """This verdict with another label and probabilities (the confidence follows), built
        and validated as a new one: `model_copy` would skip the score rule."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        fields.update(
            label=label, probabilities=probabilities, confidence=probabilities[label], **update
        )
        return Verdict.model_validate(fields)


class Ratios(_Model):
    """RefChecker's soft aggregate: the share of each label among a response's claims."""

    entailment: float = 0.0
    neutral: float = 0.0
    contradiction: float = 0.0

    @property
    def hallucination(self) -> float:
        """Neutral plus contradiction: the claims the references do not support."""
        return self.neutral + self.contradiction


class ReferenceUse(_Model):
    """What retrieval diagnostics learned about one reference of an answer."""

    index: int = Field(ge=0)
    """The reference's position in the request's `references`."""
    relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    """Whether the reference bears on, or answers, the question, in [0, 1]; None without a
    question."""
    used: bool = False
    """Whether it supported at least one claim (it is the evidence of an Entailment)."""
    supports: tuple[int, ...] = ()
    """The indices of the claims it supports."""


class RelevanceSubject(str, Enum):
    """What a relevance score is of: a reference, a claim, or the whole answer."""

    REFERENCE = "reference"
    CLAIM = "claim"
    ANSWER = "answer"


class RelevanceFallback(_Model):
    """A relevance score an LLM relevance judge (`llm:MODEL`) could not give, so the offline
    head gave it instead (docs/diagnostics.md)."""

    subject: RelevanceSubject
    index: int = Field(default=0, ge=0)
    """The reference's or claim's position in the request (0 for the answer)."""
    reason: str
    """`budget_exhausted` (the judge budget refused the call), `unreadable` (the reply holds
    no valid grade for it), or the failed call's kind (`timeout`, `rate_limit`, ...)."""


class TraceContext(_Model):
    """The OpenTelemetry span context that was current when the app produced the answer."""

    trace_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    span_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    trace_flags: int = 1

    @property
    def trace_id_int(self) -> int:
        return int(self.trace_id, 16)


class CheckRequest(_Model):
    """One answer to check, with the references it was written from."""

    answer: str
    references: tuple[Reference, ...] = ()
    question: str | None = None
    claims: tuple[Claim, ...] | None = None
    """Claims given by the caller; extraction is skipped when set."""
    trace_context: TraceContext | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    """The model that wrote the answer (`gen_ai.request.model`), when known."""
    response_id: str | None = None
    """The generation's id (`gen_ai.response.id`), when known."""
    request_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    submitted_at: float = Field(default_factory=time.time)
    notes: tuple[str, ...] = ()
    """What was changed while accepting the input (truncation, decoding), or while extracting
    its claims (claims cut at `max_claims`)."""


class CheckResult(_Model):
    """Everything the pipeline learned about one answer."""

    request: CheckRequest
    outcome: Outcome
    claims: tuple[Claim, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    response_label: ResponseLabel | None = None
    """Strict aggregate of the claims (or abstain); None when the answer was not checked."""
    ratios: Ratios | None = None
    """The share of each label among the checked claims; None when no claim was checked
    (`checked` and `partial` have ratios), so a ratio histogram or mean is never fed zeros
    for answers that were not checked (abstentions, missing references, failures)."""
    error_type: str | None = None
    """What kind of failure an error or timeout outcome is: the name of the exception class
    behind it (`TimeoutError`, a `refcheck_callbacks.errors` class, or the exception a stage
    raised), or an LLM failure kind (`rate_limit`, `server_error`, ...: `LLMCallError.kind`)
    when an LLM extractor or judge failed."""
    message: str | None = None
    """Why the outcome is what it is, for any outcome but checked (the failure, for errors)."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds spent per stage: queue, extract, check, aggregate, total."""
    stage_started: dict[str, float] = Field(default_factory=dict)
    """Wall-clock start (epoch seconds) of each stage in `timings`, for exporters' stage spans."""
    extractor: str | None = None
    checker: str | None = None
    placement: Placement | None = None
    """Where the checker ran; None when the result never reached a pipeline."""
    usage: Usage | None = None
    finished_at: float = Field(default_factory=time.time)
    references_used: tuple[ReferenceUse, ...] = ()
    """Retrieval diagnostics, one per reference in input order; empty when none ran."""
    answer_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    """Whether the answer addresses the question, in [0, 1]; None without a question."""
    non_answer: bool = False
    """The answer is a refusal or a non-answer ("I could not find that in the documents"):
    counted apart from hallucination."""
    relevance_scorer: str | None = None
    """Who scored relevance: `embedded` (the offline head) or `llm` (an LLM relevance judge,
    with what it could not score in `relevance_fallbacks`); None when no diagnostics ran."""
    relevance_fallbacks: tuple[RelevanceFallback, ...] = ()
    """The scores the LLM relevance judge could not give, which the offline head gave."""

    @property
    def hallucination_ratio(self) -> float | None:
        """`ratios.hallucination`, or None when no claim was checked (see `ratios`)."""
        return None if self.ratios is None else self.ratios.hallucination

    def evidence_text(self, claim_index: int, max_chars: int | None = None) -> str:
        """The text of the first evidence of a claim's verdict ('' when there is none)."""
        verdict = self.verdicts[claim_index]
        if not verdict.evidence:
            return ""
        evidence = verdict.evidence[0]
        text = evidence.span.of(self.request.references[evidence.reference_index].text)
        if max_chars is not None and len(text) > max_chars:
            return text[: max_chars - 1] + "…"
        return text


class CheckItem(_Model):
    """One claim to check, as a checker receives it: the claim and its request's references."""

    claim: Claim
    references: tuple[Reference, ...]
    question: str | None = None
    request_id: str
    claim_index: int = Field(ge=0)
