"""Overload and fork: what held in issue 19's trial, kept as standing checks.

100x more submissions than the queue holds are refused at once and counted, memory stays flat,
and accepted = delivered + counted. A process forked while the monitor is mid-batch, with a
stage call stuck in a thread, or while an exporter's flush hangs, gets a monitor of its own that
works.
"""

from __future__ import annotations

import gc
import os
import resource
import threading
import time

import pytest
from fault_components import MARK, StuckChecker
from results import ResultSink
from scripted_checkers import KeywordChecker

from refcheck_callbacks import Outcome, RefCheckMonitor, StageTimeouts, Tally
from refcheck_callbacks.contract.components import Exporter

REFERENCE = "The Eiffel Tower stands in Paris. " * 300  # about 10 KB


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 1e6


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux /proc")
def test_overload_is_refused_and_counted_with_memory_flat(sink: ResultSink) -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker(), on_result=sink, exporters=[], max_queue=64)
    accepted = refused = 0
    rss: list[float] = []
    with monitor:
        for _ in range(5):
            for i in range(6_400):  # 100x the queue
                if monitor.submit(answer=f"Claim {i} is in Paris.", references=[REFERENCE]):
                    accepted += 1
                else:
                    refused += 1
            assert monitor.flush(60)
            gc.collect()
            rss.append(_rss_mb())
    assert refused > 0 and monitor.stats.get(Tally.DROPPED, "queue_full") == refused
    assert len(sink.results) == accepted
    sink.results.clear()
    gc.collect()
    assert rss[-1] - rss[1] < 20, f"RSS grew under steady overload: {rss}"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_child_forked_mid_batch_with_a_stuck_stage_thread_checks_on_its_own(
    sink: ResultSink,
) -> None:
    checker = StuckChecker()
    monitor = RefCheckMonitor(
        checker=checker, on_result=sink, exporters=[], timeouts=StageTimeouts(check=30)
    )
    try:
        assert monitor.submit(answer=f"It is {MARK}.", references=["It is in Paris."])
        deadline = time.monotonic() + 10
        while not checker.stuck and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checker.stuck == 1  # the parent's batch is stuck in a stage thread
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                result = monitor.check(answer="It is in Paris.", references=["It is in Paris."])
                ok = result.outcome is Outcome.CHECKED
                ok = ok and monitor.submit(answer="Paris.", references=["Paris."])
                ok = ok and monitor.flush(30) and len(sink.results) == 2
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, "the forked child could not check"
    finally:
        checker.release.set()
        monitor.shutdown(10)
    assert [r.outcome for r in sink.results] == [Outcome.CHECKED]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_child_forked_while_an_exporter_flush_hangs_flushes_its_own_exporters() -> None:
    parent = os.getpid()
    release = threading.Event()

    class HangingInTheParent(Exporter):
        """Its flush hangs in the parent (an endpoint that never answers) and works in a child."""

        name = "hanging-in-the-parent"

        def force_flush(self, timeout: float) -> bool:
            if os.getpid() == parent:
                release.wait(30)
            return True

    monitor = RefCheckMonitor(checker=KeywordChecker(), exporters=[HangingInTheParent()])
    try:
        assert not monitor.flush(timeout=0.2)  # the parent's flush call goes on in a thread
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                ok = monitor.submit(answer="Paris.", references=["Paris."]) and monitor.flush(5)
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, "the child waited for its parent's flush"
    finally:
        release.set()
        monitor.shutdown(5)
