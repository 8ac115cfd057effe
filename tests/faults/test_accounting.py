"""Every accepted submission is delivered or counted, and nothing a component raises stops the
worker. `flush(timeout)` and `shutdown(timeout)` keep one deadline in total.

Issue 19: `shutdown(timeout=2)` with a full queue returned after 4.0 s while the worker still ran,
and 1,888 of 2,048 accepted requests were neither delivered nor counted; a checker raising
`asyncio.CancelledError` left a batch of 11 without results, `stats` empty and `flush()` True;
an `on_result` hook raising `SystemExit` killed the worker loop (later submits were accepted and
never run, and `check()` raised `RuntimeError('Event loop is closed')` into the caller).
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Sequence

import pytest
from deadlines import SLACK
from fault_components import MARK, RaisingChecker, RaisingExtractor
from results import ResultSink
from scripted_checkers import GatedChecker, KeywordChecker, SlowChecker

from refcheck_callbacks import CheckResult, Outcome, RefCheckMonitor, Tally
from refcheck_callbacks.contract.components import Exporter

REFERENCES = ["The Eiffel Tower is 330 metres tall. It stands in Paris."]
LOST_REASONS = ("shutdown_timeout", "exit", "signal", "worker_crash")
"""The reasons an accepted submission can be dropped for (issue 19)."""


def _lost(monitor: RefCheckMonitor) -> int:
    return sum(monitor.stats.get(Tally.DROPPED, reason) for reason in LOST_REASONS)


def _fill(monitor: RefCheckMonitor, count: int, word: str = "Paris") -> int:
    return sum(
        monitor.submit(answer=f"Claim {i} is in {word}.", references=REFERENCES)
        for i in range(count)
    )


def test_shutdown_with_a_full_queue_returns_in_time_and_counts_what_it_could_not_finish(
    sink: ResultSink,
) -> None:
    monitor = RefCheckMonitor(
        checker=SlowChecker(seconds=0.05), on_result=sink, exporters=[], max_queue=2048
    )
    accepted = _fill(monitor, 2048)
    assert accepted == 2048
    started = time.monotonic()
    finished = monitor.shutdown(timeout=2)
    elapsed = time.monotonic() - started
    assert elapsed < 2 + SLACK, f"shutdown(timeout=2) took {elapsed:.1f}s"
    assert not finished
    lost = monitor.stats.get(Tally.DROPPED, "shutdown_timeout")
    assert lost > 0
    time.sleep(0.3)  # a batch finishing after the deadline must not be delivered as well
    assert len(sink.results) + lost == accepted


def test_flush_keeps_one_deadline_over_the_worker_and_every_exporter(sink: ResultSink) -> None:
    class SlowFlushExporter(Exporter):
        """Ignores its flush timeout, as an SDK retrying a dead endpoint does."""

        name = "slow-flush"

        def force_flush(self, timeout: float) -> bool:
            time.sleep(5)
            return True

    checker = GatedChecker()
    monitor = RefCheckMonitor(
        checker=checker, on_result=sink, exporters=[SlowFlushExporter(), SlowFlushExporter()]
    )
    try:
        _fill(monitor, 3)
        threading.Timer(0.5, checker.gate.set).start()
        started = time.monotonic()
        flushed = monitor.flush(timeout=1.5)
        elapsed = time.monotonic() - started
        assert not flushed
        assert elapsed < 1.5 + SLACK, f"flush(timeout=1.5) took {elapsed:.1f}s"
        assert len(sink.results) == 3  # the worker's part finished inside the deadline
    finally:
        checker.gate.set()
        monitor.shutdown(1)


def test_a_checker_raising_cancelled_error_fails_its_batch_which_is_counted(
    sink: ResultSink,
) -> None:
    checker = RaisingChecker(asyncio.CancelledError)
    with RefCheckMonitor(
        checker=checker, on_result=sink, exporters=[], batch_size=11, max_wait=2.0
    ) as monitor:
        assert _fill(monitor, 11, word=MARK) == 11
        assert monitor.flush(10)
        assert len(sink.results) == 11
        assert {r.outcome for r in sink.results} == {Outcome.ERROR}
        assert {r.error_type for r in sink.results} == {"CancelledError"}
        assert monitor.stats.get(Tally.FAILED, "CancelledError") == 11
        assert monitor.check(answer="It is in Paris.", references=REFERENCES).outcome is (
            Outcome.CHECKED
        )


@pytest.mark.parametrize(
    "raised", [SystemExit, KeyboardInterrupt, GeneratorExit, asyncio.CancelledError, MemoryError]
)
@pytest.mark.parametrize("stage", ["extract", "check"])
def test_a_component_raising_a_base_exception_fails_only_its_requests(
    stage: str, raised: type[BaseException], sink: ResultSink
) -> None:
    if stage == "extract":
        components = {"extractor": RaisingExtractor(raised), "checker": KeywordChecker()}
    else:
        components = {"checker": RaisingChecker(raised)}
    with RefCheckMonitor(
        **components, on_result=sink, exporters=[], batch_size=4, max_wait=1.0
    ) as monitor:
        monitor.submit(answer=f"It is {MARK}.", references=REFERENCES)
        _fill(monitor, 3)
        assert monitor.flush(10)
        outcomes = sorted(r.outcome.value for r in sink.results)
        assert outcomes == ["checked", "checked", "checked", "error"]
        assert monitor.stats.get(Tally.FAILED, raised.__name__) == 1
        assert _fill(monitor, 2) == 2 and monitor.flush(10)
        assert len(sink.results) == 6


def test_a_hook_raising_system_exit_leaves_the_worker_and_check_working(sink: ResultSink) -> None:
    def exiting_hook(result: CheckResult) -> None:
        raise SystemExit(1)

    class ExitingExporter(Exporter):
        name = "exiting"

        def export(self, results: Sequence[CheckResult]) -> None:
            raise KeyboardInterrupt

    with RefCheckMonitor(
        checker=KeywordChecker(), on_result=[exiting_hook, sink], exporters=[ExitingExporter()]
    ) as monitor:
        assert _fill(monitor, 3) == 3
        assert monitor.flush(10)
        assert _fill(monitor, 3) == 3
        assert monitor.flush(10)
        result = monitor.check(answer="It is in Paris.", references=REFERENCES)
        assert result.outcome is Outcome.CHECKED
    assert len(sink.results) == 7
    assert monitor.stats.get(Tally.ERRORS, "on_result") == 7
    assert monitor.stats.get(Tally.ERRORS, "exporter") == 7  # each result it did not get


def test_a_failure_of_our_own_is_counted_as_a_worker_crash_and_the_worker_goes_on(
    sink: ResultSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Bug(BaseException):
        """A failure no code of ours expects: it escapes the pipeline."""

    monitor = RefCheckMonitor(checker=KeywordChecker(), on_result=sink, exporters=[])
    real_run = monitor.pipeline.run

    async def broken_run(requests: object) -> list[CheckResult]:
        raise Bug

    with monitor:
        monkeypatch.setattr(monitor.pipeline, "run", broken_run)
        assert _fill(monitor, 5) == 5
        assert monitor.flush(10)
        assert monitor.stats.get(Tally.DROPPED, "worker_crash") == 5
        monkeypatch.setattr(monitor.pipeline, "run", real_run)
        assert _fill(monitor, 2) == 2
        assert monitor.flush(10)
    assert len(sink.results) == 2


def test_ctrl_c_during_shutdown_counts_what_is_left_then_raises(sink: ResultSink) -> None:
    checker = GatedChecker()
    monitor = RefCheckMonitor(checker=checker, on_result=sink, exporters=[], batch_size=4)
    accepted = _fill(monitor, 20)
    assert checker.entered.wait(10)
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread() is threading.main_thread()
    # Python's own SIGINT handler, whatever an earlier test (or library) left installed.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            monitor.shutdown(timeout=30)
    finally:
        checker.gate.set()
        signal.signal(signal.SIGINT, previous)
    assert monitor.stats.get(Tally.DROPPED, "signal") == accepted
    time.sleep(0.3)
    assert len(sink.results) + _lost(monitor) == accepted
    assert not monitor.submit(answer="Too late.", references=REFERENCES)


def test_check_after_the_monitor_shut_down_mid_check_returns_a_result() -> None:
    checker = GatedChecker()
    monitor = RefCheckMonitor(checker=checker, exporters=[])
    results: list[CheckResult] = []
    caller = threading.Thread(
        target=lambda: results.append(
            monitor.check(answer="It is in Paris.", references=REFERENCES)
        )
    )
    caller.start()
    assert checker.entered.wait(10)
    monitor.shutdown(timeout=0.5)
    caller.join(10)
    checker.gate.set()
    [result] = results
    assert result.outcome is Outcome.ERROR
    assert result.error_type == "MonitorUnavailableError"
