"""A program run in a real terminal (tmux, on a server of its own), driven as a person would:
keys sent with `send-keys`, the screen read with `capture-pane`."""

from __future__ import annotations

import shlex
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

DONE = "PROGRAM EXITED WITH"
"""Printed after the program ends, with its exit status (the pane then stays open)."""


class TmuxScreen:
    def __init__(self, command: Sequence[str], cwd: Path, cols: int = 100, rows: int = 30) -> None:
        self.socket = f"refcheck-test-{uuid.uuid4().hex[:10]}"
        line = f"{shlex.join(command)}; echo; echo {DONE} $?; sleep 600"
        self._tmux(
            "new-session", "-d", "-s", "review", "-x", str(cols), "-y", str(rows), "-c",
            str(cwd), line,
        )  # fmt: skip
        self.resize(cols, rows)  # a detached session can start at tmux's default size

    def _tmux(self, *args: str) -> str:
        run = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        assert run.returncode == 0, run.stderr
        return run.stdout

    def send(self, *keys: str) -> None:
        """Keys as tmux names them (`e`, `Down`, `NPage`), one at a time, as typed."""
        for key in keys:
            self._tmux("send-keys", "-t", "review", key)
            time.sleep(0.05)

    def screen(self, escapes: bool = False) -> str:
        """The visible screen; with `escapes`, its attributes as terminal escape sequences."""
        return self._tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "review")

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        """The screen once it shows `text`; fails with the screen as it was otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                size = self._tmux("display", "-p", "-t", "review", "#{pane_width}x#{pane_height}")
                shown = f"the {size.strip()} screen:\n{screen}"
                raise AssertionError(f"{text!r} never appeared; {shown}")
            time.sleep(0.1)

    def resize(self, cols: int, rows: int) -> None:
        self._tmux("resize-window", "-t", "review", "-x", str(cols), "-y", str(rows))

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)
