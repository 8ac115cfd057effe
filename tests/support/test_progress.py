"""The progress bar: quiet in logs, complete at the end, never in the way of messages."""

from __future__ import annotations

import io

from refcheck_callbacks.support.progress import Progress


def test_a_log_gets_the_final_state_once() -> None:
    stream = io.StringIO()
    progress = Progress(50, "check", stream, log_interval=3600)
    for _ in range(50):
        progress.advance()
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("check [########################] 50/50 100%")


def test_a_log_gets_a_line_per_interval_and_notes_on_their_own_lines() -> None:
    stream = io.StringIO()
    progress = Progress(4, "extract", stream, log_interval=0)
    progress.advance(2)
    progress.note("refcheck: record 2 skipped: why")
    progress.advance(2)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert [line.split("]")[1].split()[0] for line in (lines[0], lines[2])] == ["2/4", "4/4"]
    assert lines[1] == "refcheck: record 2 skipped: why"
    assert len(lines) == 3, "close() does not repeat a state already shown"


def test_disabled_progress_still_shows_notes() -> None:
    stream = io.StringIO()
    progress = Progress(1, "check", stream, enabled=False)
    progress.advance()
    progress.note("skipped")
    progress.close()
    assert stream.getvalue() == "skipped\n"
