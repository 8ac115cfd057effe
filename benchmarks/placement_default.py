"""Thread against process placement side by side, in one run: what each costs the app.

The default embedded checker and sentence extractor, as `RefCheckMonitor()` gets them:

1. start-up, each trial a fresh interpreter (refcheck imported before the clock starts), the
   placements alternating: how long `RefCheckMonitor(...)` blocks the app; until the monitor
   is ready (the checking process has loaded its components and said so; in a thread the
   components load at the first check, so ready is when that check's result is in); until the
   first result of an answer submitted right after the constructor; the app process's CPU
   over that time and its resident memory after it (the child's beside it);
2. the slowdown of the app's un-instrumented calls while the monitor checks, and the CPU the
   app's background refcheck threads spend per answer: `benchmarks/serve_scaling.py`'s
   measure (rounds alternate a checking monitor with an idle one; the median over round
   pairs of the un-instrumented invokes' median difference).

    flock /tmp/cpu.lock python benchmarks/placement_default.py [--startups 5] [--rounds 12]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PLACEMENTS = ("thread", "process")
ANSWER = "The Eiffel Tower is 330 metres tall. It was completed in 1889."
REFERENCES = ["The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889."]


def _rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1e6


def start_up(placement: str) -> dict[str, float]:
    """One trial, in this (fresh) interpreter: seconds from the constructor's call."""
    from refcheck_callbacks import RefCheckMonitor

    first = threading.Event()
    cpu0, started = time.process_time(), time.perf_counter()
    monitor = RefCheckMonitor(
        placement=placement, exporters=[], on_result=lambda result: first.set()
    )
    constructed = time.perf_counter() - started
    monitor.submit(answer=ANSWER, references=REFERENCES)
    ready = None
    while not first.is_set():
        supervisor = getattr(monitor.runner, "_supervisor", None)
        if ready is None and supervisor is not None and supervisor.ready is not None:
            ready = time.perf_counter() - started
        first.wait(0.005)
    result = time.perf_counter() - started
    out = {
        "constructor_s": constructed,
        "ready_s": result if ready is None else ready,
        "first_result_s": result,
        "app_cpu_s": time.process_time() - cpu0,
        "app_rss_mb": _rss_mb(),
        "child_rss_mb": 0.0
        if getattr(monitor.runner, "pid", None) is None
        else _rss_mb(
            monitor.runner.pid  # type: ignore[attr-defined]
        ),
    }
    monitor.shutdown()
    return out


def start_ups(trials: int) -> dict[str, dict[str, Any]]:
    runs: dict[str, list[dict[str, float]]] = {p: [] for p in PLACEMENTS}
    for trial in range(trials):
        order = PLACEMENTS if trial % 2 == 0 else PLACEMENTS[::-1]
        for placement in order:
            out = subprocess.run(
                [sys.executable, __file__, "--as-startup", placement],
                capture_output=True,
                text=True,
                check=True,
            )
            runs[placement].append(json.loads(out.stdout.splitlines()[-1]))
    return {
        placement: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        | {"trials": rows}
        for placement, rows in runs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--startups", type=int, default=5, help="start-up trials per placement")
    parser.add_argument("--rounds", type=int, default=12, help="slowdown round pairs")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json")
    parser.add_argument("--as-startup", choices=PLACEMENTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_startup:
        print(json.dumps(start_up(args.as_startup)), flush=True)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from serve_scaling import slowdown

    result = {
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "start_up": start_ups(args.startups),
        "app_slowdown": slowdown(None, args.seed, args.rounds, ["in_thread", "process"]),
    }
    print_report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")


def print_report(result: dict[str, Any]) -> None:
    print(f"{result['cpus']} CPUs, load average {result['load_average'][0]:.1f}")
    print("start-up, median over fresh interpreters (seconds from RefCheckMonitor(...)):")
    for placement, row in result["start_up"].items():
        print(
            f"  {placement:<8} constructor {row['constructor_s']:6.2f} s, ready "
            f"{row['ready_s']:6.2f} s, first result {row['first_result_s']:6.2f} s; app CPU "
            f"{row['app_cpu_s']:6.2f} s, app RSS {row['app_rss_mb']:5.0f} MB, child RSS "
            f"{row['child_rss_mb']:5.0f} MB"
        )
    print("while checking: un-instrumented invokes slowed, and background CPU per answer:")
    for name, figures in result["app_slowdown"].items():
        slowed = figures["none_slowed_per_round_us"]
        q1, _, q3 = statistics.quantiles(slowed, n=4)
        print(
            f"  {name:<8} slowed {figures['none_slowed_median_us']:7.1f} us (IQR {q1:.0f}..{q3:.0f}"
            f"); app background CPU {figures['background_cpu_per_answer_us']:7.1f} us/answer; "
            f"checked {figures['checked']}"
        )


if __name__ == "__main__":
    main()
