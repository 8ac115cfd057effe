"""The monitor of zero-code instrumentation: built from the environment on the first answer.

`opentelemetry-instrument` installs instrumentors from `sitecustomize`, before the app's main
module runs. Building a `RefCheckMonitor` there would read models' specs and start a checking
process for an app that may never answer (a CLI's `--help`, a worker that only imports). So
the instrumentors hand the integrations this `AnswerSink`, and the monitor is built, with no
argument (every option from its `REFCHECK_*` variable), when the first captured answer, or the
first count, arrives. Its settings are read at once, when the instrumentor is installed, so a
bad value fails there, naming its variable.

Its checking process (the default placement) starts without the app's main module
(`placement.components.without_app_main`): its components are specs, so nothing of main is
needed there, and an app script without an `if __name__ == "__main__":` guard (most scripts
a zero-code user runs) does not run a second time in the child.

A build that fails (an extra missing for the checker named) is logged once; every answer after
it is refused (`submit` returns False), and the app goes on.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from refcheck_callbacks.contract.answers import AnswerFields, InputLimits
from refcheck_callbacks.contract.reasons import DropReason, ErrorReason, SkipReason
from refcheck_callbacks.engine.monitor import RefCheckMonitor
from refcheck_callbacks.engine.placement.components import without_app_main
from refcheck_callbacks.environment_variables import read_environment
from refcheck_callbacks.support.logs import logger

if TYPE_CHECKING:
    from typing_extensions import Unpack


class EnvironmentMonitor:
    """An `AnswerSink` that builds its `RefCheckMonitor` from the environment when first used."""

    limits = InputLimits()
    """A monitor built with no argument keeps the default limits: known before it is built."""

    def __init__(self) -> None:
        read_environment()  # a bad value fails now, at start, naming its variable
        self._lock = threading.Lock()
        self._monitor: RefCheckMonitor | None = None
        self._failed = False

    @property
    def monitor(self) -> RefCheckMonitor | None:
        """The monitor, built (once, thread-safe) on first use; None where it cannot be."""
        monitor = self._monitor
        if monitor is not None or self._failed:
            return monitor
        with self._lock:
            if self._monitor is None and not self._failed:
                self._monitor = self._built()
                self._failed = self._monitor is None
            return self._monitor

    def _built(self) -> RefCheckMonitor | None:
        try:
            with without_app_main():
                return RefCheckMonitor()
        except Exception:
            logger.exception("refcheck: no monitor could be built from the environment")
            return None

    def submit(self, **fields: Unpack[AnswerFields]) -> bool:
        monitor = self.monitor
        return False if monitor is None else monitor.submit(**fields)

    def skipped(self, reason: SkipReason, count: int = 1) -> None:
        if (monitor := self.monitor) is not None:
            monitor.skipped(reason, count)

    def dropped(self, reason: DropReason, count: int = 1) -> None:
        if (monitor := self.monitor) is not None:
            monitor.dropped(reason, count)

    def errored(self, reason: ErrorReason, count: int = 1) -> None:
        if (monitor := self.monitor) is not None:
            monitor.errored(reason, count)


_shared_lock = threading.Lock()
_shared: EnvironmentMonitor | None = None


def shared_environment_monitor() -> EnvironmentMonitor:
    """The one `EnvironmentMonitor` of this process: every instrumentor given no monitor
    feeds it, so a LangChain app that also queries LlamaIndex has one monitor, one child."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = EnvironmentMonitor()
        return _shared
