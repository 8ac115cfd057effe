"""The cause of each claim the references do not support (docs/diagnostics.md has the rule).

- Entailment, or no label: no cause.
- Contradiction: `contradicted` (a reference states something that conflicts with it).
- Neutral: `unsupported_by_relevant_context` when some reference is relevant (to the question
  when there is one, else to the claim itself), `retrieval_missed` when none is: the claim
  came from somewhere other than what was retrieved.
- A claim that is itself a refusal ("I could not find that") has no cause: it is a
  non-answer, counted apart (`CheckResult.non_answer`).
"""

from __future__ import annotations

from refcheck_callbacks.types import Cause, Label, Verdict


def cause_of(verdict: Verdict, context_relevant: bool, refusal: bool = False) -> Cause | None:
    """The cause of one claim's verdict; `context_relevant` says whether any reference is
    relevant to the question (or, without one, to the claim)."""
    if verdict.label is None or verdict.label is Label.ENTAILMENT or refusal:
        return None
    if verdict.label is Label.CONTRADICTION:
        return Cause.CONTRADICTED
    return Cause.UNSUPPORTED_BY_RELEVANT_CONTEXT if context_relevant else Cause.RETRIEVAL_MISSED
