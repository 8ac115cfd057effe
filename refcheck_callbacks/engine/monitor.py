"""`RefCheckMonitor`: the one object an app creates; it checks answers in the background.

It is the `AnswerSink` integrations submit to. `submit` is the production path: it captures
the arguments (`submission`), samples, and enqueues in microseconds, never blocking or
raising. The worker then hands each batch to the monitor's `Checking` (pairing, building,
running the pipeline where the placement puts it, delivering to the exporters and `on_result`
hooks). `check` / `acheck` run one answer through the same path directly and return its
result. Everything not checked is counted in `stats`: every accepted submission is delivered
or counted dropped with a reason, also when `shutdown`, interpreter exit or a signal
(`install_signal_handlers`) ends the monitor before its result is ready. `flush` and
`shutdown` each keep one deadline in total, whatever the exporters do.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import signal
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from refcheck_callbacks.check.calibration.file import CalibrationSource, load_calibration
from refcheck_callbacks.check.relevance.selection import RelevanceSource, checked_spec
from refcheck_callbacks.contract.answers import AnswerFields, InputLimits
from refcheck_callbacks.contract.components import Checker, Exporter, Extractor
from refcheck_callbacks.contract.reasons import (
    DropReason,
    ErrorReason,
    Reason,
    SkipReason,
    Tally,
)
from refcheck_callbacks.contract.registry import EXPORTERS, ConflictSource, Source, build
from refcheck_callbacks.engine import signals
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.audit import Audit, audit_from
from refcheck_callbacks.engine.checking import Checking, invalid_input, unpaired
from refcheck_callbacks.engine.counters import Counters
from refcheck_callbacks.engine.delivery import Delivery, ResultHook
from refcheck_callbacks.engine.feedback import FeedbackDesk, FeedbackLabels, RefusedFeedback
from refcheck_callbacks.engine.pipeline import DEFAULT_CONFLICT, Pipeline, StageTimeouts
from refcheck_callbacks.engine.placement.components import Settings
from refcheck_callbacks.engine.placement.in_thread import InThread
from refcheck_callbacks.engine.placement.runner import runner_for
from refcheck_callbacks.engine.redaction import Redactor
from refcheck_callbacks.engine.sampling import Sampler
from refcheck_callbacks.engine.submission import RawInput, capture, trace_context_of
from refcheck_callbacks.engine.worker import BackgroundWorker
from refcheck_callbacks.environment_variables import JudgeBudgetSettings, read_environment
from refcheck_callbacks.errors import MonitorUnavailableError
from refcheck_callbacks.llm.budget import JudgeBudget
from refcheck_callbacks.support.blocking import STAGE_THREADS
from refcheck_callbacks.support.deadline import Deadline
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest, CheckResult, Outcome, Placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_EXPORTERS = ("opentelemetry",)
"""The exporters of a monitor given none: spans, events and metrics on the global providers."""


def _exporters(given: Sequence[Exporter | str] | None, capture_content: bool) -> list[Exporter]:
    """The exporters, a registered name built with the monitor's `capture_content`."""
    return [
        build(EXPORTERS, e, capture_content=capture_content) if isinstance(e, str) else e
        for e in (DEFAULT_EXPORTERS if given is None else given)
    ]


class RefCheckMonitor:
    """Checks RAG answers against their references in a background worker.

    An option left at None takes its `REFCHECK_*` environment variable where one is set
    (`environment_variables`; a bad value raises `ConfigurationError`), else its default.

    Args:
        extractor: turns answers into claims (default: offline `SentenceExtractor`).
        checker: labels claims (default: offline `EmbeddedChecker`; needs the `embedded` extra).
            Either may also be a spec, as `refcheck` takes it (`"nli:MODEL"`, `"llm:MODEL"`,
            `"remote:URL"`, a registered name, `"py:package.module:Factory"`: see
            `contract.registry`), or a factory called without arguments (a class, a
            module-level function).
        placement: where extraction and checking run. "process": in a child process started
            with multiprocessing's spawn, so the app's process only captures, queues, redacts
            and exports; the extractor and checker must then be specs or picklable factories
            (the child builds them), and the app's entry point must be guarded by
            `if __name__ == "__main__":` as for any spawned process. A child that crashes,
            is killed or hangs is replaced; the requests it held end `error`
            (`CheckingProcessError`). "thread": on the monitor's background thread, sharing
            the app's GIL. "service": the checker checks on a `refcheck serve` service
            (`remote:URL`), the rest runs on the monitor's thread. None (default): "process"
            where a child can start, else "thread" with one `PlacementWarning` that says why
            (components built in the app, a factory the child cannot import, no main guard,
            a process that cannot spawn). See `engine.placement`.
        aggregator: "strict" (default) or "major" for the response label; soft ratios are
            always reported.
        sample_rate: share of submitted answers to check, stable per trace id (default 1).
        max_queue: submissions waiting at most; beyond it `submit` returns False and counts a drop.
        on_result: callables given every result, in the worker thread; a raising hook is
            logged and counted, never propagated.
        capture_content: let exporters include question, answer, claim and document text
            (default: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, else False).
        redact: applied to every text before it is checked, sent to a judge or exported;
            always in the app's process (with placement="process", before the request is
            sent to the child), so the hook need not be picklable.
        exporters: where results go: exporters, or names registered as exporters (built with
            this `capture_content`). None (the default) means one `OpenTelemetryExporter` on
            the global tracer and meter providers ("opentelemetry"); `[]` means none.
        batch_size, max_wait: how many answers one checker call sees, and how long the worker
            waits for a batch to fill.
        concurrency: batches in flight at once (raise it for remote LLM judges).
        timeouts: per-stage deadlines; limits: input size bounds.
        exit_timeout: at interpreter exit, seconds to finish queued work in total (default
            5); what is left then is counted as dropped (`exit`).
        conflict: the conflict stage every checker's verdicts go through, so that a
            Contradiction always names a conflicting reference statement and its kind, and a
            claim that is only unsupported is Neutral (`check.conflict`): "embedded" (default,
            offline), "nli:MODEL" (a 3-way NLI model, for a GPU), a finder, or None to keep
            the checker's labels as they are.
        calibration: decision points fitted on the app's own labels by `refcheck calibrate`:
            the path of its file, or a loaded `Calibration`. Read here, so a bad file raises
            `CalibrationError` at once; a calibration fitted for another checker or conflict
            stage is refused (`CalibrationMismatchError`) where the checker is built: here for
            placement="thread" or "service", in the child for "process" (every result then
            ends `error` with that type and message). See `check.calibration`. Its id goes
            on the claim counts and its flag counts on audit labels to gauges, for the
            dashboard's adjusted rates (`engine.delivery.CalibratedExporter`, docs/telemetry.md).
        feedback_file: append every verdict `feedback` records to this file, with the
            answer's text (after `redact`), in the labelled format `refcheck calibrate` reads
            (`engine.feedback_file`). Opting in to keep that text; None (default): no file.
        feedback_memory: recent results `feedback` can find (least recently used forgotten);
            0 turns feedback off.
        audit_rate, audit_file: the random audit (`engine.audit`, docs/audit.md): this share
            of checked answers with claims, drawn uniformly whatever their verdicts, is
            appended to `audit_file` (its text after `redact`) for a person to label with
            `refcheck review`. A file alone draws 1%; a rate without a file is refused.
            Every draw is counted in `stats` (`audited`: `written`, or why not).
        audit_max_bytes: the audit file's size bound (default 64 MiB); draws past it are
            counted `file_full`. audit_seed: seeds the draw (tests; default: random).
        judge_budget: a hard cap on what the `llm:` judge and extractor spend together
            (`JudgeBudget(usd=..., tokens=..., window_s=...)`), checked before each call;
            the claims of a call it cannot hold go to its fallback checker, and a model with
            no known price under a USD cap refuses to start (`BudgetError`). See `llm.budget`.
            It holds the relevance judge's calls too.
        relevance: how retrieval diagnostics score relevance (docs/diagnostics.md): "embedded"
            (default: the offline head), "llm:MODEL" (an LLM grades every reference, claim and
            the answer in one call per answer, falling back to the head, counted, for what it
            cannot grade), or an `LLMRelevance` (`check.relevance.llm_relevance`) for an
            endpoint, client or options of your own (with placement="process": a spec or a
            picklable factory). A bad spec raises `ConfigurationError`.
    """

    def __init__(
        self,
        extractor: Extractor | Source | None = None,
        checker: Checker | Source | None = None,
        aggregator: str | Aggregator = Aggregator.STRICT,
        sample_rate: float | None = None,
        max_queue: int = 2048,
        on_result: ResultHook | Iterable[ResultHook] | None = None,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        exporters: Sequence[Exporter | str] | None = None,
        batch_size: int = 16,
        max_wait: float = 0.05,
        concurrency: int = 1,
        timeouts: StageTimeouts | None = None,
        limits: InputLimits | None = None,
        exit_timeout: float | None = None,
        placement: Placement | str | None = None,
        conflict: ConflictSource = DEFAULT_CONFLICT,
        calibration: CalibrationSource | None = None,
        feedback_file: str | Path | None = None,
        feedback_memory: int = 1024,
        judge_budget: JudgeBudget | None = None,
        audit_rate: float | None = None,
        audit_file: str | Path | None = None,
        audit_max_bytes: int | None = None,
        audit_seed: int | None = None,
        relevance: RelevanceSource = None,
    ) -> None:
        env = read_environment()  # a keyword given wins over its variable
        extractor = env.extractor if extractor is None else extractor
        checker = env.checker if checker is None else checker
        placement = env.placement if placement is None else placement
        exporters = env.exporters if exporters is None else exporters
        calibration = env.calibration if calibration is None else calibration
        feedback_file = env.feedback_file if feedback_file is None else feedback_file
        relevance = checked_spec(env.relevance if relevance is None else relevance)
        if judge_budget is None and env.judge_budget is not None:
            judge_budget = _budget_from(env.judge_budget)
        capture_content = bool(env.capture_content if capture_content is None else capture_content)
        if sample_rate is None:
            sample_rate = 1.0 if env.sample_rate is None else env.sample_rate
        if exit_timeout is None:
            exit_timeout = 5.0 if env.exit_timeout is None else env.exit_timeout
        auditing = audit_from(audit_rate, audit_file, audit_max_bytes, env)
        self._feedback = FeedbackDesk(feedback_memory, feedback_file)
        self.aggregator = Aggregator(aggregator)
        self.capture_content = capture_content
        self.limits = limits or InputLimits()
        loaded = None if calibration is None else load_calibration(calibration)
        self.runner = runner_for(
            placement,
            extractor,
            checker,
            Settings(
                self.aggregator,
                timeouts or StageTimeouts(),
                self.limits.max_claims,
                conflict,
                loaded,
                judge_budget,
                relevance,
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
        self.exporters = _exporters(exporters, capture_content)
        self.audit: Audit | None = None
        """The random audit, when one is on: `audit.rate`, `audit.file.path`."""
        if auditing is not None:
            rate, file = auditing
            self.audit = Audit(
                rate,
                file,
                lambda reason: self.record(Tally.AUDITED, reason),
                None if loaded is None else loaded.id,
                audit_seed,
            )
        keepers = [self._feedback.remember] + ([self.audit.draw] if self.audit else [])
        self._delivery = Delivery(self.exporters, self.on_result, self.stats, keepers)
        self._checking = Checking(self.runner, self._delivery, self.limits)
        self._sampler = Sampler(sample_rate)
        self._worker: BackgroundWorker[RawInput, list[CheckResult]] = BackgroundWorker(
            self._checking, max_queue, batch_size, max_wait, concurrency
        )
        for exporter in self.exporters:
            exporter.bind(lambda: self._worker.queue_size)
        self._delivery.calibrated(loaded)
        self._shut_down = False
        self._signals: set[int] = set()
        self._exit_timeout = exit_timeout
        # Held until `shutdown`, so that a monitor the app let go of without shutting it down
        # still finishes its work at exit, and stops its checking process before
        # multiprocessing's own exit hook would wait for it.
        atexit.register(self._at_exit)

    # -- the hot path: the AnswerSink an integration uses ----------------------------------

    def submit(self, **fields: Unpack[AnswerFields]) -> bool:
        """Queue an answer for checking. O(1), never blocks, never raises.

        The fields are `AnswerFields`. A `references` callable runs in the worker; an
        exception it raises fails that request alone, with outcome `error`.

        Returns False when the answer will not be checked: sampled out (counted as skipped),
        queue full or monitor shut down (counted as dropped), or fields that are not
        `AnswerFields` (counted as an error, `submit`).
        """
        try:
            context = trace_context_of(fields)
            if not self._sampler.should_check(context):
                self.skipped(SkipReason.SAMPLED_OUT)
                return False
            raw = capture(fields, context, time.time())
            if self._worker.put(raw):
                return True
            self.dropped(DropReason.SHUTDOWN if self._worker.closed else DropReason.QUEUE_FULL)
        except Exception:
            logger.exception("refcheck: submit failed")
            self.errored(ErrorReason.SUBMIT)
        return False

    def skipped(self, reason: SkipReason, count: int = 1) -> None:
        """Count answers deliberately not checked. Never raises."""
        self.record(Tally.SKIPPED, reason, count)

    def dropped(self, reason: DropReason, count: int = 1) -> None:
        """Count answers not checked for lack of capacity. Never raises."""
        self.record(Tally.DROPPED, reason, count)

    def errored(self, reason: ErrorReason, count: int = 1) -> None:
        """Count a failure of refcheck's own code (a callback that raised). Never raises."""
        self.record(Tally.ERRORS, reason, count)

    def record(self, tally: Tally, reason: Reason | str, count: int = 1) -> None:
        """Count something not checked or failed, and tell the exporters. Never raises."""
        self._delivery.record(tally, reason, count)

    def feedback(self, response_id: str, labels: FeedbackLabels, audit: bool = False) -> bool:
        """Record a person's verdict on a checked answer. Never raises.

        `response_id` is the answer's request id (`result.request.request_id`) or the
        generation's response id the app submitted (`response_id=`); `labels` one label per
        claim of the answer (None for a claim not labelled), or one label for the whole
        answer: "Entailment", "Neutral", "Contradiction", or True / False for supported.
        The verdict becomes `gen_ai.evaluation.result` events named `refcheck.feedback`, the
        `refcheck.feedback.claims` count of agreement with the checker, and a line of
        `feedback_file`. Returns False, counted with a `FeedbackReason`, when the answer is
        not among the latest `feedback_memory` results with claims, the labels do not fit
        it, or the file cannot be written (its record whole on disk, synced).

        `audit=True` says the answer came from a uniform random sample, as the audit draws
        (labelled in the app rather than with `refcheck review`): its line in the file is
        marked `"audit": true`, with the checker's probabilities and evidence, so that
        `refcheck calibrate` fits the rate estimate on it. Thumbs given where a user saw a
        problem are no such sample: leave them at False.
        """
        try:
            self._feedback.record(response_id, labels, self._delivery.feedback, audit)
            return True
        except RefusedFeedback as refused:
            self.record(Tally.FEEDBACK_REFUSED, refused.reason)
        except Exception:
            logger.exception("refcheck: feedback failed")
            self.errored(ErrorReason.FEEDBACK)
        return False

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
            return self._worker.run(self._checking.check_one(request)).result()
        except (RuntimeError, concurrent.futures.CancelledError, asyncio.CancelledError):
            return self._refused(request, "the monitor shut down before the check finished")

    async def acheck(self, **fields: Unpack[AnswerFields]) -> CheckResult:
        """`check` for async code: the work runs on the monitor's loop, not the caller's."""
        request = self._direct(fields)
        if isinstance(request, CheckResult):
            return request
        try:
            return await asyncio.wrap_future(self._worker.run(self._checking.check_one(request)))
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
            context = trace_context_of(fields)
        except Exception:
            context = None
        try:
            raw = capture(fields, context)
        except TypeError as exc:
            return invalid_input(exc)
        built = self._checking.request(raw)
        if built is None or isinstance(built, SkipReason):
            return unpaired() if built is None else unpaired(built)
        return built

    def _refused(self, request: CheckRequest, reason: str | None = None) -> CheckResult:
        if reason is None:
            reason = "the monitor is shut down" if self._shut_down else "check() from a result hook"
        return CheckResult(
            request=request,
            outcome=Outcome.ERROR,
            error_type=MonitorUnavailableError.__name__,
            message=reason,
        )

    # -- lifecycle ------------------------------------------------------------------------

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every accepted submission has a result and the exporters have flushed,
        all within `timeout` seconds; False if that ran out (nothing is lost: work goes on)."""
        deadline = Deadline(timeout)
        flushed = self._worker.flush(deadline.remaining())
        if self.audit is not None:
            flushed = self.audit.flush(deadline) and flushed
        return self._delivery.flush(deadline) and flushed

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Finish queued work, stop the worker and exporters, all within `timeout` seconds.
        What is left at the deadline is counted as dropped (`shutdown_timeout`); returns False
        then. Idempotent."""
        return self._close(Deadline(timeout), DropReason.SHUTDOWN_TIMEOUT)

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

    def _at_exit(self) -> None:
        """At interpreter exit: finish within `exit_timeout`; what is left is dropped (`exit`)."""
        self._close(Deadline(self._exit_timeout), DropReason.EXIT)

    def finish_on_signal(self, timeout: float, ends_process: bool) -> None:
        """What `install_signal_handlers`' handler does before chaining (see there)."""
        deadline = Deadline(timeout)
        if ends_process:
            self._close(deadline, DropReason.SIGNAL, flush_exporters=True)
        else:
            self.flush(timeout)

    def _close(self, deadline: Deadline, reason: DropReason, flush_exporters: bool = False) -> bool:
        """Shut down within `deadline`, counting what is left for `reason`. Called again while
        a shutdown waits (a signal arriving then), it counts what is left by its own deadline."""
        first = not self._shut_down
        self._shut_down = True
        if first:
            atexit.unregister(self._at_exit)
        flushed = self._worker.shutdown(deadline.remaining(), reason)
        if self.audit is not None:
            flushed = self.audit.shutdown(deadline) and flushed
        if first:
            self.runner.close(deadline.remaining())
        if flush_exporters:
            flushed = self._delivery.flush(deadline) and flushed
        if first:
            self._delivery.shutdown(deadline)
        return flushed

    def __enter__(self) -> RefCheckMonitor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()


def _budget_from(settings: JudgeBudgetSettings) -> JudgeBudget:
    """The budget `REFCHECK_JUDGE_BUDGET_*` asks for (its window, else the budget's default)."""
    window = {} if settings.window_seconds is None else {"window_s": settings.window_seconds}
    return JudgeBudget(usd=settings.usd, tokens=settings.tokens, **window)
