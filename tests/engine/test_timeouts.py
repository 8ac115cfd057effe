"""Timeouts the app hands the monitor (`flush`, `shutdown`, `exit_timeout`, the signal
handlers): one too long to wait is a wait without end, never an `OverflowError` (issue 47:
`flush(1e10)`, `flush(inf)` and `shutdown(1e10)` raised into the app); a negative one or NaN
waits not at all. The rule is `support.deadline.wait_limit`."""

from __future__ import annotations

import math
import time

import pytest
from deadlines import AT_ONCE, SLACK
from results import ResultSink
from scripted_checkers import GatedChecker, SlowChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.support.deadline import MAX_WAIT_S, Deadline, wait_limit

TOO_LONG = [1e10, math.inf, 10**400, MAX_WAIT_S * 2, 9.3e9]
"""Longer than any wait can be told: past `threading.TIMEOUT_MAX`, infinite, past a float,
past what `multiprocessing` and `poll` take, past what `Thread.join` takes."""


@pytest.mark.parametrize(
    ("timeout", "seconds"),
    [
        (None, None),
        (0, 0.0),
        (2.5, 2.5),
        (MAX_WAIT_S, MAX_WAIT_S),
        (-1, 0.0),
        (-math.inf, 0.0),
        (math.nan, 0.0),
        *((t, None) for t in TOO_LONG),
    ],
)
def test_the_wait_a_timeout_means(timeout: float | None, seconds: float | None) -> None:
    assert wait_limit(timeout) == seconds
    left = Deadline(timeout).remaining()
    assert left is None if seconds is None else 0.0 <= left <= seconds


def _answer(monitor: RefCheckMonitor, n: int) -> bool:
    return monitor.submit(answer=f"Claim {n} is in Paris.", references=["It is in Paris."])


@pytest.mark.parametrize("timeout", TOO_LONG, ids=str)
@pytest.mark.parametrize("placement", ["thread", "process"])
def test_flush_and_shutdown_with_a_timeout_too_long_to_wait_wait_for_everything(
    timeout: float, placement: str
) -> None:
    sink = ResultSink()
    checker = SlowChecker(0.2) if placement == "thread" else "py:scripted_checkers:KeywordChecker"
    monitor = RefCheckMonitor(
        checker=checker, placement=placement, on_result=sink, exporters=[], batch_size=1
    )
    assert all(_answer(monitor, n) for n in range(3))
    assert monitor.flush(timeout) is True
    assert len(sink.results) == 3
    assert all(_answer(monitor, n) for n in range(3, 5))
    assert monitor.shutdown(timeout) is True
    assert len(sink.results) == 5
    assert monitor.stats.snapshot().get("dropped", {}) == {}


@pytest.mark.parametrize("timeout", [-1.0, -math.inf, math.nan])
def test_a_negative_or_nan_timeout_waits_not_at_all(timeout: float) -> None:
    checker = GatedChecker()
    monitor = RefCheckMonitor(checker=checker, placement="thread", exporters=[])
    try:
        assert _answer(monitor, 0)
        assert checker.entered.wait(30)
        started = time.monotonic()
        assert monitor.flush(timeout) is False  # work is still held: not flushed
        assert time.monotonic() - started < AT_ONCE + SLACK
    finally:
        checker.gate.set()
        assert monitor.shutdown(30)
