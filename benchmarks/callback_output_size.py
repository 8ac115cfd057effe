"""The slowest LangChain callback on the app's thread, by the size of what a run is handed or
returns.

The shapes of issue 47 (tests/helpers/callback_timing.py `OUTPUT_SHAPES`): a tool-call answer
whose arguments hold N fields (`with_structured_output`'s shape, LangChain's own tools
parser), an answer of N characters returned in a mapping, a bare tool request of N arguments,
and a chain invoked with a mapping of N fields. For each shape and size, `--runs` runs on a
`RefCheckMonitor` whose (instant, scripted) checker checks every answer, flushed between runs;
reports the median and the largest of each run's slowest callback (the first run of each is a
warm-up, not timed).

    flock /tmp/cpu.lock python benchmarks/callback_output_size.py [--runs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from callback_timing import OUTPUT_SHAPES, TimedHandler, slowest_of_run
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor

SIZES = {
    "tool-call answer": (100, 1_000_000),
    "long answer": (1_000, 50_000_000),
    "bare tool request": (100, 1_000_000),
    "wide input": (100, 1_000_000),
}


def measure(shape: str, size: int, runs: int) -> dict[str, Any]:
    slowest: list[float] = []
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[]) as monitor:
        handler = TimedHandler(monitor)
        for run in range(runs + 1):
            sized = OUTPUT_SHAPES[shape](size)
            gc.collect()
            seconds = slowest_of_run(handler, sized)
            if run:
                slowest.append(seconds)
            monitor.flush(300)
        stats = monitor.stats.snapshot()
    return {
        "shape": shape,
        "size": size,
        "median_ms": statistics.median(slowest) * 1e3,
        "max_ms": max(slowest) * 1e3,
        "stats": stats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = [measure(shape, size, args.runs) for shape, sizes in SIZES.items() for size in sizes]
    print(f"slowest callback on the app's thread per run, {args.runs} runs:")
    for row in rows:
        print(
            f"  {row['shape']:>17} of {row['size']:>10,}: median {row['median_ms']:8.2f} ms, "
            f"max {row['max_ms']:8.2f} ms; counts {row['stats']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
