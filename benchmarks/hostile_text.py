"""Hostile text: how long the app's own threads stall while the monitor checks a hostile request.

Python's regex engine holds the GIL while it runs, so a pattern that is quadratic on some text
stops every thread of the app, not only the monitor's worker (issue 19: a reference of 60,000
dots stopped them for 79.5 s). Here a ticker thread wakes every 10 ms beside one
`monitor.check(...)` of the default monitor (sentence claims, embedded checker); the largest gap
between its ticks, less its 10 ms, is the longest stretch the app could not run. Each request is
a worst case for the text parsers at the input limits (`tests/faults/test_linear_text.py` times
each parser alone), next to a benign request of the same size. Goal: under 100 ms for a
reference of 200,000 dots.

    python benchmarks/hostile_text.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from typing import Any

REFERENCE_CHARS = 200_000
ANSWER_CHARS = 20_000
ANSWER = "The tower is 330 metres tall and opened in 1889."
REFERENCE = "The tower is 330 metres tall. It opened in 1889 in Paris. "


def _sized(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


CASES: list[tuple[str, str, str]] = [
    ("benign reference, 200,000 chars", ANSWER, _sized(REFERENCE, REFERENCE_CHARS)),
    ("reference of 200,000 dots", ANSWER, "." * REFERENCE_CHARS),
    ("reference of 200,000 '!?'", ANSWER, _sized("!?", REFERENCE_CHARS)),
    ("reference of 'a.\\n' lines (no spaces)", ANSWER, _sized("a.\n", REFERENCE_CHARS)),
    ("reference of 200,000 '('", ANSWER, "(" * REFERENCE_CHARS),
    ("reference of 200,000 spaces", ANSWER, " " * (REFERENCE_CHARS - 6) + " and x"),
    ("benign answer, 20,000 chars", _sized(ANSWER + " ", ANSWER_CHARS), REFERENCE),
    ("answer of 20,000 dots", "." * ANSWER_CHARS, REFERENCE),
    (
        "answer of 20,000 spaces, then 'and'",
        "The tower" + " " * (ANSWER_CHARS - 20) + " and x",
        REFERENCE,
    ),
    ("answer of 'a b c; ' clauses", _sized("a b c; ", ANSWER_CHARS), REFERENCE),
]


def largest_gap(run: Callable[[], Any], tick: float = 0.01) -> tuple[float, float, Any]:
    """(largest gap beyond `tick` between two ticks of a thread, wall seconds, run's result)."""
    gap, stop = [0.0], threading.Event()

    def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(tick)
            now = time.perf_counter()
            gap[0] = max(gap[0], now - last - tick)
            last = now

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    time.sleep(10 * tick)
    started = time.perf_counter()
    result = run()
    wall = time.perf_counter() - started
    stop.set()
    thread.join()
    return gap[0], wall, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    from refcheck_callbacks import RefCheckMonitor

    rows = []
    with RefCheckMonitor(exporters=[], placement="thread") as monitor:
        monitor.check(answer=ANSWER, references=[REFERENCE])  # load the model
        for name, answer, reference in CASES:
            gap, wall, result = largest_gap(
                lambda a=answer, r=reference: monitor.check(answer=a, references=[r])
            )
            rows.append(
                {
                    "case": name,
                    "largest_gap_ms": round(gap * 1000, 1),
                    "check_s": round(wall, 3),
                    "outcome": result.outcome.value,
                    "claims": len(result.claims),
                }
            )
            print(
                f"{name:42} largest gap {gap * 1000:7.1f} ms   check {wall:6.2f} s   "
                f"{result.outcome.value}, {len(result.claims)} claims",
                flush=True,
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
