"""Per-run capture state shared by the framework integrations: bounded, swept by age.

A framework reports a tree of runs (LangChain runs, LlamaIndex spans) from many threads and
tasks. Each root run owns one state object; its descendants are aliases that resolve to the
root's run. The state is freed when the root ends, or swept when it is older than `ttl`
(a stream nobody finished consuming never ends).

Lookups and aliasing are what every callback of the app does, so they take no lock: each is
one or two dict operations, atomic under the GIL. Freeing a root marks its run dead before
removing its aliases, and `alias` re-checks that mark after adding one, so an alias added
while its root is being freed is removed by one side or the other, never leaked. Starting,
freeing and sweeping roots (once or twice per root run) take a lock, because sweeping walks
the roots oldest first and stops at the first young one, at most once per `ttl / 4`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

S = TypeVar("S")
Key = Hashable


class _Run(Generic[S]):
    """One root run: its state, when it started, and the keys aliased to it."""

    __slots__ = ("aliases", "live", "root", "started", "state")

    def __init__(self, root: Key, state: S, started: float) -> None:
        self.root = root
        self.state = state
        self.started = started
        self.aliases: list[Key] = []
        self.live = True


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
        self._roots: OrderedDict[Key, _Run[S]] = OrderedDict()
        """Live roots, oldest first."""
        self._members: dict[Key, _Run[S]] = {}
        """Every live root and alias, to its run."""
        self._next_sweep = clock() + ttl / 4

    def start(self, root: Key, state: S) -> None:
        """Register a root run with its state (replacing any state under the same key)."""
        run = _Run(root, state, self._clock())
        with self._lock:
            self._drop_locked(root)
            self._roots[root] = run
            self._members[root] = run
            evicted = self._sweep_locked()
        self._evicted(evicted)

    def alias(self, child: Key, parent: Key) -> S | None:
        """Attach `child` to the root run `parent` belongs to; returns that run's state, or
        None when `parent` belongs to no live run."""
        members = self._members
        run = members.get(parent)
        if run is None:
            return None
        if child not in members:
            members[child] = run
            run.aliases.append(child)
            if not run.live:  # freed meanwhile, perhaps before it saw this alias
                members.pop(child, None)
        return run.state

    def root_of(self, key: Key) -> Key | None:
        """The root key of the run `key` (a root or an alias) belongs to."""
        run = self._members.get(key)
        return None if run is None else run.root

    def get(self, key: Key) -> S | None:
        """The state of the root that `key` (a root or an alias) belongs to."""
        run = self._members.get(key)
        return None if run is None else run.state

    def pop(self, root: Key) -> S | None:
        """Free a root run and all its aliases; returns its state (None if not a live root)."""
        with self._lock:
            return self._drop_locked(root)

    def _drop_locked(self, root: Key) -> S | None:
        run = self._roots.pop(root, None)
        if run is None:
            return None
        run.live = False
        members = self._members
        members.pop(root, None)
        for child in run.aliases:
            members.pop(child, None)
        return run.state

    def _sweep_locked(self) -> list[tuple[S, str]]:
        evicted: list[tuple[S, str]] = []
        while len(self._roots) > self.max_runs:
            run = next(iter(self._roots.values()))
            evicted.append((run.state, "overflow"))
            self._drop_locked(run.root)
        now = self._clock()
        if now < self._next_sweep:
            return evicted
        self._next_sweep = now + self.ttl / 4
        while self._roots:
            run = next(iter(self._roots.values()))
            if now - run.started < self.ttl:
                break
            evicted.append((run.state, "expired"))
            self._drop_locked(run.root)
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
        """Aliases held (0 when no run is open)."""
        return len(self._members) - len(self._roots)
