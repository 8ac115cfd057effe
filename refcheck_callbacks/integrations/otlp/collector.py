"""Received spans in, answers out: the trace receiver's side of the `AnswerSink` contract.

`TraceCollector.take` hands decoded spans to the `TraceAssembly`; a sweeper thread finishes
complete traces, reads each one's shape (`pairing.shape_of`) and submits it to the sink with
the app's trace context: the evaluation span is a child of the trace's root span, so a trace
back end shows it on the app's own trace. A trace that fits no rule is counted skipped
(`trace_unpaired`), one given up for memory or age dropped by its reason, one whose spans
could not be read errored (`trace_pairing`): every trace received is submitted or counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.contract.reasons import (
    DropReason,
    ErrorReason,
    ForwardReason,
    IgnoreReason,
    RejectReason,
    SkipReason,
    Tally,
)
from refcheck_callbacks.integrations.otlp import decode
from refcheck_callbacks.integrations.otlp.intake import Intake, Reservation
from refcheck_callbacks.integrations.otlp.limits import TraceLimits
from refcheck_callbacks.integrations.otlp.pairing import shape_of
from refcheck_callbacks.integrations.otlp.traces import OpenTrace, TraceAssembly
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import TraceContext

SOURCE = "otlp"
"""`refcheck.source` in the metadata of every answer the receiver submits."""
Record = Callable[[Tally, str, int], None]
"""Where refusals are also counted for the metrics: `RefCheckMonitor.record`."""
_LOG_LINES = {
    reason: f"refcheck collect: {reason.value}: %s (counted; logged once a minute)"
    for reason in (*RejectReason, *ForwardReason)
}
"""One message template per reason, so the package's rate-limited logger shows the first of
each reason, then at most one a minute."""


class TraceCollector:
    def __init__(
        self,
        sink: AnswerSink,
        limits: TraceLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        record: Record | None = None,
    ) -> None:
        self.sink = sink
        self._record = record
        self.assembly = TraceAssembly(limits or TraceLimits(), self._complete, self._drop, clock)
        self.traces: Counter[str] = Counter()
        """Traces by what became of them: submitted (queued for checking), not_queued (the
        sink did not queue it: sampled out, or dropped, each counted by the sink under its
        reason), and the skip, drop and error reasons above."""
        self.rejected: Counter[str] = Counter()
        """Export requests refused, by `RejectReason` (spans, for `bad_span_id`)."""
        self.ignored: Counter[str] = Counter()
        """Export requests of signals the receiver does not read (`/v1/metrics`, `/v1/logs`),
        answered as a collector answers them, by `IgnoreReason`."""
        self.intake = Intake(self.assembly.limits.intake_bytes)
        """Room for requests in flight (`intake.py`), shared by the HTTP and gRPC receivers."""
        self.not_forwarded: Counter[str] = Counter()
        """Export requests `--forward` did not pass on, by `ForwardReason`."""
        self.paired: Counter[str] = Counter()
        """Traces paired, by where their references came from: "documents" (retrieved ones
        the answering prompt shows) or "prompt" (the context the prompt carries, no
        retrieved document having reached it: `prompt_context`)."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    # -- intake ------------------------------------------------------------------------------

    def take(
        self,
        data: bytes | bytearray,
        content_type: str,
        reservation: Reservation | None = None,
    ) -> int:
        """Read an export request's spans into the assembly, a batch at a time, reserving what
        parsing builds (`reservation`, else one of its own for the body and what it builds):
        `decode.PayloadTooLarge` when that could never fit, `received.NoRoom` when requests in
        flight hold the room now. Returns how many spans were rejected (bad ids), each counted
        `bad_span_id`."""
        own = reservation is None
        if reservation is None:
            reservation = self.intake.reservation()
            reservation.grow_to(len(data), "the body")
        try:
            bad_ids = decode.read(
                data, content_type, self.assembly.add, self.assembly.admit, None, reservation
            )
        finally:
            if own:
                reservation.shrink_to(0)
        if bad_ids.count:
            self.reject(RejectReason.BAD_SPAN_ID, bad_ids.example, bad_ids.count)
        return bad_ids.count

    def ignore(self, reason: IgnoreReason) -> None:
        """Count an export of a signal the receiver answers and does not read."""
        with self._lock:
            self.ignored[reason.value] += 1
        if self._record is not None:
            self._record(Tally.IGNORED, reason.value, 1)

    def reject(self, reason: RejectReason, detail: str, count: int = 1) -> None:
        """Count a refusal (for `/v1/stats` and the metrics) and log it, rate-limited."""
        with self._lock:
            self.rejected[reason.value] += count
        self._counted(Tally.REJECTED, reason, detail, count)

    def lose_forward(self, reason: ForwardReason, detail: str) -> None:
        """Count an export request `--forward` did not pass on, and log it, rate-limited."""
        with self._lock:
            self.not_forwarded[reason.value] += 1
        self._counted(Tally.NOT_FORWARDED, reason, detail, 1)

    def _counted(
        self, tally: Tally, reason: RejectReason | ForwardReason, detail: str, count: int
    ) -> None:
        logger.warning(_LOG_LINES[reason], detail)
        if self._record is not None:
            self._record(tally, reason.value, count)

    # -- completion --------------------------------------------------------------------------

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.traces[outcome] += 1

    def _count_paired(self, source: str) -> None:
        with self._lock:
            self.paired[source] += 1

    def _drop(self, trace: OpenTrace, reason: DropReason) -> None:
        self._count(reason.value)
        self.sink.dropped(reason)

    def _complete(self, trace: OpenTrace) -> None:
        root = trace.root
        assert root is not None, "a complete trace has its root"
        try:
            shape = shape_of(trace, self._count_paired)
        except Exception:  # a hostile trace must not stop the sweeper
            logger.exception("refcheck collect: reading trace %s failed", trace.trace_id)
            self._count(ErrorReason.TRACE_PAIRING.value)
            self.sink.errored(ErrorReason.TRACE_PAIRING)
            return
        if shape is None:
            self._count(SkipReason.TRACE_UNPAIRED.value)
            self.sink.skipped(SkipReason.TRACE_UNPAIRED)
            return
        accepted = self.sink.submit(
            question=shape.question,
            pairing=shape.pairing,
            trace_context=TraceContext(trace_id=trace.trace_id, span_id=root.span_id),
            metadata={"refcheck.source": SOURCE, "refcheck.trace.convention": shape.convention},
        )
        self._count("submitted" if accepted else "not_queued")

    # -- sweeper -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread that finishes complete traces."""
        if self._sweeper is None:
            self._sweeper = threading.Thread(
                target=self._sweep_loop, name="refcheck-collect-sweeper", daemon=True
            )
            self._sweeper.start()

    def _sweep_loop(self) -> None:
        interval = min(max(self.assembly.limits.idle / 4, 0.02), 1.0)
        while not self._stop.wait(interval):
            try:
                self.assembly.sweep()
            except Exception:
                logger.exception("refcheck collect: sweeping traces failed")

    def close(self, timeout: float = 5.0) -> None:
        """Stop the sweeper, then submit every open trace whose root arrived and count the
        rest dropped (`shutdown`)."""
        self._stop.set()
        if self._sweeper is not None:
            self._sweeper.join(timeout)
        for trace in self.assembly.drain():
            if trace.root is not None:
                self._complete(trace)
            else:
                self._drop(trace, DropReason.SHUTDOWN)

    def stats(self) -> dict[str, Any]:
        """What `GET /v1/stats` answers."""
        spans = self.assembly.spans
        with self._lock:
            return {
                "open_traces": self.assembly.open_traces,
                "buffered_bytes": self.assembly.buffered_bytes,
                "in_flight_bytes": self.intake.used,
                "spans": {
                    "received": spans.received,
                    "late": spans.late,
                    "given_up": spans.given_up,
                },
                "traces": dict(self.traces),
                "paired": dict(self.paired),
                "rejected_requests": dict(self.rejected),
                "not_forwarded": dict(self.not_forwarded),
                "ignored_requests": dict(self.ignored),
            }
