"""Why an answer was not checked, or what of ours failed: the words metrics and alerts read.

Every count the monitor keeps is a (`Tally`, reason) pair. The reason is the `refcheck.reason`
attribute of the `refcheck.dropped`, `refcheck.skipped` and `refcheck.errors` counters
(`refcheck_reason` on `refcheck_dropped_total` ... in Prometheus) and a key of
`monitor.stats.snapshot()`. Dashboards and alert rules select on these values, so a value, once
shipped, never changes: a new case is a new member. Failed results (`Tally.FAILED`) are counted
by their `error_type` instead, an open set (exception class names, LLM failure kinds).

The members are `str` enums, equal to their values; `reason_label` gives the plain string that
goes into counters and metric attributes.
"""

from __future__ import annotations

from enum import Enum


class Tally(str, Enum):
    DROPPED = "dropped"
    """Not checked for lack of capacity or time: refused at `submit` (`queue_full`,
    `shutdown`), or accepted and given up (one of `LOST_REASONS`)."""
    SKIPPED = "skipped"
    """Deliberately not checked: sampled out, no references, the app's run failed or expired."""
    ERRORS = "errors"
    """Our own failures: a hook, a callback or an exporter raised."""
    FAILED = "failed"
    """Answers whose result is a failure (outcome error, timeout or invalid_input, by the
    result's `error_type`: an LLM failure kind such as `rate_limit`, `TimeoutError` for a stage
    deadline, an exception class), or `partial` when only some claims failed. Kept in
    `monitor.stats` only: exporters count these results as `refcheck.responses` by outcome."""
    FEEDBACK_REFUSED = "feedback_refused"
    """A person's verdict `monitor.feedback` could not record (it returned False), by
    `FeedbackReason`."""
    TRUNCATED = "truncated"
    """Answers checked with a field cut to its limit (`InputLimits`), by `TruncateReason`:
    one count per answer and field, however much was cut (the result's notes say how much)."""
    REJECTED = "rejected"
    """What `refcheck collect` refused, by `RejectReason`: export requests, and spans for
    `bad_span_id`."""
    NOT_FORWARDED = "not_forwarded"
    """Export requests `refcheck collect --forward` did not pass on, by `ForwardReason`."""
    IGNORED = "ignored"
    """Export requests of signals `refcheck collect` does not read, answered with success as
    a collector answers them, by `IgnoreReason`."""
    AUDITED = "audited"
    """Answers the random audit drew (`audit_rate`), by what became of each draw
    (`AuditReason`): `written` to the audit file, or why it was not. Their sum is every draw."""


class SkipReason(str, Enum):
    """Why an answer was deliberately not checked (`Tally.SKIPPED`)."""

    SAMPLED_OUT = "sampled_out"
    """`sample_rate` left it out."""
    NO_REFERENCES = "no_references"
    """The answering model saw nothing to check the answer against."""
    NO_ANSWER = "no_answer"
    """A query ended without an answer (LlamaIndex), or a run returned a structured output with
    no answer in it, or its models only called tools (LangChain)."""
    UNPAIRED = "unpaired"
    """Documents retrieved without an answer that no later answer in the request took
    (LangChain's hand-written steps)."""
    RUN_ERROR = "run_error"
    """The app's run raised (LangChain)."""
    RUN_CANCELLED = "run_cancelled"
    """The app's run was cancelled, or its consumer stopped iterating (LangChain)."""
    ANSWER_INCOMPLETE = "answer_incomplete"
    """The run ended while its answer was still streaming: nobody saw it in full (LangChain)."""
    RUN_EXPIRED = "run_expired"
    """The run never ended within its time to live (an abandoned stream)."""
    QUERY_ERROR = "query_error"
    """The query raised (LlamaIndex)."""
    STREAM_INCOMPLETE = "stream_incomplete"
    """A streamed answer was closed before its end (LlamaIndex)."""
    STREAM_ERROR = "stream_error"
    """A streamed answer raised while it was read (LlamaIndex)."""
    STREAM_NOT_READ = "stream_not_read"
    """A streamed answer was never read to its end within its time to live (LlamaIndex)."""
    UNINSTRUMENTED = "uninstrumented"
    """The integration was removed while the query was open."""
    TRACE_UNPAIRED = "trace_unpaired"
    """A received trace (`refcheck collect`) whose shape no pairing rule covers: no span of a
    known convention (OpenInference, OpenLLMetry, GenAI) wrote an answer. Never guessed."""


class DropReason(str, Enum):
    """Why an answer was not checked for lack of capacity or time (`Tally.DROPPED`)."""

    QUEUE_FULL = "queue_full"
    """`submit` found the queue full (`max_queue`)."""
    SHUTDOWN = "shutdown"
    """`submit` came after the monitor shut down."""
    RUN_OVERFLOW = "run_overflow"
    """An integration held as many open runs as it may (`max_runs`, `max_open_queries`)."""
    SHUTDOWN_TIMEOUT = "shutdown_timeout"
    """Accepted, but `shutdown(timeout)` ran out of time before its result was ready."""
    EXIT = "exit"
    """Accepted, but the interpreter exited (the `exit_timeout` flush ran out) first."""
    SIGNAL = "signal"
    """Accepted, but a signal ended the process (`install_signal_handlers`) or interrupted
    `shutdown` first."""
    WORKER_CRASH = "worker_crash"
    """Accepted, but the worker lost it to a failure of refcheck's own (a bug: see the log)."""
    TRACE_OVERFLOW = "trace_overflow"
    """A received trace pushed out of the receiver's memory (`--max-open-traces` or
    `--max-buffered-bytes` reached): the least recently active one is given up."""
    TRACE_TOO_LARGE = "trace_too_large"
    """A received trace with more spans than `--max-spans-per-trace`."""
    TRACE_EXPIRED = "trace_expired"
    """A received trace whose root span never arrived within `--max-trace-age`."""


LOST_REASONS = (
    DropReason.SHUTDOWN_TIMEOUT,
    DropReason.EXIT,
    DropReason.SIGNAL,
    DropReason.WORKER_CRASH,
)
"""The reasons an answer `submit` accepted can be given up for: at any quiet moment, for
submissions without a pairing, `accepted == delivered + dropped` summed over these."""


class ErrorReason(str, Enum):
    """Which part of refcheck failed (`Tally.ERRORS`); the work it did not do is counted."""

    SUBMIT = "submit"
    """`submit` itself raised (fields that are not `AnswerFields`)."""
    EXPORTER = "exporter"
    """An exporter raised on a batch of results."""
    ON_RESULT = "on_result"
    """An `on_result` hook raised."""
    FEEDBACK = "feedback"
    """`monitor.feedback` itself raised (a bug of ours: see the log); the verdict is lost."""
    LANGCHAIN_CALLBACK = "langchain_callback"
    LLAMAINDEX_CALLBACK = "llamaindex_callback"
    TRACE_PAIRING = "trace_pairing"
    """Reading a received trace's spans raised (`refcheck collect`); the trace is not checked."""


class RejectReason(str, Enum):
    """Why `refcheck collect` refused an export request (counted per request, not per answer:
    the receiver's `GET /v1/stats` and its log)."""

    MALFORMED = "malformed"
    """The body is not an OTLP trace export (broken protobuf or JSON, bad gzip): 400."""
    TOO_LARGE = "too_large"
    """The body, or its decompressed form, exceeds `--max-body-bytes`: 413."""
    UNAUTHORIZED = "unauthorized"
    """No or wrong bearer token: 401."""
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    """Neither application/x-protobuf nor application/json, or an encoding other than gzip: 415."""
    NOT_FOUND = "not_found"
    """A path other than /v1/traces: 404."""
    TIMEOUT = "timeout"
    """The request did not arrive whole (headers and body) within `--request-timeout`, or its
    connection was the longest waiting when `--max-connections` were open and a new one came:
    the connection is closed."""
    NO_ROOM = "no_room"
    """The room `--max-buffered-bytes` keeps for requests in flight was held by other requests:
    503 with Retry-After, which OTLP exporters retry. Nothing already held is evicted for a
    request."""
    BAD_SPAN_ID = "bad_span_id"
    """A span whose trace id is not 16 bytes or whose span id is not 8 (counted per span; the
    request's other spans are taken, and its reply says how many were rejected)."""


class ForwardReason(str, Enum):
    """Why `refcheck collect --forward` did not pass an export request on (`Tally.NOT_FORWARDED`;
    the app got its 200 already)."""

    QUEUE_FULL = "queue_full"
    """The forwarding queue was full (the downstream is slower than the app)."""
    FAILED = "failed"
    """No connection to the downstream (refused, unreachable, a failed TLS handshake), or it
    closed the connection before its reply's status."""
    REFUSED = "refused"
    """The downstream answered a status other than 2xx (a redirect too: it is not followed)."""
    TIMEOUT = "timeout"
    """No whole reply status and headers within the forwarding timeout (a silent or slow
    downstream)."""
    BAD_REPLY = "bad_reply"
    """The downstream answered something that is not HTTP/1.x, or a reply head over 64 KiB."""
    SHUTDOWN = "shutdown"
    """Still queued when the receiver stopped and its time to post the queue ran out."""


class IgnoreReason(str, Enum):
    """Which signal an export request `refcheck collect` answered and did not read carried
    (`Tally.IGNORED`): apps pointed at it send their metrics and logs beside their traces."""

    METRICS = "metrics"
    """`POST /v1/metrics`."""
    LOGS = "logs"
    """`POST /v1/logs`."""


class TruncateReason(str, Enum):
    """Which field of an answer was cut to its limit (`Tally.TRUNCATED`, `InputLimits`)."""

    ANSWER = "answer"
    """`max_answer_chars`."""
    QUESTION = "question"
    """`max_question_chars`."""
    REFERENCES = "references"
    """More references than `max_references`: the first ones are kept."""
    REFERENCE_TEXT = "reference_text"
    """References' text past `max_reference_chars`, across them all."""
    CLAIMS = "claims"
    """More given claims than `max_claims`: the first ones are checked."""
    CLAIM = "claim"
    """A given claim's text past `max_claim_chars`."""
    MODEL = "model"
    """`max_model_chars`."""
    RESPONSE_ID = "response_id"
    """Longer than `max_response_id_chars`: left out, not cut (a prefix may be another id)."""
    METADATA = "metadata"
    """Past `max_metadata_chars`, or nested deeper than `max_metadata_depth`."""


class FeedbackReason(str, Enum):
    """Why `monitor.feedback` recorded nothing (`Tally.FEEDBACK_REFUSED`)."""

    UNKNOWN_RESPONSE = "unknown_response"
    """No recent result with claims has that id: never checked, no claims (abstained, failed,
    withheld because its redaction failed), or forgotten (the monitor keeps the latest
    `feedback_memory` results)."""
    INVALID_LABELS = "invalid_labels"
    """Labels that are not a label, or a list with one per claim of the answer."""
    WRITE_FAILED = "write_failed"
    """The feedback file could not be written (see the log)."""


class AuditReason(str, Enum):
    """What became of an answer the random audit drew (`Tally.AUDITED`)."""

    WRITTEN = "written"
    """Appended to the audit file, whole and synced."""
    FILE_FULL = "file_full"
    """The audit file reached its size bound (`audit_max_bytes`): label it, move it away, or
    raise the bound."""
    WRITE_FAILED = "write_failed"
    """The file could not be written (a full disk, no permission: see the log)."""
    QUEUE_FULL = "queue_full"
    """Draws waiting for the writer were at their bound (the disk is slower than the draws)."""
    SHUTDOWN = "shutdown"
    """Still waiting for the writer when `shutdown` (or exit) ran out of time."""


Reason = SkipReason | DropReason | ErrorReason | FeedbackReason | TruncateReason | AuditReason
"""A reason of the vocabulary above."""


def reason_label(reason: Reason | str) -> str:
    """The plain string a counter key or metric attribute holds (a member's value)."""
    return reason.value if isinstance(reason, Enum) else reason
