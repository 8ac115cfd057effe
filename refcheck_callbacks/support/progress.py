"""A small progress bar on stderr for long runs (the `refcheck` command, `refcheck bench`).

On a terminal it redraws one line; into a log file or pipe it writes a plain line now and then,
so CI logs show progress without thousands of carriage returns.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Progress:
    """Counts finished items against a known total and shows rate and time left."""

    def __init__(
        self,
        total: int,
        label: str,
        stream: TextIO | None = None,
        enabled: bool = True,
        log_interval: float = 10.0,
    ) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.done = 0
        self._interactive = self.stream.isatty()
        self._log_interval = log_interval
        self._started = time.monotonic()
        self._last_shown = self._started
        self._shown_done = -1

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        interval = 0.1 if self._interactive else self._log_interval
        if now - self._last_shown >= interval:
            self._last_shown = now
            self._show(now)

    def note(self, message: str) -> None:
        """A message on its own line, even while a terminal bar is being redrawn."""
        prefix = "\r\033[K" if self.enabled and self._interactive else ""
        self.stream.write(f"{prefix}{message}\n")
        self.stream.flush()

    def close(self) -> None:
        """Show the final state (unless it is already shown) and end the line."""
        if self._shown_done != self.done:
            self._show(time.monotonic())
        if self.enabled and self._interactive:
            self.stream.write("\n")
            self.stream.flush()

    def line(self, now: float) -> str:
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        share = self.done / self.total if self.total else 1.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        bar = "#" * int(24 * min(share, 1.0))
        return (
            f"{self.label} [{bar:<24}] {self.done}/{self.total} {share:4.0%} "
            f"{rate:.1f}/s elapsed {_duration(elapsed)} left {_duration(left)}"
        )

    def _show(self, now: float) -> None:
        if not self.enabled:
            return
        self._shown_done = self.done
        text = self.line(now)
        self.stream.write(f"\r{text}" if self._interactive else f"{text}\n")
        self.stream.flush()
