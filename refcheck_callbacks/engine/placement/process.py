"""Checking in a child process: the app's side of `RefCheckMonitor(placement="process")`.

The monitor's worker hands each batch to `InChildProcess.run`, which redacts it, passes it to
the `Supervisor` (which keeps a checking process running and answers every batch), and
returns one result per request with the app's own request in it. So the app's process only
captures, queues, redacts and exports, and holds no model: no checker code shares its GIL.

Redaction runs here, in the app, before a request is sent: a redact hook need not be picklable,
may keep state, and no unredacted text leaves the app's process, not even for the checking
process (which then sees exactly what a judge or an exporter would).

After `os.fork`, the new process lets go of its parent's checking process and starts its own
on its first batch.

A monitor left at the default placement (`falls_back`) checks in its own thread instead when
no child can start here (see `Supervisor.unstartable`): the batch that found out, and every
one after it, run there, and one `PlacementWarning` says why.
"""

from __future__ import annotations

import asyncio
import multiprocessing.util  # noqa: F401  (see `InChildProcess.__init__`)
import os
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from refcheck_callbacks.engine.placement.components import Recipe
from refcheck_callbacks.engine.placement.in_thread import InThread, in_thread, warn_in_thread
from refcheck_callbacks.engine.placement.messages import Ready, Reply
from refcheck_callbacks.engine.placement.spawned import Failure
from refcheck_callbacks.engine.placement.supervisor import Supervisor
from refcheck_callbacks.engine.redaction import Redactor, Withheld, redacted
from refcheck_callbacks.errors import MonitorUnavailableError
from refcheck_callbacks.types import CheckRequest, CheckResult, Outcome, Placement

_STOP_AFTER_FALLBACK = 5.0
"""Seconds to stop a supervisor whose child could not start (it holds nothing)."""


@dataclass(frozen=True)
class _Redaction:
    """A request redacted in the app, and when and how long that took."""

    outcome: CheckRequest | Withheld
    started: float
    seconds: float

    def timed(self, result: CheckResult) -> CheckResult:
        """The result with the redaction among its stages, as the pipeline records it."""
        return result.model_copy(
            update={
                "timings": {**result.timings, "redact": self.seconds},
                "stage_started": {**result.stage_started, "redact": self.started},
            }
        )


def _forget_after_fork(ref: weakref.ReferenceType[InChildProcess]) -> None:
    runner = ref()
    if runner is not None:
        runner._forget_parents_child()


class InChildProcess:
    """Runs each batch in a checking process (see the module doc and `Supervisor`)."""

    placement = Placement.PROCESS

    def __init__(self, recipe: Recipe, redact: Redactor | None, falls_back: bool = False) -> None:
        self.falls_back = falls_back
        """Left at the default placement: check in the thread where no child can start."""
        self.thread: InThread | None = None
        """The in-thread runner it fell back to, if it did."""
        # multiprocessing's exit hook terminates daemonic children. Imported above, it was
        # registered before the monitor's own exit hook, so it runs after it (atexit runs
        # hooks last-in first-out): the monitor's exit flush still has its checking process.
        self._recipe = recipe
        self._redact = redact
        self._lock = threading.Lock()
        self._supervisor: Supervisor | None = None
        self._closed = False
        self._restarts_before = 0
        self._supervising()  # at once: the child loads its models while the app starts
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _forget_after_fork(ref))

    @property
    def pid(self) -> int | None:
        """The checking process's pid; None while none runs."""
        supervisor = self._supervisor
        child = None if supervisor is None else supervisor.child
        return None if child is None else child.pid

    @property
    def restarts(self) -> int:
        """Checking processes started to replace one that ended (crashed, killed, hung)."""
        supervisor = self._supervisor
        return self._restarts_before + (0 if supervisor is None else supervisor.restarts)

    async def run(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        """One result per request, in order. Never raises for a request or for the child."""
        if self.thread is not None:
            return await self.thread.run(requests)
        redactions = None if self._redact is None else [self._redaction(r) for r in requests]
        prepared = list(requests) if redactions is None else [r.outcome for r in redactions]
        sent = [r for r in prepared if isinstance(r, CheckRequest)]
        answer: Reply | Failure = _unavailable()
        supervisor = self._supervising()
        if sent and supervisor is not None:
            answer = await asyncio.wrap_future(supervisor.submit(sent))
            if supervisor.unstartable is not None and self.falls_back:
                return await self._fall_back(supervisor.unstartable).run(requests)
        ready = None if supervisor is None else supervisor.ready
        checked = iter(self._results(sent, answer, ready))
        results = [
            _failed(r.request, r.error_type, r.message, ready)
            if isinstance(r, Withheld)
            else next(checked)
            for r in prepared
        ]
        if redactions is None:
            return results
        return [r.timed(result) for r, result in zip(redactions, results, strict=True)]

    def close(self, timeout: float | None) -> None:
        """Stop the checking process within `timeout` (killed past it). For good."""
        with self._lock:
            self._closed = True
            supervisor = self._supervisor
        if supervisor is not None:
            supervisor.close(timeout)

    # -- internals -------------------------------------------------------------------------

    def _fall_back(self, why: str) -> InThread:
        """The in-thread runner from now on (built here, on the monitor's worker), said once."""
        if self.thread is None:
            warn_in_thread(why, stacklevel=2)
            recipe = self._recipe
            self.thread = in_thread(recipe.extractor, recipe.checker, recipe.settings, self._redact)
            self.placement = Placement.THREAD
            self.close(_STOP_AFTER_FALLBACK)
        return self.thread

    def _supervising(self) -> Supervisor | None:
        """The supervisor, started (again, if its thread died: a bug of ours) when needed."""
        with self._lock:
            if self._closed:
                return None
            if self._supervisor is None or not self._supervisor.alive:
                if self._supervisor is not None:
                    self._restarts_before += self._supervisor.restarts + 1
                self._supervisor = Supervisor(self._recipe, falls_back=self.falls_back)
            return self._supervisor

    def _redaction(self, request: CheckRequest) -> _Redaction:
        assert self._redact is not None
        started, t0 = time.time(), time.perf_counter()
        outcome = redacted(request, self._redact)
        return _Redaction(outcome, started, time.perf_counter() - t0)

    def _results(
        self, sent: list[CheckRequest], answer: Reply | Failure, ready: Ready | None
    ) -> list[CheckResult]:
        if isinstance(answer, Reply):
            try:
                return answer.results_for(sent)
            except ValueError as exc:
                answer = Failure(type(exc).__name__, f"internal error: {exc}")
        return [_failed(r, answer.error_type, answer.message, ready) for r in sent]

    def _forget_parents_child(self) -> None:
        self._lock = threading.Lock()
        supervisor, self._supervisor = self._supervisor, None
        if supervisor is not None:
            supervisor.abandon()


def _unavailable() -> Failure:
    return Failure(MonitorUnavailableError.__name__, "the monitor is shut down")


def _failed(
    request: CheckRequest, error_type: str, message: str, ready: Ready | None
) -> CheckResult:
    """A request that ended without a verdict, told the way the pipeline tells one."""
    return CheckResult(
        request=request,
        outcome=Outcome.ERROR,
        error_type=error_type,
        message=message,
        timings={"total": max(0.0, time.time() - request.submitted_at)},
        extractor=None if ready is None or request.claims is not None else ready.extractor,
        checker=None if ready is None else ready.checker,
        placement=Placement.PROCESS if ready is None else ready.placement,
    )
