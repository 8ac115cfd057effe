"""A base for blocking checkers: the work runs in a thread, so a stage deadline stays
enforceable. The checker protocol itself (`Checker`) is in `contract.components`."""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.support.blocking import run_blocking
from refcheck_callbacks.types import CheckItem, Verdict


class SyncChecker:
    """Base for CPU-bound checkers: the work runs in a thread so timeouts stay enforceable."""

    name = "sync"
    needs_references = True

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        raise NotImplementedError

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        return await run_blocking(self.check_batch, items)
