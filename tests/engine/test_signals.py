"""`install_signal_handlers` in the test process itself, on SIGUSR1: what the handler does over
a disposition that does not end the process (the app ignores the signal, or handles it), and
where it may be installed. Handlers over the default action end the process: those are tried
on real app processes in tests/faults/test_process_end.py."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest
from results import ResultSink
from scripted_checkers import SlowChecker

from refcheck_callbacks import RefCheckMonitor, Tally
from refcheck_callbacks.errors import SignalHandlerError

REFERENCES = ["The Eiffel Tower stands in Paris."]

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")


@pytest.fixture
def sigusr1() -> Iterator[None]:
    """SIGUSR1 ignored by the app, restored to what it was after the test."""
    previous = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGUSR1, previous)


def _submit(monitor: RefCheckMonitor, count: int) -> int:
    return sum(
        monitor.submit(answer=f"Claim {i} is in Paris.", references=REFERENCES)
        for i in range(count)
    )


def test_over_an_ignored_signal_the_monitor_flushes_and_the_app_goes_on(
    sigusr1: None, sink: ResultSink
) -> None:
    with RefCheckMonitor(checker=SlowChecker(0.3), on_result=sink, exporters=[]) as monitor:
        monitor.install_signal_handlers([signal.SIGUSR1], timeout=10)
        assert _submit(monitor, 5) == 5
        signal.raise_signal(signal.SIGUSR1)  # the handler runs here, in the main thread
        assert len(sink.results) == 5, "the handler returned before the monitor flushed"
        assert _submit(monitor, 2) == 2, "the monitor shut down on a signal the app ignores"
        assert monitor.flush(10)
    assert len(sink.results) == 7
    assert monitor.stats.get(Tally.DROPPED) == 0


def test_over_the_apps_handler_the_monitor_flushes_then_calls_it(
    sigusr1: None, sink: ResultSink
) -> None:
    seen: list[int] = []
    signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(len(sink.results)))
    with RefCheckMonitor(checker=SlowChecker(0.3), on_result=sink, exporters=[]) as monitor:
        monitor.install_signal_handlers([signal.SIGUSR1], timeout=10)
        assert _submit(monitor, 5) == 5
        signal.raise_signal(signal.SIGUSR1)
        assert seen == [5]


def test_installing_twice_keeps_one_handler(sigusr1: None) -> None:
    with RefCheckMonitor(checker=SlowChecker(0), exporters=[]) as monitor:
        monitor.install_signal_handlers([signal.SIGUSR1])
        installed = signal.getsignal(signal.SIGUSR1)
        monitor.install_signal_handlers([signal.SIGUSR1])
        assert signal.getsignal(signal.SIGUSR1) is installed


def test_installing_from_another_thread_is_refused_with_a_clear_error(sigusr1: None) -> None:
    errors: list[BaseException] = []

    def install() -> None:
        try:
            monitor.install_signal_handlers([signal.SIGUSR1])
        except BaseException as exc:
            errors.append(exc)

    with RefCheckMonitor(checker=SlowChecker(0), exporters=[]) as monitor:
        thread = threading.Thread(target=install)
        thread.start()
        thread.join(10)
    [error] = errors
    assert isinstance(error, SignalHandlerError) and "main thread" in str(error)
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
