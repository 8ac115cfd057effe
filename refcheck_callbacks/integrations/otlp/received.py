"""What the receiver keeps of a span (`ReceivedSpan`), and the reader both encodings share: it
sizes every object it builds as it builds it and reserves those bytes (`Reservation`) before
the next, so parsing never holds more than the reservation says, whatever the body's shape.

Only what a pairing rule reads is kept of a span: its ids, name, times, and the attributes and
events of the conventions we know (`KEPT_PREFIXES`). An HTTP or database span of the app costs
a few hundred bytes while its trace waits. `size` is what a span holds as Python holds it, so
the receiver bounds its memory in bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Reservation(Protocol):
    """What parsing needs of the room it holds (`intake.Reservation`, which imports this
    module for its refusals)."""

    held: int

    def grow_at_least(self, total: int, what: str) -> int: ...


KEPT_PREFIXES = (
    "input.",
    "output.",
    "llm.",
    "retrieval.",
    "reranker.",
    "openinference.",
    "traceloop.",
    "gen_ai.",
)
"""Attribute (and event) names the pairing rules read: OpenInference, OpenLLMetry, GenAI."""
KEPT_PREFIX_BYTES = tuple(prefix.encode() for prefix in KEPT_PREFIXES)
SPAN_OVERHEAD = 600
"""Bytes a kept span costs beyond its attributes and events (the object, its id strings, its
name): measured with tracemalloc (benchmarks/collect_throughput.py)."""
SCALAR = 32
"""An int or float object (24-36 bytes) and the slot that holds it."""
ITEM = 8
"""A list's or dict's slot for one more item, counted as items are read (the container is
measured by `sys.getsizeof` once complete)."""
MAX_DEPTH = 8
"""Nesting of array / kvlist values read; deeper values are left out."""
BATCH_SPANS = 256
BATCH_BYTES = 1 << 20
"""Spans read are handed to the waiting traces in batches of at most this many spans or
bytes, each batch making room before the next is read."""


class PayloadError(ValueError):
    """A body that is not an OTLP trace export. Internal to the receiver (it becomes a 400),
    so not part of the public `RefCheckError` tree."""


class PayloadTooLarge(ValueError):
    """A body whose decompressed form, or what parsing it takes, exceeds a limit (a 413)."""


class NoRoom(PayloadTooLarge):
    """The room for requests in flight is held by other requests now (a 503, retried)."""


class UnsupportedEncoding(ValueError):
    """A Content-Encoding other than gzip (a 415)."""


@dataclass(slots=True)
class ReceivedSpan:
    """One span, as much of it as pairing reads."""

    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    size: int
    """Estimated bytes held, as Python holds them: every str, list and dict by its
    `sys.getsizeof` (a string of 4-byte characters costs 4 bytes a character), every number
    as an object, nesting counted, plus `SPAN_OVERHEAD`."""


@dataclass(slots=True)
class BadIds:
    """The spans left out for an id of the wrong length."""

    count: int = 0
    example: str = ""

    def add(self, trace_id: bytes | bytearray, span_id: bytes | bytearray) -> None:
        self.count += 1
        self.example = (
            f"a span with a {len(trace_id)}-byte trace id and a {len(span_id)}-byte span id"
        )


Admit = Callable[[str], bool]
AddSpans = Callable[[list[ReceivedSpan]], None]


class SpanReader:
    """What both decoders share: the bytes built and not yet handed on (`building`, the span
    being read included), reserved before they grow past `allowed`; ids checked; batches."""

    def __init__(
        self,
        add: AddSpans,
        admit: Admit,
        bad_ids: BadIds,
        reservation: Reservation | None,
    ) -> None:
        self._add = add
        self._admit = admit
        self.bad_ids = bad_ids
        self._reservation = reservation
        self._base = 0 if reservation is None else reservation.held
        """What the request held before parsing (its connection, its body)."""
        self.building = 0
        self.allowed = 0
        self._batch: list[ReceivedSpan] = []
        self._batch_bytes = 0

    def reserve(self, extra: int = 0) -> None:
        """Make `building + extra` bytes fit the reservation (called when they pass
        `allowed`): `NoRoom` or `PayloadTooLarge` when they cannot."""
        needed = self.building + extra
        if self._reservation is None:
            self.allowed = max(self.allowed, needed)
            return
        self.allowed = self._reservation.grow_at_least(self._base + needed, "parsing the body")
        self.allowed -= self._base

    def admitted(self, trace_id: bytes | bytearray, span_id: bytes | bytearray) -> str | None:
        """The trace id in hex when the ids are valid and its trace takes spans; None (the span
        counted) otherwise."""
        if len(trace_id) != 16 or len(span_id) != 8:
            self.bad_ids.add(trace_id, span_id)
            return None
        hex_id = trace_id.hex()
        return hex_id if self._admit(hex_id) else None

    def put(self, span: ReceivedSpan) -> None:
        """A span read (its bytes counted in `building` as they were built)."""
        self._batch.append(span)
        self._batch_bytes += span.size
        if len(self._batch) >= BATCH_SPANS or self._batch_bytes >= BATCH_BYTES:
            self.flush()

    def drop_span(self, built: int) -> None:
        """A span read then left out: its `built` bytes are free again."""
        self.building -= built

    def flush(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            self._add(batch)
            self.building -= self._batch_bytes
            self._batch_bytes = 0
