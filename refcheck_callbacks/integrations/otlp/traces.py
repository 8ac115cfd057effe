"""Received spans gathered into traces, in bounded memory, until each trace is complete.

A trace is complete when its root span (no parent) has arrived, which OTLP sends only once it
has ended, and no span of it has arrived for `idle` seconds: the other spans of a batch
exporter's trace come within a few export intervals. Everything waiting is bounded:

- `max_open_traces` traces and `span_bytes` of their spans (three quarters of
  `max_buffered_bytes`; requests in flight have the rest, `intake.Intake`): beyond either, the
  least recently active trace is given up (`trace_overflow`);
- `max_spans_per_trace`: a trace with more is given up at once (`trace_too_large`);
- `max_trace_age`: a trace whose root never arrives (a span that never ends) is given up that
  long after its first span (`trace_expired`).

A trace given up or completed is remembered (`remembered_traces` of them) so that its late
spans are counted and discarded instead of opening a new trace. Every trace given up is
counted once, by its reason, through `on_drop`. `add` and `sweep` take one lock; `add` is
linear in the spans it adds, `sweep` in the traces it finishes plus the idle traces that wait
for their root.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from refcheck_callbacks.contract.reasons import DropReason
from refcheck_callbacks.integrations.otlp.limits import TraceLimits
from refcheck_callbacks.integrations.otlp.received import ReceivedSpan


@dataclass(slots=True)
class OpenTrace:
    trace_id: str
    first_seen: float
    last_seen: float
    spans: list[ReceivedSpan] = field(default_factory=list)
    root: ReceivedSpan | None = None
    size: int = 0


@dataclass
class SpanCounts:
    """What happened to received spans (spans, not answers: the receiver's own stats)."""

    received: int = 0
    late: int = 0
    """Arrived for a trace already finished or given up."""
    given_up: int = 0
    """Held by traces given up (any drop reason)."""


class TraceAssembly:
    def __init__(
        self,
        limits: TraceLimits,
        on_complete: Callable[[OpenTrace], None],
        on_drop: Callable[[OpenTrace, DropReason], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_complete(trace)` and `on_drop(trace, reason)` are called outside the lock."""
        self.limits = limits
        self._on_complete = on_complete
        self._on_drop = on_drop
        self._clock = clock
        self._lock = threading.Lock()
        self._open: OrderedDict[str, OpenTrace] = OrderedDict()
        """Open traces, least recently active first."""
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._bytes = 0
        self.spans = SpanCounts()

    @property
    def open_traces(self) -> int:
        return len(self._open)

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def admit(self, trace_id: str) -> bool:
        """False (the span counted received and late) when its trace was finished or given
        up, so the decoder skips reading it: a flood of spans for a trace given up costs little
        more than reading their ids. A span admitted is counted received by `add`. The lock is
        taken only to refuse: every span of an export passes here, and two dict lookups under
        the GIL need none (`add` checks again under the lock)."""
        if trace_id not in self._finished or trace_id in self._open:
            return True
        with self._lock:
            self.spans.received += 1
            self.spans.late += 1
        return False

    def add(self, spans: Iterable[ReceivedSpan]) -> None:
        """Add admitted spans (`admit`)."""
        spans = list(spans)  # read (and admitted) before the lock is taken
        dropped: list[tuple[OpenTrace, DropReason]] = []
        limits = self.limits
        with self._lock:
            self.spans.received += len(spans)
            now = self._clock()
            for span in spans:
                trace = self._open.get(span.trace_id)
                if trace is None:
                    if span.trace_id in self._finished:
                        self.spans.late += 1  # finished since it was admitted
                        continue
                    trace = OpenTrace(span.trace_id, now, now)
                    self._open[span.trace_id] = trace
                else:
                    self._open.move_to_end(span.trace_id)
                    trace.last_seen = now
                    if trace.root is None and now - trace.first_seen >= limits.max_trace_age:
                        self.spans.given_up += 1
                        dropped.append((self._finish_locked(trace), DropReason.TRACE_EXPIRED))
                        continue
                if len(trace.spans) >= limits.max_spans_per_trace:
                    self.spans.given_up += 1  # this span; the trace's own are counted below
                    dropped.append((self._finish_locked(trace), DropReason.TRACE_TOO_LARGE))
                    continue
                trace.spans.append(span)
                trace.size += span.size
                self._bytes += span.size
                if span.parent_id is None:
                    trace.root = span
            while len(self._open) > limits.max_open_traces or (
                self._bytes > limits.span_bytes and self._open
            ):
                oldest = next(iter(self._open.values()))
                dropped.append((self._finish_locked(oldest), DropReason.TRACE_OVERFLOW))
            self.spans.given_up += sum(len(trace.spans) for trace, _ in dropped)
        for trace, reason in dropped:
            self._on_drop(trace, reason)

    def _finish_locked(self, trace: OpenTrace) -> OpenTrace:
        """Remove an open trace and remember its id."""
        self._open.pop(trace.trace_id, None)
        self._bytes -= trace.size
        self._finished[trace.trace_id] = None
        while len(self._finished) > self.limits.remembered_traces:
            self._finished.popitem(last=False)
        return trace

    def sweep(self) -> int:
        """Finish the traces that are complete and give up those too old; returns how many
        traces left. Call it every fraction of `idle` (the receiver's sweeper does)."""
        complete: list[OpenTrace] = []
        expired: list[OpenTrace] = []
        with self._lock:
            now = self._clock()
            quiet_since = now - self.limits.idle
            for trace in list(self._open.values()):
                if trace.last_seen > quiet_since:
                    break  # the rest were active more recently
                if trace.root is not None:
                    complete.append(self._finish_locked(trace))
                elif now - trace.first_seen >= self.limits.max_trace_age:
                    expired.append(self._finish_locked(trace))
            self.spans.given_up += sum(len(t.spans) for t in expired)
        for trace in expired:
            self._on_drop(trace, DropReason.TRACE_EXPIRED)
        for trace in complete:
            self._on_complete(trace)
        return len(complete) + len(expired)

    def drain(self) -> list[OpenTrace]:
        """Remove and return every open trace (at shutdown)."""
        with self._lock:
            traces = list(self._open.values())
            for trace in traces:
                self._finish_locked(trace)
        return traces
