"""A callback's time on the app's thread does not grow with what the run is handed or returns.

Issue 47: `on_chain_end` took 520 ms for a tool-call answer whose arguments held 1e6 keys,
202 ms for a 50 MB answer and 101 ms for a bare tool request of 1e6 keys (0.7 ms at baseline):
the handler read the output for its answer field (every field, every text stripped, split and
hashed) on the app's thread. Now it keeps references and the worker reads them. Here real
LangChain chains (a retriever, a prompt, a fake chat model, LangChain's own parsers) run with a
small and a huge payload of each shape, and the slowest callback with the huge one must stay
within 2x of the small one plus 1% of one linear pass over the huge payload (serialising it
once as JSON): ratios, never a number of seconds. Each run still ends as it should: checked
with its answer, or skipped `no_answer` for the tool request.
"""

from __future__ import annotations

import gc
import json
import time

import pytest
from callback_timing import ANSWER, OUTPUT_SHAPES, TimedHandler, slowest_of_run
from results import ResultSink
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor

pytestmark = pytest.mark.timeout(600)

SMALL = {"long answer": 1_000}
"""Characters of the long answer; the other shapes' payloads are fields."""
LARGE = {"long answer": 50_000_000}
SMALL_FIELDS = 100
LARGE_FIELDS = 1_000_000
RUNS = 5
BOUND = 2.0
LINEAR_SHARE = 0.01


def slowest_callback(shape: str, size: int, sink: ResultSink) -> float:
    """The slowest callback of a run of `shape` with a payload of `size`, best of `RUNS`; the
    worker's results checked once it is done."""
    slowest = []
    with RefCheckMonitor(checker=KeywordChecker(), on_result=sink, exporters=[]) as monitor:
        handler = TimedHandler(monitor)
        for _ in range(RUNS):
            run = OUTPUT_SHAPES[shape](size)
            gc.collect()
            slowest.append(slowest_of_run(handler, run))
            assert monitor.flush(300)
        stats = monitor.stats.snapshot()
    if shape == "bare tool request":
        assert sink.results == [] and stats == {"skipped": {"no_answer": RUNS}}
    else:
        assert [r.outcome.value for r in sink.results] == ["checked"] * RUNS
        assert all(r.request.answer.startswith(ANSWER) for r in sink.results)
        assert all(r.request.references for r in sink.results)
    return min(slowest)


def one_linear_pass(payload: object) -> float:
    """Seconds to serialise the payload once as JSON, best of three."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        json.dumps(payload)
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("shape", sorted(OUTPUT_SHAPES))
def test_the_slowest_callback_does_not_grow_with_the_runs_input_or_output(shape: str) -> None:
    small_size = SMALL.get(shape, SMALL_FIELDS)
    large_size = LARGE.get(shape, LARGE_FIELDS)
    small = slowest_callback(shape, small_size, ResultSink())
    large = slowest_callback(shape, large_size, ResultSink())
    linear = one_linear_pass(OUTPUT_SHAPES[shape](large_size).payload)
    assert large <= BOUND * small + LINEAR_SHARE * linear, (
        f"{shape}: slowest callback {large * 1e3:.2f} ms with {large_size:,} against "
        f"{small * 1e3:.2f} ms with {small_size:,} (one linear pass over the large payload: "
        f"{linear * 1e3:.1f} ms): it grows with what the run is handed"
    )
