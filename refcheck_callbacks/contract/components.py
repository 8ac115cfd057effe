"""The swappable components: what an extractor, a checker, a conflict finder and an exporter are.

Small protocols, batch-first: the engine hands a component many requests (or claims) at once,
so it can sort, pack and deduplicate across answers. The engine, the command line and the
`refcheck serve` service know components only through these; built-in and third-party
implementations alike register by name (`contract.registry`). `implementing` checks a
component once, where it is built, so a missing member is an error the app can fix rather
than a failure of every request in the background.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from refcheck_callbacks.contract.reasons import Tally
from refcheck_callbacks.errors import ProtocolError
from refcheck_callbacks.types import (
    CheckItem,
    CheckRequest,
    CheckResult,
    Claim,
    ConflictKind,
    Usage,
    Verdict,
)

T = TypeVar("T")


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


class Extraction(BaseModel):
    """The claims of one answer, or why there are none."""

    claims: list[Claim] = Field(default_factory=list)
    usage: Usage | None = None
    error: str | None = None
    """Set when extraction failed for this request; its claims are then meaningless."""
    error_type: str | None = None
    notes: list[str] = Field(default_factory=list)
    """What the extractor changed or left out (a reply cut off, claims beyond `max_claims`);
    added to the request's notes."""


@runtime_checkable
class Extractor(Protocol):
    """Turns answers into claims. Batch-first: the engine hands over many requests at once."""

    name: str

    async def extract(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        """One `Extraction` per request, in order. Raising fails the whole batch."""
        ...


@dataclass(frozen=True, slots=True)
class FoundConflict:
    """A reference statement that conflicts with a claim."""

    kind: ConflictKind
    reference_index: int
    start: int
    end: int
    """The statement's characters in its reference."""
    share: float
    """P(contradiction | not entailed) the finder gives the claim."""
    detail: str
    """What conflicts, for the explanation: "the reference states '330 metres' where the
    claim says '450 metres'"."""


@runtime_checkable
class ConflictFinder(Protocol):
    """Finds the reference statement a claim conflicts with, for many claims at once (the
    conflict stage every checker's verdicts go through: `check.conflict`)."""

    name: str

    async def find(self, items: Sequence[CheckItem]) -> list[FoundConflict | None]:
        """One result per item, in order: the conflicting statement, or None."""
        ...


@runtime_checkable
class Exporter(Protocol):
    """Where results and counts leave the monitor.

    Exporters run in the monitor's worker thread, after each batch; one that raises is isolated
    and counted. They know only `CheckResult` and the counts, never the pipeline. Results are
    frozen, so no exporter or hook can change what the next one sees. Subclass this for no-op
    defaults and override what the back end needs.
    """

    name: str = "exporter"

    def bind(self, queue_size: Callable[[], int]) -> None:
        """Called once by the monitor; `queue_size()` reads the current queue length."""

    def export(self, results: Sequence[CheckResult]) -> None:
        """The results of one batch (checked, failed or abstained answers), in order."""

    def record(self, tally: Tally, reason: str, count: int = 1) -> None:
        """A drop, skip or internal error, by reason (a `contract.reasons` value)."""

    def force_flush(self, timeout: float) -> bool:
        return True

    def shutdown(self) -> None:
        """Release resources; called once, at monitor shutdown."""


@runtime_checkable
class Preloading(Protocol):
    """A component that loads what it needs at its first call (tables, model weights) and can
    load it ahead of time instead."""

    def preload(self) -> None:
        """Load now; later calls find it loaded."""
        ...


def preload(component: object) -> None:
    """Load now what `component` would load at its first call. A `refcheck serve` replica and
    a checking process do this before they take calls, so no caller's first call spends its
    deadline loading; a component that loads when it is built needs nothing."""
    if isinstance(component, Preloading):
        component.preload()


@runtime_checkable
class SpendLimited(Protocol):
    """A component whose LLM calls a judge budget can hold: `llm:` judges and extractors, and
    a cascade with such a stage."""

    def limit_spend(self, ledger: Any) -> None:
        """Hold every LLM call to `ledger` (an `llm.budget.SpendLedger`), shared with the
        monitor's other components."""
        ...


def limit_spend(component: object, ledger: object) -> bool:
    """Put `component`'s LLM calls under `ledger`; False when it makes none."""
    if isinstance(component, SpendLimited):
        component.limit_spend(ledger)
        return True
    return False


def _members(protocol: type) -> list[str]:
    declared = [name for name in vars(protocol) if not name.startswith("_")]
    return sorted({*declared, *getattr(protocol, "__annotations__", {})})


def implementing(component: T, protocol: type, what: str) -> T:
    """`component`, or `ProtocolError` naming the members of `protocol` it lacks."""
    members = _members(protocol)
    missing = [name for name in members if not hasattr(component, name)]
    if missing:
        raise ProtocolError(
            f"the {what} {type(component).__name__} does not implement {protocol.__name__}: "
            f"it has no {', '.join(missing)} (a {what} needs {', '.join(members)})"
        )
    return component
