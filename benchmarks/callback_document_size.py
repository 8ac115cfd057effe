"""The slowest LangChain callback on the app's thread, by the size of the documents.

The app shape of issue 26: a hand-written step, `docs = retriever.invoke(q)` as one root run,
then `prompt | fake chat model | parser` on the documents as a second one, so that the second
run's answer is paired with the first run's (parked) documents. For each size, `--runs` steps
on a `RefCheckMonitor` whose (instant, scripted) checker checks every answer; the monitor is
flushed between steps, so that the figure is the callbacks' own time, not the worker's GIL
share. Reports, per size, the median and the largest over the runs of each step's slowest
`on_chain_end` and of its slowest callback of any kind (the largest `--runs` step of a size
runs first and is not timed: a warm-up).

    flock /tmp/cpu.lock python benchmarks/callback_document_size.py [--runs 7] [--json out.json]
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

from callback_timing import TimedHandler, hand_written_step, sized_documents
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor

SIZES = ((5, 1_000), (20, 50_000), (5, 1_000_000), (5, 5_000_000))
"""(documents, characters each): the sizes issue 26 measured."""
QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 330 metres tall."


def measure(count: int, size: int, runs: int) -> dict[str, Any]:
    documents = sized_documents(count, size)
    chain_ends: list[float] = []
    slowest: list[float] = []
    results: list[Any] = []
    with RefCheckMonitor(
        checker=KeywordChecker(), exporters=[], on_result=results.append
    ) as monitor:
        handler = TimedHandler(monitor)
        for run in range(runs + 1):
            gc.collect()
            hand_written_step(handler, documents, QUESTION, ANSWER)
            if run:
                chain_ends.append(max(handler.seconds["on_chain_end"]))
                slowest.append(handler.slowest()[1])
            monitor.flush(300)

    def ms(values: list[float]) -> dict[str, float]:
        return {"median_ms": statistics.median(values) * 1e3, "max_ms": max(values) * 1e3}

    return {
        "documents": count,
        "characters": size,
        "on_chain_end": ms(chain_ends),
        "any_callback": ms(slowest),
        "stats": monitor.stats.snapshot(),
        "checked": sum(r.outcome.value == "checked" for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = [measure(count, size, args.runs) for count, size in SIZES]
    print(f"slowest callback on the app's thread per hand-written step, {args.runs} steps:")
    for row in rows:
        end, any_ = row["on_chain_end"], row["any_callback"]
        print(
            f"  {row['documents']:>2} x {row['characters']:>9,} chars: on_chain_end median "
            f"{end['median_ms']:9.2f} ms, max {end['max_ms']:9.2f} ms; any callback median "
            f"{any_['median_ms']:9.2f} ms, max {any_['max_ms']:9.2f} ms; checked {row['checked']}, "
            f"counts {row['stats']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
