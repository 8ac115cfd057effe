"""The offline conflict finder: a figure, date, name or exclusive term stated otherwise.

The embedded checker's stated-fact detector (`check.embedded.conflicts`), as a finder any
checker's verdicts can go through: pure Python, no model, microseconds per claim.
"""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.check.embedded import conflicts, reference_sentences
from refcheck_callbacks.contract.components import FoundConflict
from refcheck_callbacks.support.blocking import run_blocking
from refcheck_callbacks.types import CheckItem

STATED_FACT_SHARE = 0.75
"""P(contradiction | not entailed) of a claim whose fact the references state otherwise, at
least: the detector names the differing fact, RefChecker's definition of a contradiction."""


def found(
    conflict: reference_sentences.Conflict, share: float = STATED_FACT_SHARE
) -> FoundConflict:
    """A detected conflict as the stage's finding."""
    return FoundConflict(
        conflict.kind,
        conflict.reference_index,
        conflict.start,
        conflict.end,
        share,
        f"the reference states {conflict.reference_text!r} where the claim says "
        f"{conflict.claim_text!r}",
    )


class StatedFactFinder:
    """Finds the reference sentence stating a claim's figure, date, name or term otherwise."""

    name = "stated-facts"

    def find_batch(self, items: Sequence[CheckItem]) -> list[FoundConflict | None]:
        parsed: dict[str, reference_sentences.ParsedReferences] = {}
        out: list[FoundConflict | None] = []
        for item in items:
            if item.request_id not in parsed:
                parsed[item.request_id] = reference_sentences.parse_references(
                    [reference.text for reference in item.references]
                )
            conflict = conflicts.find_conflict(
                item.claim.text, parsed[item.request_id], item.question
            )
            out.append(None if conflict is None else found(conflict))
        return out

    async def find(self, items: Sequence[CheckItem]) -> list[FoundConflict | None]:
        return await run_blocking(self.find_batch, items)
