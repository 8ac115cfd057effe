"""Counts of what the monitor did not check, or failed at: nothing is dropped silently.

Every drop, skip and internal error is counted here (exact, thread-safe) and forwarded to the
exporters as a metric, by a reason of `contract.reasons`. Every accepted submission ends
delivered (its result reached the exporters and hooks), dropped with one of the `LOST_REASONS`,
or, when an integration left its pairing to the worker and the answering model saw nothing to
check against, skipped `no_references` there; so at any quiet moment, for submissions without
a pairing, `accepted == delivered + stats.get(Tally.DROPPED, reason)` summed over
`LOST_REASONS`.
"""

from __future__ import annotations

import threading

from refcheck_callbacks.contract.reasons import Reason, Tally, reason_label


class Counters:
    """Exact counts by (tally, reason); reasons are kept as their plain string values."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[Tally, str], int] = {}

    def add(self, tally: Tally, reason: Reason | str, count: int = 1) -> None:
        with self._lock:
            key = (tally, reason_label(reason))
            self._counts[key] = self._counts.get(key, 0) + count

    def get(self, tally: Tally, reason: Reason | str | None = None) -> int:
        """The count for one reason, or for all reasons of a tally."""
        label = None if reason is None else reason_label(reason)
        with self._lock:
            return sum(n for (t, r), n in self._counts.items() if t is tally and label in (None, r))

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            for (tally, reason), count in sorted(self._counts.items()):
                out.setdefault(tally.value, {})[reason] = count
            return out

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
