"""The checker protocol: many (claim, references) items in, one verdict per item out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from refcheck_callbacks.support.blocking import run_blocking
from refcheck_callbacks.types import CheckItem, Verdict


@runtime_checkable
class Checker(Protocol):
    """Labels claims against references.

    Batch-first: the engine flattens the claims of every request in its batch into one list, so
    a checker can sort, pack and deduplicate across requests. A failure on one claim is a
    `Verdict(label=None, error=...)`; raising fails the whole call.
    """

    name: str
    needs_references: bool
    """Whether a claim can only be checked against references. When True (every checker
    but a world-knowledge judge), a request without references ends `no_references` before
    it reaches the checker."""

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        """One verdict per item, in order."""
        ...


class SyncChecker:
    """Base for CPU-bound checkers: the work runs in a thread so timeouts stay enforceable."""

    name = "sync"
    needs_references = True

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        raise NotImplementedError

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        return await run_blocking(self.check_batch, items)


@runtime_checkable
class Preloading(Protocol):
    """A component that loads what it needs at its first call (tables, model weights) and can
    load it ahead of time instead."""

    def preload(self) -> None:
        """Load now; later calls find it loaded."""
        ...


def preload(component: object) -> None:
    """Load now what `component` would load at its first call. A `refcheck serve` replica does
    this before it reports ready, so no caller's first call spends its deadline loading; a
    component that loads when it is built needs nothing."""
    if isinstance(component, Preloading):
        component.preload()
