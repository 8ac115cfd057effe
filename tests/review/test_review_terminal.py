"""`refcheck review` in a real terminal (tmux), as a person uses it, on an audit file a real
monitor wrote: labels with keys, goes back, skips, quits, resumes where it stopped; bad
lines, huge texts and a resized terminal."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tmux_screen import DONE, TmuxScreen

from refcheck_callbacks.bench.labelled_records import read_labelled_records
from refcheck_callbacks.engine.audit_file import encoded

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ROOT / "tests" / "helpers"
HIGHLIGHT = "\x1b[1;7m"
"""Bold reverse video, as tmux writes it: the evidence span."""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def monitored_audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The audit file of an app whose monitor drew every answer (three answers, four claims)."""
    path = tmp_path_factory.mktemp("app") / "audit.jsonl"
    run = subprocess.run(
        [sys.executable, str(HELPERS / "audit_app.py"), str(path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "'written': 3" in run.stdout
    return path


@pytest.fixture
def audit(monitored_audit: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "audit.jsonl"
    shutil.copyfile(monitored_audit, copy)
    return copy


@pytest.fixture
def review(tmp_path: Path) -> Iterator[list[TmuxScreen]]:
    """Screens opened by the test, closed after it."""
    screens: list[TmuxScreen] = []
    yield screens
    for screen in screens:
        screen.close()


def _open(screens: list[TmuxScreen], path: Path, cols: int = 100, rows: int = 30) -> TmuxScreen:
    command = [sys.executable, "-m", "refcheck_callbacks.cli", "review", str(path)]
    screen = TmuxScreen(command, ROOT, cols, rows)
    screens.append(screen)
    return screen


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_label_go_back_skip_quit_and_resume(audit: Path, review: list[TmuxScreen]) -> None:
    screen = _open(review, audit)
    first = screen.wait_for("claim 1 of 4  (0 labelled)")
    assert "Question: How tall is the Eiffel Tower?" in first
    assert "The Eiffel Tower is 330 metres tall." in first
    assert "Checker: Entailment" in first and "Your label: none yet" in first
    assert "[1] eiffel: The Eiffel Tower is 330 metres tall." in first
    assert "e Entailment  n Neutral  c Contradiction  s skip  b back  q quit" in first
    evidence = screen.screen(escapes=True).split("Evidence, in reference [1] eiffel:")[1]
    assert HIGHLIGHT in evidence.split("References:")[0]

    screen.send("e")
    second = screen.wait_for("claim 2 of 4  (1 labelled)")
    assert "The Eiffel Tower was completed in 1925." in second
    assert "claim 1: Entailment, saved" in second
    screen.send("c")
    screen.wait_for("claim 3 of 4  (2 labelled)")
    screen.send("b")
    back = screen.wait_for("claim 2 of 4  (2 labelled)")
    assert "Your label: Contradiction" in back
    screen.send("n")  # changes their mind: Neutral; then on to the next without a label
    screen.wait_for("claim 3 of 4  (2 labelled)")
    screen.send("s")
    screen.wait_for("claim 4 of 4  (2 labelled)")
    screen.send("q")
    screen.wait_for(f"{DONE} 0")
    assert "refcheck: 2 of 4 claims labelled" in screen.screen()

    labels = [record["labels"] for record in _records(audit)]
    assert labels == [["Entailment"], ["Neutral"], [None, None]]
    assert all(record["audit"] is True for record in _records(audit))
    assert len(read_labelled_records(audit).examples) == 2  # what `refcheck calibrate` reads

    again = _open(review, audit)
    resumed = again.wait_for("claim 3 of 4  (2 labelled)")  # the first claim with no label
    assert "Tell me about the Louvre." in resumed
    again.send("e")
    again.wait_for("claim 4 of 4  (3 labelled)")
    again.send("3")
    assert "All 4 claims are labelled." in again.wait_for("end  (4 labelled)")
    again.send("q")
    again.wait_for(f"{DONE} 0")
    labels = [record["labels"] for record in _records(audit)]
    assert labels == [["Entailment"], ["Neutral"], ["Entailment", "Contradiction"]]


def test_bad_lines_are_counted_shown_and_kept_as_they_were(
    audit: Path, review: list[TmuxScreen]
) -> None:
    good = audit.read_bytes().splitlines(keepends=True)
    bad = [b"\xff\xfe not utf-8 \x80\n", b"{not json\n", b"[1, 2]\n"]
    audit.write_bytes(good[0] + bad[0] + good[1] + bad[1] + bad[2] + good[2])
    screen = _open(review, audit)
    first = screen.wait_for("claim 1 of 4")
    assert "3 lines cannot be reviewed and are kept as they are (first: line 2: not UTF-8" in (
        first
    )
    screen.send("e", "n", "c", "e")
    screen.wait_for("All 4 claims are labelled.")
    screen.send("q")
    screen.wait_for(f"{DONE} 0")
    lines = audit.read_bytes().splitlines(keepends=True)
    assert [lines[1], lines[3], lines[4]] == bad
    labelled = [json.loads(lines[i]) for i in (0, 2, 5)]
    expected = [["Entailment"], ["Neutral"], ["Contradiction", "Entailment"]]
    assert [r["labels"] for r in labelled] == expected


def test_a_huge_reference_is_cut_around_its_evidence_and_the_screen_follows_a_resize(
    audit: Path, review: list[TmuxScreen]
) -> None:
    [record, *_] = _records(audit)
    filler = "Nothing to see here. " * 50_000
    evidence = "The tower is \x1b[31m330 metres\x1b[0m tall."
    record["references"] = [{"id": "huge", "text": filler + evidence + filler}]
    record["evidence"] = [{"reference_index": 0, "start": len(filler), "end": len(filler) + 40}]
    audit.write_bytes(encoded(record))
    screen = _open(review, audit)
    first = screen.wait_for("more characters not shown]")
    assert "The tower is ?[31m330 metres?[0m tall." in first  # no escape reaches the terminal
    assert "more lines below" in first
    screen.send("NPage")
    scrolled = screen.wait_for("[1] huge: Nothing to see here.")
    assert "Question:" not in scrolled

    screen.resize(50, 14)
    narrow = screen.wait_for("claim 1 of 1")
    assert max(len(line) for line in narrow.splitlines()) <= 50
    screen.resize(20, 5)
    small = " ".join(screen.wait_for("Make the").split())
    assert "Make the terminal at least 30x8." in small
    screen.resize(100, 30)
    screen.wait_for("e Entailment  n Neutral")
    screen.send("n")
    screen.wait_for("All 1 claims are labelled.")
    screen.send("q")
    screen.wait_for(f"{DONE} 0")
    assert _records(audit)[0]["labels"] == ["Neutral"]


def test_a_draw_the_monitor_appends_meanwhile_is_kept_and_reviewed(
    audit: Path, review: list[TmuxScreen]
) -> None:
    """The app goes on drawing while a person labels: the save takes the new record in."""
    records = _records(audit)
    audit.write_bytes(encoded(records[0]))
    screen = _open(review, audit)
    screen.wait_for("claim 1 of 1")
    with audit.open("ab") as app:
        app.write(encoded(records[1]))
    screen.send("e")
    screen.wait_for("claim 2 of 2  (1 labelled)")
    screen.send("c", "q")
    screen.wait_for(f"{DONE} 0")
    assert [r["labels"] for r in _records(audit)] == [["Entailment"], ["Contradiction"]]


@pytest.mark.parametrize(
    ("content", "message", "status"),
    [
        (b"", "has no claims to label", 0),
        (b"\xff\xfe\n{}\n", "has no claims to label", 0),
        (None, "no audit file at", 2),
    ],
)
def test_a_file_with_nothing_to_label_says_so(
    tmp_path: Path, content: bytes | None, message: str, status: int
) -> None:
    path = tmp_path / "audit.jsonl"
    if content is not None:
        path.write_bytes(content)
    run = subprocess.run(
        [sys.executable, "-m", "refcheck_callbacks.cli", "review", str(path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert (run.returncode, message in run.stderr) == (status, True), run.stderr
    if content:
        assert path.read_bytes() == content


def test_without_a_terminal_it_says_what_to_do(audit: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "refcheck_callbacks.cli", "review", str(audit)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 2 and "refcheck review needs a terminal" in run.stderr
