"""`RefCheckMonitor`: the one object an app creates; it checks answers in the background.

`submit` is the production path: it captures the arguments, samples, and enqueues in
microseconds, never blocking or raising. `check` / `acheck` run one answer through the same
pipeline directly and return its result. Results go to the exporters and `on_result` hooks,
each isolated from the others. Everything not checked is counted in `stats`: every accepted
submission is delivered or counted dropped with a reason, also when `shutdown`, interpreter
exit or a signal (`install_signal_handlers`) ends the monitor before its result is ready.
`flush` and `shutdown` each keep one deadline in total, whatever the exporters do.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import signal
import time
import weakref
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from refcheck_callbacks.check.base import Checker
from refcheck_callbacks.check.conflict.specs import DEFAULT_CONFLICT, ConflictSource
from refcheck_callbacks.engine import signals
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.delivery import Delivery, ResultHook
from refcheck_callbacks.engine.intake import (
    AnswerFields,
    InputLimits,
    RawInput,
    build_request,
    capture,
    paired,
)
from refcheck_callbacks.engine.pipeline import Pipeline, Redactor, StageTimeouts
from refcheck_callbacks.engine.placement.components import ComponentSource, Settings
from refcheck_callbacks.engine.placement.runner import InThread, runner_for
from refcheck_callbacks.engine.sampling import Sampler
from refcheck_callbacks.engine.stats import (
    LOST_EXIT,
    LOST_SHUTDOWN_TIMEOUT,
    LOST_SIGNAL,
    NO_REFERENCES,
    Counters,
    Tally,
)
from refcheck_callbacks.engine.tracing import current_trace_context
from refcheck_callbacks.engine.worker import BackgroundWorker
from refcheck_callbacks.errors import MonitorUnavailableError
from refcheck_callbacks.exporters.base import Exporter
from refcheck_callbacks.extract.base import Extractor
from refcheck_callbacks.support.blocking import STAGE_THREADS
from refcheck_callbacks.support.deadline import Deadline
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest, CheckResult, Outcome, Placement, TraceContext

if TYPE_CHECKING:
    from typing_extensions import Unpack


class _Auto:
    """Sentinel: capture the caller's current OpenTelemetry context."""

    def __repr__(self) -> str:
        return "AUTO"


AUTO: Any = _Auto()


def _context(fields: AnswerFields) -> TraceContext | None:
    """The trace context a request is parented to: the given one, else the caller's."""
    context = fields.get("trace_context", AUTO)
    return current_trace_context() if context is AUTO else context


def _invalid(exc: BaseException) -> CheckResult:
    """The result of input that cannot become a request at all."""
    return CheckResult(
        request=CheckRequest(answer="", notes=("the input could not be read",)),
        outcome=Outcome.INVALID_INPUT,
        error_type=type(exc).__name__,
        message=f"the input could not be read: {exc}",
    )


def _unpaired() -> CheckResult:
    """The result of a direct check whose pairing found nothing its model saw."""
    return CheckResult(
        request=CheckRequest(answer=""),
        outcome=Outcome.NO_REFERENCES,
        message="no references: the answering model saw none of the documents captured",
    )


def _default_exporters(capture_content: bool) -> list[Exporter]:
    from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

    return [OpenTelemetryExporter(capture_content=capture_content)]


class RefCheckMonitor:
    """Checks RAG answers against their references in a background worker.

    Args:
        extractor: turns answers into claims (default: offline `SentenceExtractor`).
        checker: labels claims (default: offline `EmbeddedChecker`; needs the `embedded` extra).
            Either may also be a spec, as `refcheck` takes it (`"nli:MODEL"`, `"llm:MODEL"`,
            `"remote:URL"`, `"py:package.module:Factory"`), or a factory called without
            arguments (a class, a module-level function).
        placement: where extraction and checking run. "process": in a child process started
            with multiprocessing's spawn, so the app's process only captures, queues, redacts
            and exports; the extractor and checker must then be specs or picklable factories
            (the child builds them), and the app's entry point must be guarded by
            `if __name__ == "__main__":` as for any spawned process. A child that crashes,
            is killed or hangs is replaced; the requests it held end `error`
            (`CheckingProcessError`). "thread": on the monitor's background thread, sharing
            the app's GIL. None (default): "process" where a child can start, else "thread"
            with one `PlacementWarning` that says why (components built in the app, a
            factory the child cannot import, no main guard, a process that cannot spawn).
            See `engine.placement`.
        aggregator: "strict" (default) or "major" for the response label; soft ratios are
            always reported.
        sample_rate: share of submitted answers to check, stable per trace id.
        max_queue: submissions waiting at most; beyond it `submit` returns False and counts a drop.
        on_result: callables given every result, in the worker thread; a raising hook is
            logged and counted, never propagated.
        capture_content: let exporters include question, answer, claim and document text.
        redact: applied to every text before it is checked, sent to a judge or exported;
            always in the app's process (with placement="process", before the request is
            sent to the child), so the hook need not be picklable.
        exporters: where results go; see `refcheck_callbacks.exporters`. None (the default)
            means one `OpenTelemetryExporter` on the global tracer and meter providers; `[]`
            means none.
        batch_size, max_wait: how many answers one checker call sees, and how long the worker
            waits for a batch to fill.
        concurrency: batches in flight at once (raise it for remote LLM judges).
        timeouts: per-stage deadlines; limits: input size bounds.
        exit_timeout: at interpreter exit, seconds to finish queued work in total; what is
            left then is counted as dropped (`exit`).
        conflict: the conflict stage every checker's verdicts go through, so that a
            Contradiction always names a conflicting reference statement and its kind, and a
            claim that is only unsupported is Neutral (`check.conflict`): "embedded" (default,
            offline), "nli:MODEL" (a 3-way NLI model, for a GPU), a finder, or None to keep
            the checker's labels as they are.
    """

    def __init__(
        self,
        extractor: Extractor | ComponentSource | None = None,
        checker: Checker | ComponentSource | None = None,
        aggregator: str | Aggregator = Aggregator.STRICT,
        sample_rate: float = 1.0,
        max_queue: int = 2048,
        on_result: ResultHook | Iterable[ResultHook] | None = None,
        capture_content: bool = False,
        redact: Redactor | None = None,
        exporters: Sequence[Exporter] | None = None,
        batch_size: int = 16,
        max_wait: float = 0.05,
        concurrency: int = 1,
        timeouts: StageTimeouts | None = None,
        limits: InputLimits | None = None,
        exit_timeout: float = 5.0,
        placement: Placement | str | None = None,
        conflict: ConflictSource = DEFAULT_CONFLICT,
    ) -> None:
        self.aggregator = Aggregator(aggregator)
        self.capture_content = capture_content
        self.limits = limits or InputLimits()
        self.runner = runner_for(
            placement,
            extractor,
            checker,
            Settings(
                self.aggregator, timeouts or StageTimeouts(), self.limits.max_claims, conflict
            ),
            redact,
        )
        """Where batches run: `runner.placement`; for a process, also `pid` and `restarts`."""
        self.pipeline: Pipeline | None = None
        """The pipeline, extractor and checker, when they are in this process (not with
        placement="process")."""
        self.extractor: Extractor | None = None
        self.checker: Checker | None = None
        if isinstance(self.runner, InThread):
            self.pipeline = self.runner.pipeline
            self.extractor, self.checker = self.pipeline.extractor, self.pipeline.checker
        self.stats = Counters()
        self.on_result: list[ResultHook] = (
            [on_result] if callable(on_result) else list(on_result or [])
        )
        self.exporters = (
            _default_exporters(capture_content) if exporters is None else list(exporters)
        )
        self._delivery = Delivery(self.exporters, self.on_result, self.stats)
        self._sampler = Sampler(sample_rate)
        self._worker: BackgroundWorker[RawInput, list[CheckResult]] = BackgroundWorker(
            self._process,
            self._delivery.deliver,
            lambda count, reason: self.record(Tally.DROPPED, reason, count),
            max_queue,
            batch_size,
            max_wait,
            concurrency,
        )
        for exporter in self.exporters:
            exporter.bind(lambda: self._worker.queue_size)
        self._shut_down = False
        self._signals: set[int] = set()
        ref = weakref.ref(self)
        self._atexit = lambda: (m := ref()) and m._close(Deadline(exit_timeout), LOST_EXIT)
        atexit.register(self._atexit)

    # -- the hot path ---------------------------------------------------------------------

    def submit(self, **fields: Unpack[AnswerFields]) -> bool:
        """Queue an answer for checking. O(1), never blocks, never raises.

        The fields are `AnswerFields`. A `references` callable runs in the worker; an
        exception it raises fails that request alone, with outcome `error`.

        Returns False when the answer will not be checked: sampled out (counted as skipped),
        queue full or monitor shut down (counted as dropped), or fields that are not
        `AnswerFields` (counted as an error, `submit`).
        """
        try:
            context = _context(fields)
            if not self._sampler.should_check(context):
                self.record(Tally.SKIPPED, "sampled_out")
                return False
            raw = capture(fields, context, time.time())
            if self._worker.put(raw):
                return True
            self.record(Tally.DROPPED, "shutdown" if self._worker.closed else "queue_full")
        except Exception:
            logger.exception("refcheck: submit failed")
            self.record(Tally.ERRORS, "submit")
        return False

    def record(self, tally: Tally, reason: str, count: int = 1) -> None:
        """Count something not checked or failed, and tell the exporters. Never raises."""
        self._delivery.record(tally, reason, count)

    @property
    def queue_size(self) -> int:
        return self._worker.queue_size

    @property
    def abandoned_calls(self) -> int:
        """Blocking checker or extractor calls past their deadline that still run in their
        threads (threads cannot be cancelled; the pool that holds them is bounded)."""
        return STAGE_THREADS.abandoned

    # -- direct checks --------------------------------------------------------------------

    def check(self, **fields: Unpack[AnswerFields]) -> CheckResult:
        """Check one answer now and return its result (not sampled, not queued)."""
        request = self._direct(fields)
        if isinstance(request, CheckResult):
            return request
        try:
            return self._worker.run(self._check_one(request)).result()
        except (RuntimeError, concurrent.futures.CancelledError, asyncio.CancelledError):
            return self._refused(request, "the monitor shut down before the check finished")

    async def acheck(self, **fields: Unpack[AnswerFields]) -> CheckResult:
        """`check` for async code: the work runs on the monitor's loop, not the caller's."""
        request = self._direct(fields)
        if isinstance(request, CheckResult):
            return request
        try:
            return await asyncio.wrap_future(self._worker.run(self._check_one(request)))
        except (asyncio.CancelledError, RuntimeError):
            if not (self._shut_down or self._worker.closed):
                raise  # the caller's own cancellation
            return self._refused(request, "the monitor shut down before the check finished")

    def _direct(self, fields: AnswerFields) -> CheckRequest | CheckResult:
        """The request a direct check runs, or its result already: invalid input (delivered
        like any result) or a refusal (shut down, or called from a result hook)."""
        request = self._request(fields)
        if isinstance(request, CheckResult):
            self._delivery.deliver([request])
            return request
        if self._shut_down or self._worker.in_worker_thread:
            return self._refused(request)
        return request

    def _request(self, fields: AnswerFields) -> CheckRequest | CheckResult:
        """The request to check, or an `invalid_input` result when none can be built."""
        try:
            context = _context(fields)
        except Exception:
            context = None
        try:
            raw = capture(fields, context)
        except TypeError as exc:
            return _invalid(exc)
        built = self._build(raw)
        return _unpaired() if built is None else built

    def _build(self, raw: RawInput) -> CheckRequest | CheckResult | None:
        """The request to check, or an `invalid_input` result when none can be built; None
        when an integration's `Pairing` found nothing its model saw (see `intake.paired`)."""
        try:
            decided = paired(raw)
            return None if decided is None else build_request(decided, self.limits)
        except BaseException as exc:
            # Even SystemExit from a `references` callable or a pairing: it fails this request
            # alone.
            return _invalid(exc)

    def _refused(self, request: CheckRequest, reason: str | None = None) -> CheckResult:
        if reason is None:
            reason = "the monitor is shut down" if self._shut_down else "check() from a result hook"
        return CheckResult(
            request=request,
            outcome=Outcome.ERROR,
            error_type=MonitorUnavailableError.__name__,
            message=reason,
        )

    async def _check_one(self, request: CheckRequest) -> CheckResult:
        [result] = await self._run([request])
        self._delivery.deliver([result])
        return result

    async def _run(self, requests: list[CheckRequest]) -> list[CheckResult]:
        """The pipeline's results; should the pipeline itself fail, an error result for each."""
        try:
            return await self.runner.run(requests)
        except Exception as exc:
            logger.exception("refcheck: the pipeline failed on a batch")
            return [
                CheckResult(
                    request=request,
                    outcome=Outcome.ERROR,
                    error_type=type(exc).__name__,
                    message=f"internal error: {exc}",
                )
                for request in requests
            ]

    # -- the worker side ------------------------------------------------------------------

    async def _process(self, raws: list[RawInput]) -> list[CheckResult]:
        built = [self._build(raw) for raw in raws]
        unpaired = built.count(None)
        if unpaired:
            self.record(Tally.SKIPPED, NO_REFERENCES, unpaired)
        requests = [b for b in built if isinstance(b, CheckRequest)]
        results = iter(await self._run(requests))
        return [b if isinstance(b, CheckResult) else next(results) for b in built if b is not None]

    # -- lifecycle ------------------------------------------------------------------------

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every accepted submission has a result and the exporters have flushed,
        all within `timeout` seconds; False if that ran out (nothing is lost: work goes on)."""
        deadline = Deadline(timeout)
        flushed = self._worker.flush(deadline.remaining())
        return self._delivery.flush(deadline) and flushed

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Finish queued work, stop the worker and exporters, all within `timeout` seconds.
        What is left at the deadline is counted as dropped (`shutdown_timeout`); returns False
        then. Idempotent."""
        return self._close(Deadline(timeout), LOST_SHUTDOWN_TIMEOUT)

    def install_signal_handlers(
        self, signums: Iterable[int] = (signal.SIGTERM,), timeout: float = 5.0
    ) -> None:
        """Opt in to finishing work on SIGTERM (or `signums`), within `timeout` seconds, then
        chaining to the app's previous handler. Call from the main thread.

        Where the previous handler would end the process (the default action), the monitor
        shuts down and flushes its exporters first, and what is left is counted as dropped
        (`signal`); where the app handles or ignores the signal, the monitor only flushes.
        """
        signals.install(self, self._signals, tuple(signums), timeout)

    def _close(self, deadline: Deadline, reason: str, flush_exporters: bool = False) -> bool:
        """Shut down within `deadline`, counting what is left for `reason`. Called again while
        a shutdown waits (a signal arriving then), it counts what is left by its own deadline."""
        first = not self._shut_down
        self._shut_down = True
        if first:
            atexit.unregister(self._atexit)
        flushed = self._worker.shutdown(deadline.remaining(), reason)
        if first:
            self.runner.close(deadline.remaining())
        if flush_exporters:
            flushed = self._delivery.flush(deadline) and flushed
        if first:
            self._delivery.shutdown(deadline)
        return flushed

    def _on_signal(self, timeout: float, ends_process: bool) -> None:
        """What `install_signal_handlers` does before chaining (see there)."""
        deadline = Deadline(timeout)
        if ends_process:
            self._close(deadline, LOST_SIGNAL, flush_exporters=True)
        else:
            self.flush(timeout)

    def __enter__(self) -> RefCheckMonitor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()
