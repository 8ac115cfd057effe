"""The conflict finders this package registers (pyproject.toml's `refcheck_callbacks.conflicts`
entry points name these); `none` leaves the stage out. Only data: reading it imports no finder."""

from __future__ import annotations

from refcheck_callbacks.contract.registry import Kind

EMBEDDED = Kind(
    "refcheck_callbacks.check.conflict.stated_facts:StatedFactFinder",
    "the offline stated-fact detector of the embedded checker (default)",
)
NLI = Kind(
    "refcheck_callbacks.check.conflict.nli:NLIConflictFinder",
    "nli:MODEL, a 3-way NLI model's contradiction with the claim's evidence (for a GPU)",
    argument="model",
)
