"""One deadline for a whole operation, and calls that may overrun it.

`flush(timeout)` and `shutdown(timeout)` promise to return within `timeout` in total, however
many steps they take: each step gets what is left of one `Deadline`. Some steps call code we
do not control and that ignores its own timeout (an OpenTelemetry SDK flushing to an endpoint
that never answers blocks for a minute whatever it is told). `SingleFlight` runs such a call on
a daemon thread and waits for it only until the deadline.

Every timeout the app hands us goes through `wait_limit` first: a timeout longer than any wait
can be told (`MAX_WAIT_S`, about 24.8 days: the longest a child process or a selector can be
waited for; `threading` stops at 292 years), infinity or None is a wait without end, never an
`OverflowError`; a negative timeout or NaN waits not at all.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from refcheck_callbacks.errors import RefCheckError

R = TypeVar("R")

MAX_WAIT_S = (2**31 - 1) / 1000
"""The longest wait every primitive we wait on accepts: `poll` and `multiprocessing`'s `wait`
take milliseconds as a C int. A longer timeout is a wait without end."""


def wait_limit(timeout: float | None) -> float | None:
    """The seconds to wait for `timeout`: None (no end) for None, infinity and anything above
    `MAX_WAIT_S`; 0 for a negative number or NaN (waiting for nonsense would hang a shutdown);
    else the timeout itself. Never raises, whatever number type it is given."""
    if timeout is None:
        return None
    try:
        seconds = float(timeout)
    except OverflowError:  # an int past a float's range: longer than any wait
        return None
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(seconds) or seconds <= 0.0:
        return 0.0
    return None if seconds > MAX_WAIT_S else seconds


class Deadline:
    """A point in time; None means no deadline (see `wait_limit` for what a timeout means)."""

    def __init__(self, timeout: float | None) -> None:
        seconds = wait_limit(timeout)
        self._at = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None when there is no deadline."""
        return None if self._at is None else max(0.0, self._at - time.monotonic())

    @property
    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0.0


class Flight(Generic[R]):
    """One call run by `SingleFlight`: its result, or what it raised."""

    def __init__(self, function: Callable[[], R]) -> None:
        self.done = threading.Event()
        self.result: R | None = None
        self.error: BaseException | None = None
        self._function = function

    def __call__(self) -> None:
        try:
            self.result = self._function()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()


class Overrun(RefCheckError):
    """The call did not finish before the deadline; it runs on in the background."""


class SingleFlight(Generic[R]):
    """Runs calls on a daemon thread, at most one at a time, each waited for until a deadline.

    A hung back end then holds one thread, not one per flush: a call made while an earlier one
    still runs first waits for that one (within its own deadline) before starting its own.

    A forked child starts afresh: the parent's running call has no thread in the child, and
    waiting for it would make every flush there overrun.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._running: Flight[R] | None = None

    def call(self, function: Callable[[], R], deadline: Deadline) -> Flight[R]:
        """The finished call (its result or what it raised); `Overrun` at the deadline.
        Anything else raised here interrupted the waiting thread itself (Ctrl-C)."""
        if self._pid != os.getpid():
            self._reset()
        while True:
            with self._lock:
                running = self._running
                if running is None or running.done.is_set():
                    call = self._running = Flight(function)
                    break
            if not running.done.wait(deadline.remaining()):
                raise Overrun(f"{self.name}: an earlier call is still running")
        threading.Thread(target=call, name=self.name, daemon=True).start()
        if not call.done.wait(deadline.remaining()):
            raise Overrun(f"{self.name}: still running at the deadline")
        return call
