"""The fallback checker: it takes the claims a judge budget refused.

An LLM judge under a `JudgeBudget` does not send a call the budget cannot hold; the claims of
that call come back as error verdicts of kind `budget_exhausted`, and this checker (the default
embedded one, or the spec `JudgeBudget.fallback_checker` names) decides them instead. Each
verdict says which checker decided it (`decided_by`) and why it was not the judge
(`fallback`); it keeps the refused call's usage, which counts the refusal in the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence

from refcheck_callbacks.contract.components import Checker, preload
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.llm.budget import BUDGET_EXHAUSTED
from refcheck_callbacks.types import CheckItem, Usage, Verdict


class BudgetFallback:
    """Rechecks refused claims with `spec`'s checker, built (and loaded) when the budget is
    set, so a fallback that cannot load fails the start rather than the first refusal."""

    def __init__(self, spec: str) -> None:
        self.checker: Checker = build_checker(spec)
        preload(self.checker)

    async def recheck(self, items: Sequence[CheckItem], verdicts: list[Verdict]) -> list[Verdict]:
        """`verdicts` with every budget-refused one replaced by the fallback's verdict."""
        refused = [i for i, v in enumerate(verdicts) if v.error_type == BUDGET_EXHAUSTED]
        if not refused:
            return verdicts
        decided = await self.checker.check([items[i] for i in refused])
        out = list(verdicts)
        for index, verdict in zip(refused, decided, strict=True):
            usage = _sum(verdicts[index].usage, verdict.usage)
            out[index] = verdict.model_copy(
                update={
                    "decided_by": verdict.decided_by or self.checker.name,
                    "fallback": BUDGET_EXHAUSTED,
                    "usage": usage,
                }
            )
        return out


def _sum(first: Usage | None, second: Usage | None) -> Usage | None:
    if first is None or second is None:
        return first or second
    return first + second
