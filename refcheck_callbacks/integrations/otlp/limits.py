"""The receiver's limits, in one light module: `refcheck collect` reads its defaults and help
from here without importing the receiver (so `refcheck --help` stays instant).

Each `TraceLimits` field carries its command-line help in `metadata["help"]`; the CLI builds
one `--flag` per field from it, with the field's default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_BODY_BYTES = 16 << 20
"""Largest request body, also after gunzip."""
MAX_CONNECTIONS = 32
"""Connections open at once; a new one evicts the one that waited longest for its request."""
REQUEST_TIMEOUT = 10.0
"""Seconds a request may take to arrive whole (headers and body), or a connection may idle."""

INTAKE_SHARE = 4
"""A quarter of `--max-buffered-bytes` is for requests in flight, the rest for waiting spans."""


@dataclass(frozen=True)
class TraceLimits:
    """What waits in memory until a trace is complete (`traces.TraceAssembly`)."""

    idle: float = field(
        default=5.0,
        metadata={
            "help": "a trace is complete when its root span arrived and no span came for this long"
        },
    )
    """Seconds without a new span after the root arrived before a trace is complete."""
    max_open_traces: int = field(
        default=10_000,
        metadata={"help": "traces waiting at once; beyond, the least recently active is dropped"},
    )
    max_spans_per_trace: int = field(
        default=2_000, metadata={"help": "a trace with more spans is given up"}
    )
    max_trace_age: float = field(
        default=300.0,
        metadata={
            "help": "a trace whose root never arrives is given up this long after its first span"
        },
    )
    """Seconds from a trace's first span until it is given up without its root."""
    max_buffered_bytes: int = field(
        default=256 << 20,
        metadata={
            "help": "memory held for clients: three quarters for the spans of open traces "
            "(beyond, the least recently active trace is dropped), a quarter for requests in "
            "flight (beyond, a request is refused 503 no_room)"
        },
    )
    """All the receiver holds for its clients: waiting spans (`ReceivedSpan.size`, at most
    `span_bytes`) and requests in flight (`intake.Intake`, at most `intake_bytes`)."""
    remembered_traces: int = field(
        default=100_000,
        metadata={
            "help": "finished trace ids kept, so that their late spans are counted, not reopened"
        },
    )
    """Finished or given-up trace ids kept, to discard their late spans."""

    @property
    def intake_bytes(self) -> int:
        """The share of `max_buffered_bytes` for requests in flight."""
        return self.max_buffered_bytes // INTAKE_SHARE

    @property
    def span_bytes(self) -> int:
        """The share of `max_buffered_bytes` for the spans of open traces."""
        return self.max_buffered_bytes - self.intake_bytes

    def __post_init__(self) -> None:
        for name in ("max_open_traces", "max_spans_per_trace", "max_buffered_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.remembered_traces < 0:
            raise ValueError("remembered_traces must be >= 0")
        if self.idle < 0 or self.max_trace_age <= 0:
            raise ValueError("idle must be >= 0 and max_trace_age > 0")
