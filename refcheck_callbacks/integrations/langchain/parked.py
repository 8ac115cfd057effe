"""Retrievals that ended without an answer, waiting for the answer of a later run.

Hand-written code often retrieves in one run and answers in another:

    docs = retriever.invoke(question)             # root run 1: documents, no answer
    return chain.invoke({"context": fmt(docs), "question": question})  # root run 2

No run tree ties the two. A run that ends with documents and no answer parks them under its
*pairing key*: the OpenTelemetry span current when it started (both runs start inside the
app's request span), else the thread and asyncio task it started on (both run one after the
other in the same function). A later run with the same key that answers without documents of
its own `peek`s at them when it ends, on the app's thread; the monitor's worker takes them
(`ParkedClaim.take`) only once it found them in that run's answering prompt, so that a run in
between that did not show them leaves them to the answer that does. Documents nobody takes
within `ttl`, or pushed out beyond `max_keys`, are counted as skipped `unpaired`.

Park and peek happen once per root run at most, take once per answer, each under a lock and
O(1) amortised (at most `MAX_RETRIEVALS_PER_KEY` retrievals per key).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.types import TraceContext

MAX_RETRIEVALS_PER_KEY = 8


def pairing_key(trace_context: TraceContext | None) -> Hashable:
    """The key under which runs started in the same request pair up (see the module)."""
    if trace_context is not None:
        return (trace_context.trace_id, trace_context.span_id)
    loop = asyncio._get_running_loop()
    task = None if loop is None else asyncio.current_task(loop)
    return (threading.get_ident(), id(task))


class ParkedDocuments:
    def __init__(
        self,
        on_unpaired: Callable[[int], None],
        ttl: float = 60.0,
        max_keys: int = 1_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_unpaired(n)` is called, outside the lock, with the number of retrievals that
        expired or overflowed unclaimed."""
        self.ttl = ttl
        self.max_keys = max_keys
        self._on_unpaired = on_unpaired
        self._clock = clock
        self._lock = threading.Lock()
        self._parked: OrderedDict[Hashable, tuple[float, list[list[Any]]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._parked)

    def park(self, key: Hashable, documents: list[Any]) -> None:
        now = self._clock()
        with self._lock:
            _, retrievals = self._parked.pop(key, (now, []))
            retrievals.append(documents)
            lost = max(0, len(retrievals) - MAX_RETRIEVALS_PER_KEY)
            del retrievals[:lost]
            self._parked[key] = (now, retrievals)
            lost += self._expire_locked(now)
        self._lost(lost)

    def peek(self, key: Hashable) -> ParkedClaim | None:
        """The retrievals parked under `key` now, left parked; None when there are none."""
        with self._lock:
            entry = self._parked.get(key)
            if entry is None:
                return None
            return ParkedClaim(self, key, tuple(reversed(entry[1])))

    def take(self, claim: ParkedClaim) -> list[Any]:
        """The documents of `claim`'s retrievals that are still parked, which no longer are;
        newest retrieval first."""
        with self._lock:
            entry = self._parked.get(claim.key)
            if entry is None:
                return []
            retrievals = entry[1]
            taken = [r for r in claim.retrievals if any(r is p for p in retrievals)]
            if len(taken) == len(retrievals):
                del self._parked[claim.key]
            else:
                retrievals[:] = [p for p in retrievals if not any(p is r for r in taken)]
        return [d for retrieval in taken for d in retrieval]

    def sweep(self) -> int:
        """Count and forget what has waited longer than `ttl`; returns how many retrievals."""
        with self._lock:
            lost = self._expire_locked(self._clock())
        self._lost(lost)
        return lost

    def _expire_locked(self, now: float) -> int:
        lost = 0
        parked = self._parked
        while parked:
            key, (parked_at, retrievals) = next(iter(parked.items()))
            if len(parked) <= self.max_keys and now - parked_at < self.ttl:
                break
            del parked[key]
            lost += len(retrievals)
        return lost

    def _lost(self, count: int) -> None:
        if count:
            self._on_unpaired(count)


@dataclass(frozen=True, slots=True)
class ParkedClaim:
    """Retrievals parked under one key, as a later run saw them when it ended (newest first).
    They stay parked until `take`."""

    store: ParkedDocuments
    key: Hashable
    retrievals: tuple[list[Any], ...]

    @property
    def documents(self) -> list[Any]:
        return [d for retrieval in self.retrievals for d in retrieval]

    def take(self) -> list[Any]:
        """The documents of these retrievals still parked, no longer parked (see
        `ParkedDocuments.take`)."""
        return self.store.take(self)
