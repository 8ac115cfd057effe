"""An app whose process ends with work still queued: run as
`python ending_app.py MODE DIR [TIMEOUT]`.

It submits answers to a monitor on a slow checker, prints `accepted N` and `ready`, then:
- `exit`: returns, leaving the atexit hook (`exit_timeout=2`) to finish or count the rest;
- `sigterm`: installs the monitor's signal handlers (over the default action) and waits for
  SIGTERM;
- `app-handler`: as `sigterm`, over a SIGTERM handler of the app's own, which records how many
  results had been delivered when it ran, then lets the app go on and check one more answer;
- `two-monitors`: as `sigterm`, with the answers split between two monitors that each install
  their handlers (the second chains to the first, which chains to the default action).

TIMEOUT (default 2 for `exit`, 1 for the signal modes) is the monitor's `exit_timeout` and
the handlers' timeout; with it given, `exit` and `sigterm` submit 3 answers, not a queue full
(a timeout too long to wait is a wait without end: all 3 are to be delivered).

Every delivered result is appended to DIR/delivered and every count the monitor records to
DIR/counts, each line flushed at once, so the test reads them even after a signal killed us.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from scripted_checkers import SlowChecker

from refcheck_callbacks import CheckResult, RefCheckMonitor, Tally
from refcheck_callbacks.contract.components import Exporter


class CountsFile(Exporter):
    """Writes every count the monitor records, as `tally reason count` lines."""

    name = "counts-file"

    def __init__(self, path: Path) -> None:
        self.file = path.open("a", buffering=1)
        self.lock = threading.Lock()

    def record(self, tally: Tally, reason: str, count: int = 1) -> None:
        with self.lock:
            self.file.write(f"{tally.value} {reason} {count}\n")

    def export(self, results: Sequence[CheckResult]) -> None:
        pass


def main(mode: str, folder: Path, timeout: float | None = None) -> None:
    delivered = (folder / "delivered").open("a", buffering=1)
    lock = threading.Lock()

    def record(result: CheckResult) -> None:
        with lock:
            delivered.write(f"{result.request.request_id} {result.outcome.value}\n")

    count = 3 if timeout is not None else 2048 if mode == "exit" else 500
    monitors = [
        RefCheckMonitor(
            checker=SlowChecker(seconds=0.2),
            on_result=record,
            exporters=[CountsFile(folder / "counts")],
            max_queue=count,
            exit_timeout=2.0 if timeout is None else timeout,
        )
        for _ in range(2 if mode == "two-monitors" else 1)
    ]
    monitor = monitors[0]
    done = threading.Event()
    if mode == "app-handler":

        def app_handler(signum: int, frame: object) -> None:
            with lock:
                seen = sum(1 for _ in (folder / "delivered").open())
            print(f"app handler saw {seen}", flush=True)
            done.set()

        signal.signal(signal.SIGTERM, app_handler)
    if mode != "exit":
        for each in monitors:
            signal_timeout = 30.0 if mode == "app-handler" else 1.0
            each.install_signal_handlers(timeout=signal_timeout if timeout is None else timeout)
    accepted = sum(
        monitors[i % len(monitors)].submit(
            answer=f"Claim {i} is in Paris.", references=["It is in Paris."]
        )
        for i in range(count if mode != "app-handler" else 20)
    )
    print(f"accepted {accepted}", flush=True)
    print("ready", flush=True)
    if mode == "exit":
        return
    while not done.wait(0.05):
        pass
    # The app goes on after its own handler: the monitor still checks.
    after = monitor.check(answer="One more claim is in Paris.", references=["It is in Paris."])
    print(f"after {after.outcome.value}", flush=True)
    monitor.shutdown(5)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else None)
