"""How much a text bears on a question: the relevance of each reference (and of each claim,
and of the answer) for retrieval diagnostics (`check.diagnose`, docs/diagnostics.md)."""
