"""placement="process" keeps the engine's promises with a real child that can die or hang:
every request is delivered or counted, flush and shutdown keep their timeouts, the app's exit
flushes, a fork gets its own child, and the child never outlives the app."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from child_components import LoopBlockingChecker, MarkedSlowChecker
from deadlines import AT_ONCE, SLACK
from results import ResultSink
from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import (
    CheckingProcessError,
    Outcome,
    Placement,
    RefCheckMonitor,
    StageTimeouts,
    Tally,
)
from refcheck_callbacks.engine.placement.process import InChildProcess

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
REFERENCES = ["The tower stands in Paris."]


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):  # it may exit mid-read
        return False
    return state != "Z"


def _wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _runner(monitor: RefCheckMonitor) -> InChildProcess:
    assert isinstance(monitor.runner, InChildProcess)
    return monitor.runner


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "entered"


@pytest.fixture
def slow_monitor(marker: Path, sink: ResultSink, telemetry: Telemetry) -> Iterator[RefCheckMonitor]:
    """Checks in a child; a batch with a "slow" claim takes 30 s there."""
    monitor = RefCheckMonitor(
        checker=functools.partial(MarkedSlowChecker, str(marker), 30.0),
        placement="process",
        exporters=[telemetry.exporter()],
        on_result=sink,
        batch_size=4,
        max_wait=0.2,
    )
    yield monitor
    monitor.shutdown(timeout=5)


def test_a_child_killed_mid_batch_fails_the_batch_counted_and_the_next_are_checked(
    slow_monitor: RefCheckMonitor, marker: Path, sink: ResultSink, telemetry: Telemetry
) -> None:
    for i in range(4):
        answer = f"The slow answer {i} is in Paris."
        assert slow_monitor.submit(answer=answer, references=REFERENCES)
    assert _wait_for(marker.exists, 60), "the child never took the batch"
    victim = int(marker.read_text())
    assert victim == _runner(slow_monitor).pid
    os.kill(victim, signal.SIGKILL)

    assert slow_monitor.flush(timeout=30)
    assert len(sink.results) == 4
    assert {r.outcome for r in sink.results} == {Outcome.ERROR}
    assert {r.error_type for r in sink.results} == {CheckingProcessError.__name__}
    assert all("SIGKILL" in (r.message or "") for r in sink.results)
    assert {r.placement for r in sink.results} == {Placement.PROCESS}
    responses = telemetry.points("refcheck.responses")
    errors = sum(p.value for key, p in responses.items() if ("refcheck.outcome", "error") in key)
    assert errors == 4, "the exporters count the failed requests"

    after = slow_monitor.check(answer="Quick answer is in Paris.", references=REFERENCES)
    assert after.outcome is Outcome.CHECKED and after.placement is Placement.PROCESS
    assert _runner(slow_monitor).restarts == 1
    assert _runner(slow_monitor).pid not in (None, victim)


def test_flush_and_shutdown_keep_their_timeouts_while_the_child_is_busy(
    slow_monitor: RefCheckMonitor, marker: Path, sink: ResultSink
) -> None:
    accepted = sum(
        slow_monitor.submit(answer=f"The slow answer {i} is in Paris.", references=REFERENCES)
        for i in range(6)
    )
    assert _wait_for(marker.exists, 60)
    child = _runner(slow_monitor).pid
    assert child is not None

    started = time.monotonic()
    assert slow_monitor.flush(timeout=0.5) is False
    assert time.monotonic() - started < 0.5 + SLACK

    started = time.monotonic()
    assert slow_monitor.shutdown(timeout=1.0) is False
    assert time.monotonic() - started < 1.0 + SLACK
    assert _wait_for(lambda: not _alive(child), 5), "shutdown must not leave the child running"
    # Every accepted answer ends delivered (an error: the child was stopped) or counted.
    assert _wait_for(
        lambda: len(sink.results) + slow_monitor.stats.get(Tally.DROPPED) == accepted, 10
    )
    assert all(r.outcome is Outcome.ERROR for r in sink.results)


def test_a_busy_child_leaves_the_queue_bounded_and_submit_refusing_at_once(
    marker: Path, sink: ResultSink
) -> None:
    monitor = RefCheckMonitor(
        checker=functools.partial(MarkedSlowChecker, str(marker), 30.0),
        placement="process",
        exporters=[],
        on_result=sink,
        batch_size=1,
        max_queue=3,
    )
    try:
        assert monitor.submit(answer="The slow one is in Paris.", references=REFERENCES)
        assert _wait_for(marker.exists, 60)
        assert all(
            monitor.submit(answer=f"Queued {i} is in Paris.", references=REFERENCES)
            for i in range(3)
        )
        started = time.monotonic()
        refused = monitor.submit(answer="One too many in Paris.", references=REFERENCES)
        assert refused is False and time.monotonic() - started < AT_ONCE + SLACK
        assert monitor.stats.get(Tally.DROPPED, "queue_full") == 1
        assert monitor.queue_size == 3
    finally:
        monitor.shutdown(timeout=1)


def test_a_hung_child_is_stopped_at_its_deadline_and_replaced(sink: ResultSink) -> None:
    timeouts = StageTimeouts(extract=0.5, check=0.5)
    with RefCheckMonitor(
        checker=LoopBlockingChecker,
        placement="process",
        timeouts=timeouts,
        exporters=[],
        on_result=sink,
    ) as monitor:
        assert monitor.check(answer="Warm is in Paris.", references=REFERENCES).outcome is (
            Outcome.CHECKED
        )
        hung = _runner(monitor).pid
        started = time.monotonic()
        result = monitor.check(answer="We freeze in Paris.", references=REFERENCES)
        waited = time.monotonic() - started
        after = monitor.check(answer="Thawed in Paris.", references=REFERENCES)
    assert result.outcome is Outcome.ERROR
    assert result.error_type == CheckingProcessError.__name__
    assert "did not answer" in (result.message or "")
    # Twice each stage's deadline, plus the margin for the reply: 2 * (0.5 + 0.5) + 5.
    assert 6.5 < waited < 20
    assert after.outcome is Outcome.CHECKED
    assert hung is not None and not _alive(hung)


def test_ten_thousand_submissions_are_each_delivered_once(sink: ResultSink) -> None:
    total = 10_000
    with RefCheckMonitor(
        checker=KeywordChecker,
        placement="process",
        exporters=[],
        on_result=sink,
        max_queue=total,
        batch_size=64,
    ) as monitor:
        accepted = sum(
            monitor.submit(
                answer=f"Answer {i} says the tower is in Paris.",
                references=REFERENCES,
                metadata={"i": i},
            )
            for i in range(total)
        )
        assert monitor.flush(timeout=240)
    assert accepted == total
    keys = [r.request.metadata["i"] for r in sink.results]
    assert sorted(keys) == list(range(total)), "each submission exactly one result"
    assert {r.outcome for r in sink.results} == {Outcome.CHECKED}
    assert {r.placement for r in sink.results} == {Placement.PROCESS}


def _app(mode: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPERS / "process_app.py"), mode, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


def _lines(out: str, word: str) -> list[list[str]]:
    return [line.split()[1:] for line in out.splitlines() if line.split()[:1] == [word]]


FORKS_AT_START = 6
"""Fresh apps forking as their monitor spawns its child: 2 of 5 such forks waited for ever."""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_an_app_forking_while_its_child_spawns_gets_a_working_fork() -> None:
    """Issue 26 (gunicorn's `--preload`): a fork taken while the supervisor thread spawned the
    checking process inherited the locks that thread held (a module's import lock, the
    resource tracker's), and the fork's own first spawn waited for them for ever."""
    for attempt in range(FORKS_AT_START):
        app = _app("fork-at-start")
        out, err = app.communicate(timeout=180)
        assert app.returncode == 0, err
        assert _lines(out, "fork-status") == [["0"]], f"fork {attempt}: {out}{err[-2000:]}"
        assert _lines(out, "fork") == [["checked", "process"]]


def test_the_apps_exit_checks_what_is_queued_then_stops_the_child() -> None:
    app = _app("exit", "200")
    out, err = app.communicate(timeout=180)
    assert app.returncode == 0, err
    assert _lines(out, "result") == [["checked", "process"]] * 200
    [[child]] = _lines(out, "checking")
    assert _wait_for(lambda: not _alive(int(child)), 5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_app_gets_its_own_child_and_leaves_its_parents_alone() -> None:
    app = _app("fork")
    out, err = app.communicate(timeout=180)
    assert app.returncode == 0, err
    [[parent_child]] = _lines(out, "checking")
    [[fork_child]] = _lines(out, "fork-checking")
    assert fork_child != parent_child
    assert _lines(out, "fork") == [["checked", "process"]]
    assert _lines(out, "fork-status") == [["0"]]
    # The fork's exit stopped its own child, not its parent's: the parent checks on with it.
    assert _lines(out, "after") == [["checked", "process"]]
    assert _lines(out, "after-checking") == [[parent_child]]
    assert "Traceback" not in err, err


def test_the_child_does_not_outlive_an_app_that_is_killed() -> None:
    app = _app("orphan")
    assert app.stdout is not None
    lines = []
    while (line := app.stdout.readline()) and line.strip() != "ready":
        lines.append(line)
    [[child]] = _lines("".join(lines), "checking")
    assert _alive(int(child))
    app.kill()
    app.communicate(timeout=30)
    assert _wait_for(lambda: not _alive(int(child)), 10), "the orphaned child must exit"


def test_sigterm_to_the_process_group_lets_the_app_finish_through_its_child(marker: Path) -> None:
    """A service manager or a terminal signals the whole group: the child leaves its end to
    the app, whose handler checks what is in hand through it, then stops it."""
    app = _app("sigterm", str(marker), start_new_session=True)
    assert app.stdout is not None
    assert app.stdout.readline().strip() == "ready"
    assert _wait_for(marker.exists, 60), "the child never took the batch"
    child = marker.read_text()
    os.killpg(app.pid, signal.SIGTERM)
    out, err = app.communicate(timeout=120)
    assert app.returncode == -signal.SIGTERM, err
    assert _lines(out, "result") == [["checked", "process"]] * 4, err
    assert _wait_for(lambda: not _alive(int(child)), 10)


def test_the_apps_process_loads_no_model_when_its_child_checks() -> None:
    app = _app("light")
    out, err = app.communicate(timeout=300)
    assert app.returncode == 0, err
    assert _lines(out, "result") == [["checked", "process"]]
    assert _lines(out, "loaded") == [[]], "torch and the model stay in the child"
