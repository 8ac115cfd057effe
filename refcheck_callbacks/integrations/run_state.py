"""Per-run capture state shared by the framework integrations: locked, bounded, swept by age.

A framework reports a tree of runs (LangChain runs, LlamaIndex spans) from many threads and
tasks. Each root run owns one state object; its descendants are aliases that resolve to the
root's key. The state is freed when the root ends, or swept when it is older than `ttl`
(a stream nobody finished consuming never ends). Every operation is O(1) amortised; sweeping
runs at most once per `ttl / 4` and walks runs oldest first, stopping at the first young one.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

S = TypeVar("S")
Key = Hashable


class RunStates(Generic[S]):
    def __init__(
        self,
        ttl: float = 600.0,
        max_runs: int = 10_000,
        on_evict: Callable[[S, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_evict(state, reason)` is called, outside the lock, for runs that expired
        ("expired") or were pushed out by `max_runs` ("overflow")."""
        self.ttl = ttl
        self.max_runs = max_runs
        self._on_evict = on_evict
        self._clock = clock
        self._lock = threading.Lock()
        self._roots: OrderedDict[Key, tuple[float, S]] = OrderedDict()
        self._alias: dict[Key, Key] = {}
        self._children: dict[Key, list[Key]] = {}
        self._next_sweep = clock() + ttl / 4

    def start(self, root: Key, state: S) -> None:
        """Register a root run with its state (replacing any state under the same key)."""
        evicted: list[tuple[S, str]] = []
        with self._lock:
            self._drop_locked(root)
            self._roots[root] = (self._clock(), state)
            self._children[root] = []
            evicted = self._sweep_locked()
        self._evicted(evicted)

    def alias(self, child: Key, parent: Key) -> Key | None:
        """Attach `child` to the root that `parent` belongs to; returns that root, or None."""
        with self._lock:
            root = self._alias.get(parent, parent)
            if root not in self._roots:
                return None
            if child != root and child not in self._alias:
                self._alias[child] = root
                self._children[root].append(child)
            return root

    def root_of(self, key: Key) -> Key | None:
        with self._lock:
            root = self._alias.get(key, key)
            return root if root in self._roots else None

    def get(self, key: Key) -> S | None:
        """The state of the root that `key` (a root or an alias) belongs to."""
        with self._lock:
            entry = self._roots.get(self._alias.get(key, key))
            return None if entry is None else entry[1]

    def pop(self, root: Key) -> S | None:
        """Free a root run and all its aliases; returns its state."""
        with self._lock:
            return self._drop_locked(root)

    def _drop_locked(self, root: Key) -> S | None:
        entry = self._roots.pop(root, None)
        for child in self._children.pop(root, ()):
            self._alias.pop(child, None)
        return None if entry is None else entry[1]

    def _sweep_locked(self) -> list[tuple[S, str]]:
        evicted: list[tuple[S, str]] = []
        while len(self._roots) > self.max_runs:
            key = next(iter(self._roots))
            evicted.append((self._roots[key][1], "overflow"))
            self._drop_locked(key)
        now = self._clock()
        if now < self._next_sweep:
            return evicted
        self._next_sweep = now + self.ttl / 4
        while self._roots:
            key, (started, state) = next(iter(self._roots.items()))
            if now - started < self.ttl:
                break
            evicted.append((state, "expired"))
            self._drop_locked(key)
        return evicted

    def sweep(self) -> int:
        """Expire old runs now; returns how many were freed."""
        with self._lock:
            self._next_sweep = self._clock()
            evicted = self._sweep_locked()
        self._evicted(evicted)
        return len(evicted)

    def _evicted(self, evicted: list[tuple[S, str]]) -> None:
        if self._on_evict is None:
            return
        for state, reason in evicted:
            self._on_evict(state, reason)

    def __len__(self) -> int:
        return len(self._roots)

    @property
    def alias_count(self) -> int:
        return len(self._alias)
