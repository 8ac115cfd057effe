"""The process ends with work queued: interpreter exit and SIGTERM stay bounded and counted.

Issue 19: at interpreter exit with `exit_timeout=5`, exit took 10.2 s and 1,728 accepted
answers were lost uncounted; on SIGTERM 420 of 500 were lost uncounted. Here a real app process
(`tests/helpers/ending_app.py`) ends with a slow checker's queue full; every accepted answer
must be in its delivered file or counted dropped in its counts file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

HELPERS = Path(__file__).parents[1] / "helpers"
SLACK = 3.0
"""Seconds for a loaded machine's process teardown on top of the bound under test."""

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGTERM"), reason="POSIX signals")


def _start(mode: str, folder: Path, *timeout: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HELPERS), *sys.path])}
    app = subprocess.Popen(
        [sys.executable, str(HELPERS / "ending_app.py"), mode, str(folder), *timeout],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert app.stdout is not None
    accepted = int(app.stdout.readline().split()[1])
    assert app.stdout.readline().strip() == "ready"
    return app, accepted


def _delivered(folder: Path) -> int:
    path = folder / "delivered"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _dropped(folder: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    path = folder / "counts"
    for line in path.read_text().splitlines() if path.exists() else []:
        tally, reason, count = line.split()
        if tally == "dropped":
            counts[reason] += int(count)
    return counts


def test_interpreter_exit_keeps_exit_timeout_and_counts_what_is_left(tmp_path: Path) -> None:
    app, accepted = _start("exit", tmp_path)
    started = time.monotonic()
    _, stderr = app.communicate(timeout=120)
    elapsed = time.monotonic() - started
    assert app.returncode == 0, stderr
    assert elapsed < 2.0 + SLACK, f"exit took {elapsed:.1f}s with exit_timeout=2"
    dropped = _dropped(tmp_path)
    assert dropped["exit"] > 0
    assert _delivered(tmp_path) + dropped["exit"] == accepted == 2048


@pytest.mark.parametrize(("mode", "handlers"), [("sigterm", 1), ("two-monitors", 2)])
def test_sigterm_flushes_within_its_bound_counts_the_rest_and_ends_the_process(
    mode: str, handlers: int, tmp_path: Path
) -> None:
    """With two monitors, the second one's handler chains to the first one's, not to the
    default action: it must still shut down and count, as the chain ends the process."""
    app, accepted = _start(mode, tmp_path)
    time.sleep(0.5)
    started = time.monotonic()
    app.send_signal(signal.SIGTERM)
    _, stderr = app.communicate(timeout=60)
    elapsed = time.monotonic() - started
    assert app.returncode == -signal.SIGTERM, stderr  # the default action, chained to
    bound = handlers * 1.0
    assert elapsed < bound + SLACK, f"the SIGTERM handlers took {elapsed:.1f}s, bound {bound}s"
    dropped = _dropped(tmp_path)
    assert dropped["signal"] > 0
    assert _delivered(tmp_path) + dropped["signal"] == accepted == 500


def test_sigterm_over_the_apps_own_handler_flushes_first_then_the_app_goes_on(
    tmp_path: Path,
) -> None:
    app, accepted = _start("app-handler", tmp_path)
    app.send_signal(signal.SIGTERM)
    stdout, stderr = app.communicate(timeout=60)
    assert app.returncode == 0, stderr
    assert f"app handler saw {accepted}" in stdout, stdout  # flushed before chaining
    assert "after checked" in stdout
    assert not _dropped(tmp_path)


@pytest.mark.parametrize("timeout", ["1e10", "inf"])
@pytest.mark.parametrize("mode", ["exit", "sigterm"])
def test_a_timeout_too_long_to_wait_delivers_everything_at_exit(
    mode: str, timeout: str, tmp_path: Path
) -> None:
    """Issue 47: with `exit_timeout=1e10`, 0 of 3 results were delivered at exit and a
    traceback was printed (`threading` cannot wait that long). It is a wait without end."""
    app, accepted = _start(mode, tmp_path, timeout)
    if mode == "sigterm":
        app.send_signal(signal.SIGTERM)
    _, stderr = app.communicate(timeout=60)
    assert app.returncode == (0 if mode == "exit" else -signal.SIGTERM), stderr
    assert "Traceback" not in stderr and "OverflowError" not in stderr, stderr
    assert _delivered(tmp_path) == accepted == 3
    assert not _dropped(tmp_path)
