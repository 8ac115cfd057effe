"""The extractor and checker a monitor is given: built objects, specs, or factories.

In the monitor's thread any of the three will do (the registry resolves them:
`contract.registry.resolve`). A checking process builds its own: from a spec (`"nli:MODEL"`,
`"py:package.module:Factory"`, a registered name) or from a picklable factory (a class, a
module-level function, a `functools.partial` of one), called without arguments in the child.
A built object cannot be sent there, and is refused.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from refcheck_callbacks.check.calibration.file import Calibration
from refcheck_callbacks.check.relevance.selection import RelevanceSource, relevance_judge
from refcheck_callbacks.contract.components import (
    Checker,
    Extractor,
    implementing,
    limit_spend,
    preload,
)
from refcheck_callbacks.contract.registry import (
    CHECKERS,
    EXTRACTORS,
    ConflictSource,
    Source,
    is_built,
    resolve,
)
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.pipeline import DEFAULT_CONFLICT, Pipeline, StageTimeouts
from refcheck_callbacks.engine.redaction import Redactor
from refcheck_callbacks.errors import PlacementError
from refcheck_callbacks.llm.budget import JudgeBudget, SpendLedger
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import Placement

_WITHOUT_APP_MAIN: ContextVar[bool] = ContextVar("refcheck_without_app_main", default=False)


@contextlib.contextmanager
def without_app_main() -> Iterator[None]:
    """Monitors built inside start their checking process without the app's main module,
    where every component is a spec (see `Recipe.app_main`)."""
    token = _WITHOUT_APP_MAIN.set(True)
    try:
        yield
    finally:
        _WITHOUT_APP_MAIN.reset(token)


def built_checker(source: Checker | Source) -> Checker:
    checker: Checker = resolve(CHECKERS, source)
    return checker


def built_extractor(source: Extractor | Source) -> Extractor:
    extractor: Extractor = resolve(EXTRACTORS, source)
    return extractor


@dataclass(frozen=True)
class Settings:
    """The monitor's pipeline settings, wherever its pipeline runs (picklable)."""

    aggregator: Aggregator
    timeouts: StageTimeouts
    max_claims: int | None
    conflict: ConflictSource = DEFAULT_CONFLICT
    """The conflict stage: a spec, a finder or a factory (`contract.registry`)."""
    calibration: Calibration | None = None
    """The app's decision points (`check.calibration`); sent by value to a child process."""
    judge_budget: JudgeBudget | None = None
    """One spend cap for the extractor's, checker's and relevance judge's LLM calls together
    (`llm.budget`), applied where the pipeline is built: in the child for a checking process."""
    relevance: RelevanceSource = None
    """Diagnostics' relevance scorer: None or "embedded" (the offline head), "llm:MODEL", a
    judge or a factory of one (`check.relevance.selection`); built where the pipeline is."""

    def pipeline(
        self,
        extractor: Extractor,
        checker: Checker,
        redact: Redactor | None = None,
        runs_in: Placement = Placement.THREAD,
    ) -> Pipeline:
        relevance = relevance_judge(self.relevance)
        if self.judge_budget is not None:
            ledger = SpendLedger(self.judge_budget)
            parts = (extractor, checker, relevance)
            held = [limit_spend(part, ledger) for part in parts if part is not None]
            if not any(held):
                logger.warning(
                    "refcheck: judge_budget is set, but neither %s nor %s calls an LLM",
                    extractor.name,
                    checker.name,
                )
        return Pipeline(
            extractor,
            checker,
            self.aggregator,
            redact,
            self.timeouts,
            runs_in=runs_in,
            max_claims=self.max_claims,
            conflict=self.conflict,
            calibration=self.calibration,
            relevance=relevance,
        )


@dataclass(frozen=True)
class Recipe:
    """How a checking process builds its pipeline; pickled into the child at spawn."""

    extractor: Source
    checker: Source
    settings: Settings
    app_main: bool = True
    """Whether the child imports the app's main module first, as spawn does (a factory may
    live there). False for a monitor built from specs alone by zero-code instrumentation
    (`without_app_main`): the app's script, often unguarded, must not run again in the child."""

    @classmethod
    def of(
        cls,
        extractor: Extractor | Source,
        checker: Checker | Source,
        settings: Settings,
    ) -> Recipe:
        """The recipe, or `PlacementError` saying which part cannot go to a child process."""
        for what, source, protocol in (
            ("extractor", extractor, Extractor),
            ("checker", checker, Checker),
        ):
            if is_built(source, protocol):
                raise PlacementError(
                    f"placement='process' builds the {what} in the child process: pass a spec "
                    f"(for example 'nli:MODEL' or 'py:package.module:Factory') or a picklable "
                    f"factory (a class or module-level function), not a built "
                    f"{type(source).__name__}"
                )
            if not isinstance(source, str) and not callable(source):
                implementing(source, protocol, what)  # names the members an object lacks
                raise PlacementError(f"the {what} must be a spec string or a factory")
            try:
                pickle.dumps(source)
            except Exception as exc:
                raise PlacementError(
                    f"placement='process' sends the {what} factory to the child process, and "
                    f"it cannot be pickled ({exc}): use a class or a module-level function, or "
                    "a spec string"
                ) from exc
        for what, part, spec in (
            ("conflict stage", settings.conflict, "nli:MODEL"),
            ("relevance judge", settings.relevance, "llm:MODEL"),
        ):
            try:
                pickle.dumps(part)
            except Exception as exc:
                raise PlacementError(
                    f"placement='process' sends the {what} to the child process, and it "
                    f"cannot be pickled ({exc}): pass a spec such as '{spec}'"
                ) from exc
        parts = (extractor, checker, settings.conflict, settings.relevance)
        specs = all(isinstance(s, str | None) for s in parts)
        app_main = not (specs and _WITHOUT_APP_MAIN.get())
        return cls(extractor, checker, settings, app_main)  # type: ignore[arg-type]

    def pipeline(self) -> Pipeline:
        """The pipeline, built in the child and loaded before the child says it is ready (a
        component that cannot load fails the start, not each call). Redaction is not in it:
        the app redacts."""
        extractor, checker = built_extractor(self.extractor), built_checker(self.checker)
        preload(extractor)
        preload(checker)
        return self.settings.pipeline(extractor, checker, None, Placement.PROCESS)
