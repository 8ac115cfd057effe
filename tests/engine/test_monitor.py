"""The engine's contract: bounded, non-blocking, isolated, counted, flushable, fork-safe."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from deadlines import AT_ONCE, SLACK
from scripted_checkers import GatedChecker, KeywordChecker, SlowChecker

from refcheck_callbacks import (
    CheckResult,
    Label,
    Outcome,
    RefCheckMonitor,
    StageTimeouts,
    Tally,
    TraceContext,
)
from refcheck_callbacks.contract.components import Exporter

REFERENCES = ["The Eiffel Tower is 330 metres tall. It stands in Paris."]


def _submit(monitor: RefCheckMonitor, answer: str, **kwargs: object) -> bool:
    return monitor.submit(
        question="How tall is it?", answer=answer, references=REFERENCES, **kwargs
    )


def test_concurrent_submissions_each_get_one_result_or_one_counted_drop(sink) -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), on_result=sink, max_queue=200)
    accepted = []
    lock = threading.Lock()

    def producer(thread: int) -> None:
        for i in range(125):
            answer = f"Answer {thread}-{i} says the tower is in Paris."
            ok = _submit(monitor, answer, metadata={"key": f"{thread}-{i}"})
            with lock:
                accepted.append(ok)

    threads = [threading.Thread(target=producer, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert monitor.flush(timeout=60)
    monitor.shutdown()

    keys = [r.request.metadata["key"] for r in sink.results]
    assert len(keys) == len(set(keys)), "a submission produced two results"
    dropped = monitor.stats.get(Tally.DROPPED, "queue_full")
    assert len(accepted) == 1000
    assert sum(accepted) == len(sink.results)
    assert len(sink.results) + dropped == 1000
    assert all(r.outcome is Outcome.CHECKED for r in sink.results)


def test_full_queue_refuses_at_once_and_counts(sink) -> None:
    checker = GatedChecker()
    monitor = RefCheckMonitor(checker=checker, on_result=sink, max_queue=4, batch_size=1)
    try:
        assert _submit(monitor, "The tower is in Paris.")
        assert checker.entered.wait(10)  # the worker holds one request; the queue is empty
        assert all(_submit(monitor, f"Fill {i} is in Paris.") for i in range(4))
        started = time.perf_counter()
        refused = _submit(monitor, "One too many in Paris.")
        elapsed = time.perf_counter() - started
        assert refused is False
        assert elapsed < AT_ONCE + SLACK, "a full queue must refuse without waiting"
        assert monitor.stats.get(Tally.DROPPED, "queue_full") == 1
    finally:
        checker.gate.set()
        monitor.shutdown()
    assert len(sink.results) == 5


def test_a_raising_checker_fails_only_its_own_request(sink) -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), on_result=sink, max_wait=0.5)
    for answer in ["The tower is in Paris.", "This poison claim is in Paris.", "It is 330 tall."]:
        assert _submit(monitor, answer)
    assert monitor.flush(timeout=30)
    monitor.shutdown()
    by_answer = {r.request.answer: r for r in sink.results}
    poisoned = by_answer["This poison claim is in Paris."]
    assert poisoned.outcome is Outcome.ERROR
    assert poisoned.error_type == "RuntimeError"
    assert "checker exploded on poison" in (poisoned.message or "")
    assert by_answer["The tower is in Paris."].outcome is Outcome.CHECKED
    assert by_answer["It is 330 tall."].outcome is Outcome.CHECKED


def test_flush_waits_for_in_flight_work(sink) -> None:
    checker = GatedChecker()
    monitor = RefCheckMonitor(checker=checker, on_result=sink)
    try:
        assert _submit(monitor, "The tower is in Paris.")
        assert checker.entered.wait(10)
        assert monitor.flush(timeout=0.2) is False, "flush returned while work was in flight"
        threading.Timer(0.3, checker.gate.set).start()
        assert monitor.flush(timeout=10) is True
        assert len(sink.results) == 1
    finally:
        checker.gate.set()
        monitor.shutdown()


def test_shutdown_is_idempotent_and_later_submissions_are_counted_drops(sink) -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), on_result=sink)
    assert _submit(monitor, "The tower is in Paris.")
    assert monitor.shutdown() is True
    assert monitor.shutdown() is True
    assert len(sink.results) == 1, "shutdown must finish queued work"
    assert _submit(monitor, "After shutdown in Paris.") is False
    assert monitor.stats.get(Tally.DROPPED, "shutdown") == 1
    late = monitor.check(answer="It is in Paris.", references=REFERENCES)
    assert late.outcome is Outcome.ERROR
    assert late.message == "the monitor is shut down"


def test_context_manager_flushes_on_exit(sink) -> None:
    with RefCheckMonitor(checker=KeywordChecker(), on_result=sink) as monitor:
        for i in range(20):
            assert _submit(monitor, f"Claim {i} is in Paris.")
    assert len(sink.results) == 20


def _trace(trace_id: int) -> TraceContext:
    return TraceContext(trace_id=format(trace_id, "032x"), span_id="00f067aa0ba902b7")


def test_sampling_rate_is_close_and_stable_per_trace() -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), sample_rate=0.25, max_queue=5000)
    rng = random.Random(7)
    traces = [_trace(rng.getrandbits(128) or 1) for _ in range(4000)]
    try:
        accepted = [_submit(monitor, "It is in Paris.", trace_context=t) for t in traces]
        assert 0.22 <= sum(accepted) / 4000 <= 0.28
        assert monitor.stats.get(Tally.SKIPPED, "sampled_out") == 4000 - sum(accepted)
        again = [_submit(monitor, "It is in Paris.", trace_context=t) for t in traces[:200]]
        assert again == accepted[:200], "the same trace id must get the same decision"
    finally:
        monitor.shutdown()


def test_sampling_without_trace_id_is_random_at_the_rate() -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), sample_rate=0.25, max_queue=5000)
    try:
        accepted = [_submit(monitor, "It is in Paris.", trace_context=None) for _ in range(4000)]
        assert 0.22 <= sum(accepted) / 4000 <= 0.28
    finally:
        monitor.shutdown()


def test_requests_are_batched_for_the_checker() -> None:
    checker = KeywordChecker()
    with RefCheckMonitor(checker=checker, batch_size=16, max_wait=0.2) as monitor:
        for i in range(64):
            assert _submit(monitor, f"Claim {i} is in Paris.")
        assert monitor.flush(timeout=30)
    assert sum(checker.batches) == 64
    assert max(checker.batches) > 1, "the checker never saw more than one request at once"
    assert max(checker.batches) <= 16


def test_a_stage_past_its_deadline_times_out_and_the_monitor_goes_on() -> None:
    monitor = RefCheckMonitor(checker=SlowChecker(), timeouts=StageTimeouts(check=0.2))
    try:
        result = monitor.check(answer="The tower is in Paris.", references=REFERENCES)
        assert result.outcome is Outcome.TIMEOUT
        assert result.error_type == "TimeoutError"
        assert "check took longer than 0.2s" in (result.message or "")
        monitor.pipeline.checker = KeywordChecker()
        assert monitor.check(answer="It is in Paris.", references=REFERENCES).outcome is (
            Outcome.CHECKED
        )
    finally:
        monitor.shutdown()


def test_hooks_and_exporters_are_isolated_from_each_other(sink) -> None:
    class BrokenExporter(Exporter):
        name = "broken"

        def export(self, results: Sequence[CheckResult]) -> None:
            raise ValueError("exporter down")

    def broken_hook(result: CheckResult) -> None:
        raise RuntimeError("hook bug")

    monitor = RefCheckMonitor(
        checker=KeywordChecker(), on_result=[broken_hook, sink], exporters=[BrokenExporter()]
    )
    with monitor:
        for i in range(3):
            assert _submit(monitor, f"Claim {i} is in Paris.")
    assert len(sink.results) == 3
    assert monitor.stats.get(Tally.ERRORS, "on_result") == 3
    assert monitor.stats.get(Tally.ERRORS, "exporter") == 3


def test_check_and_acheck_return_the_same_result_shape() -> None:
    with RefCheckMonitor(checker=KeywordChecker()) as monitor:
        sync = monitor.check(question="Q?", answer="It is in Paris.", references=REFERENCES)

        async def main() -> CheckResult:
            return await monitor.acheck(
                question="Q?", answer="It is in Paris.", references=REFERENCES
            )

        result = asyncio.run(main())
    for checked in (sync, result):
        assert checked.outcome is Outcome.CHECKED
        assert [c.text for c in checked.claims] == ["It is in Paris."]
        assert checked.request.question == "Q?"
        assert set(checked.timings) >= {"queue", "extract", "check", "aggregate", "total"}


def test_given_claims_skip_extraction() -> None:
    with RefCheckMonitor(checker=KeywordChecker()) as monitor:
        result = monitor.check(
            answer="The tower is 330 metres tall and stands in Paris.",
            references=REFERENCES,
            claims=["The tower stands in Paris", "The tower is in Berlin"],
        )
    assert result.extractor is None
    assert [v.label for v in result.verdicts] == [Label.ENTAILMENT, Label.NEUTRAL]
    assert result.claims[0].span is None  # not a verbatim substring of the answer
    assert result.response_label is not None and result.response_label.value == "neutral"


def test_trace_context_is_captured_from_the_current_span(sink) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("test")
    with (
        RefCheckMonitor(checker=KeywordChecker(), on_result=sink) as monitor,
        tracer.start_as_current_span("rag") as span,
    ):
        assert _submit(monitor, "It is in Paris.")
        expected = format(span.get_span_context().trace_id, "032x")
    [result] = sink.results
    assert result.request.trace_context is not None
    assert result.request.trace_context.trace_id == expected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_gets_a_working_monitor_of_its_own(sink) -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), on_result=sink)
    assert _submit(monitor, "Parent claim is in Paris.")
    assert monitor.flush(timeout=30)
    pid = os.fork()
    if pid == 0:  # the child: a fresh worker thread must start on the first submit
        ok = False
        try:
            before = len(sink.results)
            ok = _submit(monitor, "Child claim is in Paris.") and monitor.flush(timeout=30)
            ok = ok and len(sink.results) == before + 1
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    monitor.shutdown()
    assert os.WEXITSTATUS(status) == 0, "the forked child could not check an answer"
    assert len(sink.results) == 1


def test_pending_work_is_flushed_at_interpreter_exit(tmp_path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parents[1] / 'helpers')!r})\n"
        "from scripted_checkers import KeywordChecker\n"
        "from refcheck_callbacks import RefCheckMonitor\n"
        "m = RefCheckMonitor(checker=KeywordChecker(), exporters=[],\n"
        "                    on_result=lambda r: print('RESULT', r.outcome.value, flush=True))\n"
        "for i in range(5):\n"
        "    m.submit(answer=f'Claim {i} is in Paris.', references=['It is in Paris.'])\n"
        "# no flush, no shutdown: the atexit hook must finish the work\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("RESULT checked") == 5


def test_internal_log_lines_are_rate_limited(caplog) -> None:
    from refcheck_callbacks.support.logs import RateLimitFilter

    handler_filter = RateLimitFilter(interval=60.0)
    records = [
        logging.LogRecord(
            "refcheck_callbacks", logging.ERROR, __file__, 1, "checker %s failed", ("x",), None
        )
        for _ in range(100)
    ]
    passed = [r for r in records if handler_filter.filter(r)]
    assert len(passed) == 1
    other = logging.LogRecord("refcheck_callbacks", logging.ERROR, __file__, 1, "another", (), None)
    assert handler_filter.filter(other)
