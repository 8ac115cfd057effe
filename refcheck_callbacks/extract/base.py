"""What every extractor shares: the cut at `max_claims`, and a base for blocking extractors.

The extractor protocol itself (`Extractor`, `Extraction`) is in `contract.components`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from refcheck_callbacks.contract.components import Extraction
from refcheck_callbacks.support.blocking import run_blocking
from refcheck_callbacks.types import CheckRequest

T = TypeVar("T")


def first_claims(claims: Sequence[T], max_claims: int | None, notes: list[str]) -> list[T]:
    """At most `max_claims` claims, in the answer's order; a cut is noted, with what it left out.

    One long answer can hold a thousand sentences: unbounded, its check would take the time
    of a thousand answers. `None` keeps them all.
    """
    if max_claims is None or len(claims) <= max_claims:
        return list(claims)
    notes.append(
        f"claims: only the first {max_claims:,} of {len(claims):,} extracted claims were "
        f"checked (max_claims={max_claims:,})"
    )
    return list(claims[:max_claims])


class SyncExtractor:
    """Base for CPU-bound extractors: the work runs in a thread so timeouts stay enforceable."""

    name = "sync"

    def extract_batch(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        raise NotImplementedError

    async def extract(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        return await run_blocking(self.extract_batch, requests)
