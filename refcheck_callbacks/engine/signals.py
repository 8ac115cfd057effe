"""`RefCheckMonitor.install_signal_handlers`: finish within a bound on SIGTERM, then chain.

Opt-in, because signal handlers belong to the app. The handler does the monitor's work on a
helper thread and waits for it at most `timeout` (plus a moment): a signal can arrive while
the main thread holds a lock that work needs (inside `submit`, inside an exporter), and a
handler that waited on it would hang the process instead of ending it. Then it chains to
the handler that was there before: the default action (the process ends with the signal's
status, as it would have without us), ignoring it, or the app's own handler.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any, Protocol

from refcheck_callbacks.errors import SignalHandlerError
from refcheck_callbacks.support.deadline import wait_limit
from refcheck_callbacks.support.logs import logger


class Finishing(Protocol):
    """What a signal makes a monitor do before the signal goes on (`RefCheckMonitor`)."""

    def finish_on_signal(self, timeout: float, ends_process: bool) -> None:
        """Shut down and count what is left (`ends_process`), else flush; within `timeout`."""
        ...


_GRACE = 0.5
"""Seconds the handler waits past `timeout` for the helper thread before chaining anyway."""


_ENDS_PROCESS = "refcheck_ends_process"
"""Attribute of our handlers: whether the chain they end in ends the process."""


def _ends_process(previous: Any) -> bool:
    """Whether the previous disposition ends the process (None: set outside Python). Another
    monitor's handler ends it when its own chain does: then the monitor whose handler runs
    first must shut down and count what it cannot finish, not only flush, or the default
    action at the chain's end would lose its leftovers uncounted."""
    return getattr(previous, _ENDS_PROCESS, previous in (signal.SIG_DFL, None))


def _chain(signum: int, frame: FrameType | None, previous: Any) -> None:
    if previous in (signal.SIG_DFL, None):
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    elif callable(previous):
        previous(signum, frame)
    # SIG_IGN: the app ignores this signal, and so do we after flushing.


def install(
    monitor: Finishing, installed: set[int], signums: tuple[int, ...], timeout: float
) -> None:
    """Handle `signums` for `monitor`, skipping those already in `installed` (idempotent)."""
    if threading.current_thread() is not threading.main_thread():
        raise SignalHandlerError("install_signal_handlers() must be called from the main thread")
    for signum in signums:
        if signum in installed:
            continue
        previous = signal.getsignal(signum)
        signal.signal(signum, _handler(monitor, previous, timeout))
        installed.add(signum)


def _handler(monitor: Finishing, previous: Any, timeout: float) -> Any:
    ends_process = _ends_process(previous)

    def handle(signum: int, frame: FrameType | None) -> None:
        helper = threading.Thread(
            target=_finish,
            args=(monitor, timeout, ends_process),
            name="refcheck-signal",
            daemon=True,
        )
        helper.start()
        limit = wait_limit(timeout)
        helper.join(None if limit is None else limit + _GRACE)
        _chain(signum, frame, previous)

    setattr(handle, _ENDS_PROCESS, ends_process)
    return handle


def _finish(monitor: Finishing, timeout: float, ends_process: bool) -> None:
    try:
        monitor.finish_on_signal(timeout, ends_process)
    except BaseException:
        logger.exception("refcheck: finishing work on a signal failed")
