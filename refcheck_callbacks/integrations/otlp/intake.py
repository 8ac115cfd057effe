"""Room for requests in flight: the share of `--max-buffered-bytes` that everything held for a
client while its request is served (its connection's buffers, the body as it arrives, the
body gunzipped, what parsing builds before its spans join the waiting traces) is reserved
from, before it is held.

The bound is split in two so that neither side can take the other's room: waiting spans get
`TraceLimits.span_bytes` (beyond it the least recently active trace is dropped, as spans
arrive) and requests in flight `TraceLimits.intake_bytes`. A reservation never evicts
anything: a request that needs more than the whole share is refused `too_large` (413), one
that finds the share taken by other requests is refused `no_room` (503, which OTLP exporters
retry). So a hostile body can cost its own request, never the traces already waiting.
"""

from __future__ import annotations

import threading

from refcheck_callbacks.integrations.otlp.received import NoRoom, PayloadTooLarge

_SLACK = 1 << 20


class Intake:
    """Bytes reserved by the requests in flight, at most `capacity`."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def reservation(self) -> Reservation:
        return Reservation(self)

    def _take(self, count: int) -> bool:
        with self._lock:
            if self._used + count > self.capacity:
                return False
            self._used += count
            return True

    def _give(self, count: int) -> None:
        with self._lock:
            self._used -= count


class Reservation:
    """What one connection (and the request it is serving) holds of the intake. Used by one
    request at a time: on the loop while the request arrives, then in the decoding thread."""

    def __init__(self, intake: Intake) -> None:
        self.intake = intake
        self.held = 0

    def grow_to(self, total: int, what: str) -> None:
        """Hold `total` bytes in all: `PayloadTooLarge` when the whole share could never hold
        them, `NoRoom` when other requests hold what it lacks now (nothing is evicted)."""
        if total <= self.held:
            return
        capacity = self.intake.capacity
        if total > capacity:
            raise PayloadTooLarge(
                f"{what} needs {total} bytes, more than the {capacity} bytes the receiver keeps "
                "for requests in flight (a quarter of --max-buffered-bytes)"
            )
        if not self.intake._take(total - self.held):
            raise NoRoom(
                f"{what} needs {total} bytes; requests in flight hold {self.intake.used} of the "
                f"{capacity} bytes kept for them: retry"
            )
        self.held = total

    def grow_at_least(self, total: int, what: str) -> int:
        """Hold at least `total` bytes, and up to `_SLACK` more when there is room (so that
        a growing request takes the lock rarely); returns what is held."""
        try:
            self.grow_to(total + min(total, _SLACK), what)
        except PayloadTooLarge:  # NoRoom too: the slack is not needed
            self.grow_to(total, what)
        return self.held

    def shrink_to(self, total: int) -> None:
        if total < self.held:
            self.intake._give(self.held - total)
            self.held = total


class GrowingBuffer:
    """Bytes that arrive in pieces of unknown total (a chunked body, a body as it is
    gunzipped), in one bytearray, never more than `limit`: room for twice what it holds is
    reserved before it grows (a bytearray may copy itself to grow)."""

    def __init__(self, reservation: Reservation, limit: int, what: str) -> None:
        self.data = bytearray()
        self._reservation = reservation
        self._base = reservation.held
        self._limit = limit
        self._what = what

    def extend(self, piece: bytes | bytearray | memoryview) -> None:
        size = len(self.data) + len(piece)
        if size > self._limit:
            raise PayloadTooLarge(f"{self._what} exceeds {self._limit} bytes")
        needed = self._base + 2 * size
        if needed > self._reservation.held:
            self._reservation.grow_at_least(needed, self._what)
        self.data += piece
