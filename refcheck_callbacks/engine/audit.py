"""The random audit: a uniform share of checked answers, drawn for a person to label.

A dashboard's hallucination rate is the checker's flag share, biased by its errors; a small
random sample labelled by a person measures those errors in this app, so the rate can be
estimated (docs/audit.md). The sample must not depend on what the checker said, or the flag
rates measured on it would be biased too: every delivered result with claims is drawn with the
same probability `rate`, from a generator of its own (seedable, and not the trace id the check
sampling uses, which would draw the same traces again).

Drawing happens where results are delivered (the monitor's worker thread), in O(1); writing
happens on a thread of the audit's own, so neither the app's threads nor the checking wait for
the disk. Draws waiting for that thread are bounded (`max_pending`). Every draw is counted once
(`Tally.AUDITED`) by what became of it: `written`, or why not (`AuditReason`). Only results the
monitor checked carry text, already redacted by its `redact` hook; a result whose hook raised has
no claims and no text, and is never drawn (fail closed).
"""

from __future__ import annotations

import os
import random
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from refcheck_callbacks.contract.reasons import AuditReason
from refcheck_callbacks.engine.audit_file import DEFAULT_MAX_BYTES, AuditFile, AuditFileFull
from refcheck_callbacks.engine.feedback_file import now_iso
from refcheck_callbacks.environment_variables import (
    REFCHECK_AUDIT_FILE,
    REFCHECK_AUDIT_RATE,
    EnvironmentSettings,
)
from refcheck_callbacks.errors import ConfigurationError, RedactionError
from refcheck_callbacks.support.deadline import Deadline
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckResult

DEFAULT_RATE = 0.01
"""The share drawn when only an audit file is given: 1%, some 200 answers a week at 3,000 a day."""
MAX_PENDING = 256
"""Draws waiting for the writer at most."""


@dataclass(frozen=True, slots=True)
class _Draw:
    result: CheckResult
    drawn_at: str


class Audit:
    """Draws results and appends them to the audit file on its own thread (module docstring)."""

    def __init__(
        self,
        rate: float,
        file: AuditFile,
        count: Callable[[AuditReason], None],
        calibration: str | None = None,
        seed: int | None = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"audit_rate must be within [0, 1], got {rate}")
        self.rate = rate
        self.file = file
        self.calibration = calibration
        """The id of the calibration the pipeline applies, written with every record."""
        self._count = count
        self._random = random.Random(seed)
        self._max_pending = max_pending
        self._pending: deque[_Draw] = deque()
        self._busy = 0
        """Draws taken off `_pending` and not yet counted (0 or 1)."""
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._closed = False

    def draw(self, results: Sequence[CheckResult]) -> None:
        """Draw from delivered results; a drawn one waits for the writer. Never blocks."""
        for result in results:
            if not result.verdicts or result.error_type == RedactionError.__name__:
                continue  # not a checked answer: nothing to label (or withheld)
            if self._random.random() >= self.rate:
                continue
            with self._cond:
                if os.getpid() != self._pid:
                    self._reset_after_fork()
                if self._closed:
                    reason: AuditReason | None = AuditReason.SHUTDOWN
                elif len(self._pending) >= self._max_pending:
                    reason = AuditReason.QUEUE_FULL
                else:
                    reason = None
                    self._pending.append(_Draw(result, now_iso()))
                    self._start()
                    self._cond.notify_all()
            if reason is not None:
                self._count(reason)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="refcheck-audit", daemon=True)
            self._thread.start()

    def _reset_after_fork(self) -> None:
        """In a forked child the writer thread is gone and the parent's draws are its own."""
        self._pid, self._pending, self._busy, self._thread = os.getpid(), deque(), 0, None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    if self._closed:
                        return
                    self._cond.wait()
                draw = self._pending.popleft()
                self._busy = 1
            reason = self._write(draw)
            with self._cond:
                self._busy = 0
                self._cond.notify_all()
            self._count(reason)

    def _write(self, draw: _Draw) -> AuditReason:
        try:
            self.file.append(draw.result, self.calibration, draw.drawn_at)
        except AuditFileFull as full:
            logger.warning("refcheck: the audit file is full: %s; draws are not written", full)
            return AuditReason.FILE_FULL
        except OSError as exc:
            logger.warning("refcheck: the audit file %s: %s", self.file.path, exc)
            return AuditReason.WRITE_FAILED
        except Exception:  # a bug of ours (a record that will not serialize): see the log
            logger.exception("refcheck: an audit record could not be written")
            return AuditReason.WRITE_FAILED
        return AuditReason.WRITTEN

    def flush(self, deadline: Deadline) -> bool:
        """Wait until every draw so far is counted, until `deadline`; False if it ran out."""
        with self._cond:
            while self._pending or self._busy:
                left = deadline.remaining()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def shutdown(self, deadline: Deadline) -> bool:
        """Write what is waiting until `deadline`; what is left then is counted `shutdown`.
        Later draws are counted `shutdown` too. Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        flushed = self.flush(deadline)
        with self._cond:
            left, self._pending = len(self._pending), deque()
        for _ in range(left):
            self._count(AuditReason.SHUTDOWN)
        return flushed


def audit_from(
    rate: float | None,
    path: str | Path | None,
    max_bytes: int | None,
    env: EnvironmentSettings,
) -> tuple[float, AuditFile] | None:
    """The audit's rate and file the options (else the environment) ask for; None for no audit.
    A rate above 0 without a file is refused: the drawn answers would have nowhere to go."""
    rate = env.audit_rate if rate is None else rate
    path = env.audit_file if path is None else path
    max_bytes = env.audit_max_bytes if max_bytes is None else max_bytes
    if path is None:
        if rate:
            raise ConfigurationError(
                f"audit_rate={rate} without an audit file: set audit_file= (or "
                f"{REFCHECK_AUDIT_FILE}) to the file the drawn answers go to, or leave "
                f"audit_rate (and {REFCHECK_AUDIT_RATE}) unset"
            )
        return None
    return (DEFAULT_RATE if rate is None else rate), AuditFile(path, max_bytes or DEFAULT_MAX_BYTES)
