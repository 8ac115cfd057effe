"""The contract every other folder stands on, beside `types` and `errors`.

- `components`: what a checker, an extractor, a conflict finder and an exporter are (small,
  batch-first protocols) and `implementing`, which checks one where it is built;
- `answers`: what an integration hands over (`AnswerFields`, a `Pairing`) and all it may use
  of the monitor (`AnswerSink`);
- `reasons`: why an answer was skipped or dropped, or what of ours failed: the values metrics
  and alert rules read;
- `tracing`: capturing the app's span context where the answer is made;
- `registry`: components by name through entry points, and the specs that name them.

It imports nothing of the package but `types`, `errors` and `support`: the engine, the
components, the integrations, the exporters and the command line all depend on it, and it on
none of them (`tests/test_import_direction.py`).
"""

from refcheck_callbacks.contract.answers import (
    AnswerFields,
    AnswerSink,
    InputLimits,
    Paired,
    Pairing,
)
from refcheck_callbacks.contract.components import (
    Checker,
    ConflictFinder,
    Exporter,
    Extraction,
    Extractor,
    FoundConflict,
    Preloading,
    implementing,
    preload,
)
from refcheck_callbacks.contract.reasons import (
    LOST_REASONS,
    DropReason,
    ErrorReason,
    Reason,
    SkipReason,
    Tally,
    reason_label,
)
from refcheck_callbacks.contract.tracing import as_trace_context, current_trace_context

__all__ = [
    "LOST_REASONS",
    "AnswerFields",
    "AnswerSink",
    "Checker",
    "ConflictFinder",
    "DropReason",
    "ErrorReason",
    "Exporter",
    "Extraction",
    "Extractor",
    "FoundConflict",
    "InputLimits",
    "Paired",
    "Pairing",
    "Preloading",
    "Reason",
    "SkipReason",
    "Tally",
    "as_trace_context",
    "current_trace_context",
    "implementing",
    "preload",
    "reason_label",
]
