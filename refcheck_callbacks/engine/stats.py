"""Counts of what the monitor did not check, or failed at: nothing is dropped silently.

Every drop, skip and internal error is counted here (exact, thread-safe) and forwarded to the
exporters as a metric. Every accepted submission ends delivered (its result reached the
exporters and hooks), dropped with one of the `LOST_*` reasons, or, when an integration left
its pairing to the worker and the answering model saw nothing to check against, skipped
`NO_REFERENCES` there; so at any quiet moment, for submissions without a pairing,
`accepted == delivered + stats.get(Tally.DROPPED, reason) summed over LOST_REASONS`.
"""

from __future__ import annotations

import threading
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


LOST_SHUTDOWN_TIMEOUT = "shutdown_timeout"
"""Accepted, but `shutdown(timeout)` ran out of time before its result was ready."""
LOST_EXIT = "exit"
"""Accepted, but the interpreter exited (the `exit_timeout` flush ran out) first."""
LOST_SIGNAL = "signal"
"""Accepted, but a signal ended the process (`install_signal_handlers`) or interrupted
`shutdown` first."""
LOST_WORKER_CRASH = "worker_crash"
"""Accepted, but the worker lost it to a failure of refcheck's own (a bug: see the log)."""
LOST_REASONS = (LOST_SHUTDOWN_TIMEOUT, LOST_EXIT, LOST_SIGNAL, LOST_WORKER_CRASH)
NO_REFERENCES = "no_references"
"""Skipped: the answering model saw nothing to check the answer against."""


class Counters:
    """Exact counts by (tally, reason)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[Tally, str], int] = {}

    def add(self, tally: Tally, reason: str, count: int = 1) -> None:
        with self._lock:
            key = (tally, reason)
            self._counts[key] = self._counts.get(key, 0) + count

    def get(self, tally: Tally, reason: str | None = None) -> int:
        """The count for one reason, or for all reasons of a tally."""
        with self._lock:
            return sum(
                n for (t, r), n in self._counts.items() if t is tally and reason in (None, r)
            )

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            for (tally, reason), count in sorted(self._counts.items()):
                out.setdefault(tally.value, {})[reason] = count
            return out

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
