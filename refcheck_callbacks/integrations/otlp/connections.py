"""The receiver's open connections: at most `max_connections`, each holding its room
(`CONNECTION_BYTES` of the intake, for its buffers), and which one a new connection closes.

A new connection, when every place is taken, closes one that is waiting on its client, in
this order: one that has sent nothing yet, one idle between requests, one whose request is
still arriving or whose client is not reading its reply; the longest waiting first within
each. So a churn of connections that send nothing closes its own kind, never a client that
has proven itself by a request, and a client that does not read cannot hold a place. Only when
every place is answering a request (our own time) does the new one wait. Closing a connection
for a new one counts `timeout`, once, unless its request was answered (and counted) already.

A connection lingering after its refusal (its request answered and counted; what the client
still sends is discarded, so that its reply is not destroyed by a reset) gives its place up:
it keeps only its room (`CONNECTION_BYTES`), and when a new connection finds no room, the
oldest lingering one is closed first, uncounted.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum

from refcheck_callbacks.integrations.otlp.intake import Intake, Reservation

CONNECTION_BYTES = 256 << 10
"""What a connection may hold in buffers: asyncio's stream buffer (up to twice its 64 KiB
limit before it stops reading), one 64 KiB read, h11's buffer (a read, and a request head of
up to 16 KiB), the reply."""

_RECHECK_S = 0.05


class Waiting(IntEnum):
    """What a connection waits for, in the order connections are closed for a new one."""

    FRESH = 1
    """Accepted, nothing received yet."""
    IDLE = 2
    """Between requests, after one was answered."""
    CLIENT = 3
    """Its request is arriving, or its client has not read the reply."""
    SERVING = 4
    """Its request arrived whole and is being answered: never closed for a new one."""


@dataclass(eq=False)
class Connection:
    writer: asyncio.StreamWriter
    reservation: Reservation
    waiting_since: float = field(default_factory=time.monotonic)
    state: Waiting = Waiting.FRESH
    evicted: bool = False
    answered: bool = False
    """Its current request was answered (and counted, if refused): closing it counts nothing."""

    def waiting_for(self) -> Waiting:
        """Its state for eviction: a fresh connection whose request already waits in the
        kernel, not yet read because the loop was busy, has sent something (its client
        proved itself), so it is not closed as one that sent nothing."""
        if self.state is Waiting.FRESH and _unread_bytes(self.writer) > 0:
            return Waiting.CLIENT
        return self.state

    def now(self, state: Waiting) -> None:
        self.state = state
        self.waiting_since = time.monotonic()
        if state in (Waiting.FRESH, Waiting.IDLE):
            self.answered = False


class ConnectionTable:
    def __init__(self, max_connections: int, intake: Intake, on_evict: Callable[[], None]):
        """`on_evict()`: count a connection closed for a new one (not a lingering one)."""
        self.max_connections = max_connections
        self._intake = intake
        self._on_evict = on_evict
        self._open: set[Connection] = set()
        self._lingering: dict[Connection, None] = {}
        """Oldest first."""
        self._freed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._open)

    async def admit(self, writer: asyncio.StreamWriter) -> Connection:
        """A place for a new connection, closing a waiting one if need be, and its room:
        `NoRoom` / `PayloadTooLarge` when requests in flight hold the room."""
        while len(self._open) >= self.max_connections:
            if not self._evict_one():  # every place is serving: wait for one to close or
                self._freed.clear()  # to wait on its client again (looked at every 50 ms)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._freed.wait(), _RECHECK_S)
        reservation = self._intake.reservation()
        while True:
            try:
                reservation.grow_to(CONNECTION_BYTES, "a connection")
                break
            except ValueError:
                if self._lingering:
                    self._abort(next(iter(self._lingering)))
                elif not self._evict_one():
                    raise
        connection = Connection(writer, reservation)
        self._open.add(connection)
        return connection

    def _evict_one(self) -> bool:
        waiting = [c for c in self._open if c.state is not Waiting.SERVING and not c.evicted]
        if not waiting:
            return False
        victim = min(waiting, key=lambda c: (c.waiting_for(), c.waiting_since))
        if not victim.answered:
            self._on_evict()
        self._abort(victim)
        return True

    def linger(self, connection: Connection) -> None:
        """The connection's request was answered and it only discards what still comes:
        its place is free; its room is taken back when a new connection needs it."""
        self._open.discard(connection)
        self._freed.set()
        self._lingering[connection] = None

    def _abort(self, connection: Connection) -> None:
        connection.evicted = True
        self.close(connection)
        connection.writer.transport.abort()

    def close(self, connection: Connection) -> None:
        """The connection is gone: its place and room are free (again, if something reserved
        after it was closed for a new one)."""
        connection.reservation.shrink_to(0)
        self._lingering.pop(connection, None)
        if connection in self._open:
            self._open.discard(connection)
            self._freed.set()


def _unread_bytes(writer: asyncio.StreamWriter) -> int:
    """Bytes the kernel holds for the connection that nobody has read yet (FIONREAD)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return 0
    count = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    except OSError:
        return 0
    return count[0]
