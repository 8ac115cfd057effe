"""The runner protocol, and the runner that checks on the monitor's worker thread.

Every placement hands the worker a `Runner`: it takes a batch of built requests and returns
their results. `InThread` runs the pipeline right there, sharing the app's GIL; the checking
process (`process.InChildProcess`) falls back to one when no child can start.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol

from refcheck_callbacks.contract.components import Checker, Extractor
from refcheck_callbacks.contract.registry import Source
from refcheck_callbacks.engine.pipeline import Pipeline
from refcheck_callbacks.engine.placement.components import Settings, built_checker, built_extractor
from refcheck_callbacks.engine.redaction import Redactor
from refcheck_callbacks.errors import PlacementWarning
from refcheck_callbacks.types import CheckRequest, CheckResult, Placement


class Runner(Protocol):
    placement: Placement
    """Where the pipeline runs, or `service` where its checker checks on a service (a result
    says where its claims were checked: `Pipeline.placement`)."""

    async def run(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        """One result per request, in order; called on the monitor's worker loop."""
        ...

    def close(self, timeout: float | None) -> None:
        """Release what the runner holds, within `timeout`; called once, at shutdown."""
        ...


class InThread:
    """The pipeline on the monitor's worker thread."""

    def __init__(self, pipeline: Pipeline, placement: Placement = Placement.THREAD) -> None:
        self.pipeline = pipeline
        self.placement = placement

    async def run(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        return await self.pipeline.run(requests)

    def close(self, timeout: float | None) -> None:
        pass


def in_thread(
    extractor: Extractor | Source,
    checker: Checker | Source,
    settings: Settings,
    redact: Redactor | None,
) -> InThread:
    return InThread(settings.pipeline(built_extractor(extractor), built_checker(checker), redact))


def warn_in_thread(why: str, stacklevel: int) -> None:
    """The one warning of a default-placed monitor that checks in its thread."""
    warnings.warn(
        f"refcheck: checking in the app's thread, not in a child process (the default), "
        f"because {why}. Checking in the thread shares the app's GIL; pass "
        "placement='thread' to choose it and silence this warning",
        PlacementWarning,
        stacklevel=stacklevel,
    )
