"""The monitor of zero-code instrumentation: built from the environment after the first answer.

`opentelemetry-instrument` installs instrumentors from `sitecustomize`, before the app's main
module runs. Building a `RefCheckMonitor` there would start a checking process for an app that
may never answer (a CLI's `--help`, a worker that only imports). So the instrumentors hand the
integrations this `AnswerSink`, and the monitor is built, with no argument (every option from
its `REFCHECK_*` variable), when the first captured answer, or the first count, arrives. Its
settings are read at once, when the instrumentor is installed, so a bad value fails there,
naming its variable.

The build reads every installed distribution's entry points (the component registry): about
0.1 s of file reads, measured on a 2-core machine, which the app's thread must not wait for.
It runs on a thread of its own; what arrives meanwhile waits in a bounded backlog (its trace
context taken on the caller's thread, as `submit` takes it) and is handed to the monitor once
it is built. Answers beyond the backlog are counted as dropped (`queue_full`) then.

Its checking process (the default placement) starts without the app's main module
(`placement.components.without_app_main`): its components are specs, so nothing of main is
needed there, and an app script without an `if __name__ == "__main__":` guard (most scripts
a zero-code user runs) does not run a second time in the child.

A build that fails (an extra missing for the checker named) is logged once; the answers held
and every one after it are refused (`submit` returns False), and the app goes on.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from refcheck_callbacks.contract.answers import AnswerFields, InputLimits
from refcheck_callbacks.contract.reasons import DropReason, ErrorReason, SkipReason
from refcheck_callbacks.contract.tracing import current_trace_context
from refcheck_callbacks.engine.monitor import RefCheckMonitor
from refcheck_callbacks.engine.placement.components import without_app_main
from refcheck_callbacks.environment_variables import read_environment
from refcheck_callbacks.support.logs import logger

if TYPE_CHECKING:
    from typing_extensions import Unpack

BACKLOG = 1024
"""Answers and counts held at most while the monitor is being built."""

Call = Callable[[RefCheckMonitor], object]


class EnvironmentMonitor:
    """An `AnswerSink` that builds its `RefCheckMonitor` from the environment when first used."""

    limits = InputLimits()
    """A monitor built with no argument keeps the default limits: known before it is built."""

    def __init__(self, backlog: int = BACKLOG) -> None:
        read_environment()  # a bad value fails now, at start, naming its variable
        self.built = threading.Event()
        """Set once the build has ended, whether or not a monitor came of it."""
        self._backlog = backlog
        self._lock = threading.Lock()
        self._monitor: RefCheckMonitor | None = None
        self._waiting: deque[Call] = deque()
        self._overflow = 0
        self._building = False

    @property
    def monitor(self) -> RefCheckMonitor | None:
        """The monitor once built; None before, or when it could not be built."""
        return self._monitor

    def submit(self, **fields: Unpack[AnswerFields]) -> bool:
        if (monitor := self._monitor) is not None:
            return monitor.submit(**fields)
        if "trace_context" not in fields:
            fields["trace_context"] = current_trace_context()
        return self._hold(lambda built: built.submit(**fields))

    def skipped(self, reason: SkipReason, count: int = 1) -> None:
        self._send(lambda built: built.skipped(reason, count))

    def dropped(self, reason: DropReason, count: int = 1) -> None:
        self._send(lambda built: built.dropped(reason, count))

    def errored(self, reason: ErrorReason, count: int = 1) -> None:
        self._send(lambda built: built.errored(reason, count))

    def _send(self, call: Call) -> None:
        if (monitor := self._monitor) is not None:
            call(monitor)
        else:
            self._hold(call)

    def _hold(self, call: Call) -> bool:
        """Keep `call` for the monitor being built (starting the build); False when it will
        not reach one: the build failed, or the backlog is full (counted once built)."""
        with self._lock:
            if (monitor := self._monitor) is None:
                if self.built.is_set():
                    return False
                if not self._building:
                    self._building = True
                    # Not a daemon: a script that ends right after its first answer waits for
                    # the build, and the monitor's exit hook then checks what it holds.
                    threading.Thread(target=self._build, name="refcheck-build").start()
                if len(self._waiting) >= self._backlog:
                    self._overflow += 1
                    return False
                self._waiting.append(call)
                return True
        call(monitor)  # built meanwhile
        return True

    def _build(self) -> None:
        try:
            with without_app_main():
                monitor: RefCheckMonitor | None = RefCheckMonitor()
        except Exception:
            logger.exception("refcheck: no monitor could be built from the environment")
            monitor = None
        while True:
            with self._lock:
                held, self._waiting = self._waiting, deque()
                if not held or monitor is None:
                    self._monitor = monitor
                    overflow, self._overflow = self._overflow, 0
                    self.built.set()
                    break
            for call in held:  # outside the lock: what arrives now waits for the next round
                call(monitor)
        if monitor is not None and overflow:
            monitor.dropped(DropReason.QUEUE_FULL, overflow)


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
