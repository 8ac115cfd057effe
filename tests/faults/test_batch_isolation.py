"""One pathological request in a batch is timed out alone; its neighbours are checked.

Issue 19: a batch of 16 with one poisoned reference and a check timeout of 5 s ended with all
15 innocent requests `timeout`. Here the poisoned request blocks its thread, spins the CPU,
never returns from an await, or blocks the extractor; in each case the other 15 are checked.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest
from fault_components import (
    MARK,
    NeverReturningChecker,
    SpinningChecker,
    StuckChecker,
    StuckExtractor,
)
from results import ResultSink
from scripted_checkers import KeywordChecker

from refcheck_callbacks import Outcome, RefCheckMonitor, StageTimeouts
from refcheck_callbacks.cli.batch import BatchOptions, BatchRun
from refcheck_callbacks.cli.refchecker_format import Mode
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.extract.sentences import SentenceExtractor

REFERENCES = ["The Eiffel Tower is 330 metres tall. It stands in Paris."]
BATCH = 16


def _batch_with_one_poisoned(monitor: RefCheckMonitor) -> None:
    for index in range(BATCH):
        word = MARK if index == 7 else "Paris"
        assert monitor.submit(
            answer=f"Answer {index} says the tower is in {word}.",
            references=REFERENCES,
            metadata={"index": index},
        )


def _monitor(checker: Checker, sink: ResultSink, **options: object) -> RefCheckMonitor:
    return RefCheckMonitor(
        checker=checker,
        on_result=sink,
        exporters=[],
        batch_size=BATCH,
        max_wait=5.0,  # the 16 form one batch
        timeouts=StageTimeouts(check=1.0, extract=1.0),
        **options,  # type: ignore[arg-type]
    )


def _by_index(sink: ResultSink) -> dict[int, Outcome]:
    return {r.request.metadata["index"]: r.outcome for r in sink.results}


@pytest.fixture
def stuck() -> Iterator[StuckChecker]:
    checker = StuckChecker()
    yield checker
    checker.release.set()


@pytest.mark.parametrize("kind", ["blocked thread", "spinning thread", "never-returning await"])
def test_the_poisoned_request_times_out_alone_and_its_15_neighbours_are_checked(
    kind: str, sink: ResultSink
) -> None:
    checker = {
        "blocked thread": StuckChecker,
        "spinning thread": SpinningChecker,
        "never-returning await": NeverReturningChecker,
    }[kind]()
    monitor = _monitor(checker, sink)
    try:
        _batch_with_one_poisoned(monitor)
        assert monitor.flush(timeout=30)
    finally:
        getattr(checker, "release", threading.Event()).set()
        monitor.shutdown(5)
    outcomes = _by_index(sink)
    assert len(outcomes) == BATCH
    assert outcomes.pop(7) is Outcome.TIMEOUT
    assert set(outcomes.values()) == {Outcome.CHECKED}, outcomes
    [poisoned] = [r for r in sink.results if r.request.metadata["index"] == 7]
    assert "alone" in (poisoned.message or "")
    assert monitor.stats.snapshot()["failed"] == {"TimeoutError": 1}


def test_an_extractor_stuck_on_one_answer_times_out_only_that_answer(sink: ResultSink) -> None:
    extractor = StuckExtractor()
    monitor = RefCheckMonitor(
        extractor=extractor,
        checker=KeywordChecker(),
        on_result=sink,
        exporters=[],
        batch_size=BATCH,
        max_wait=5.0,
        timeouts=StageTimeouts(extract=1.0),
    )
    try:
        _batch_with_one_poisoned(monitor)
        assert monitor.flush(timeout=30)
    finally:
        extractor.release.set()
        monitor.shutdown(5)
    outcomes = _by_index(sink)
    assert outcomes.pop(7) is Outcome.TIMEOUT
    assert set(outcomes.values()) == {Outcome.CHECKED}


def test_calls_abandoned_in_threads_are_counted_and_end_when_their_checker_returns(
    stuck: StuckChecker, sink: ResultSink
) -> None:
    monitor = _monitor(stuck, sink)
    try:
        _batch_with_one_poisoned(monitor)
        assert monitor.flush(timeout=30)
        # The batch's call and the poisoned request's own call are both still blocked.
        assert monitor.abandoned_calls == stuck.stuck == 2
        [poisoned] = [r for r in sink.results if r.outcome is Outcome.TIMEOUT]
        assert "abandoned stage call(s) still running" in (poisoned.message or "")
        stuck.release.set()
        deadline = time.monotonic() + 10
        while monitor.abandoned_calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert monitor.abandoned_calls == 0
    finally:
        monitor.shutdown(5)


def test_the_blocking_pool_bounds_its_threads_and_never_starts_a_call_past_its_deadline() -> None:
    from refcheck_callbacks.support.blocking import BlockingPool

    pool = BlockingPool(max_threads=2, name="test-pool")
    release = threading.Event()
    started: list[int] = []

    def blocked(index: int) -> int:
        started.append(index)
        release.wait(30)
        return index

    async def main() -> list[object]:
        calls = [asyncio.wait_for(pool.run(blocked, i), 0.3) for i in range(6)]
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        outcomes = asyncio.run(main())
        assert all(isinstance(o, asyncio.TimeoutError) for o in outcomes)
        assert pool.threads == 2
        assert sorted(started) == [0, 1], "a call waiting for a thread started past its deadline"
        assert pool.abandoned == 2 and pool.abandoned_total == 2
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while pool.abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.abandoned == 0
    assert asyncio.run(pool.run(lambda: 42)) == 42  # the threads serve again


def _records(path: object, count: int) -> None:
    records = []
    for index in range(count):
        word = MARK if index == 1 else "Paris"
        records.append(
            {
                "question": "Where is the tower?",
                "response": f"Record {index} says the tower is in {word}.",
                "reference": REFERENCES,
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")  # type: ignore[attr-defined]


def test_the_cli_checks_a_good_record_next_to_a_pathological_one(tmp_path, stuck) -> None:
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _records(source, 4)
    run = BatchRun(
        BatchOptions(
            mode=Mode.EXTRACT_CHECK,
            input=source,
            output=output,
            aggregator=Aggregator.SOFT,
            batch_size=4,
            progress=False,
            stage_timeout=1.0,
        ),
        SentenceExtractor(),
        stuck,
    )
    summary = run.run()
    written = sorted(
        json.loads(line)["refcheck"]["index"] for line in output.read_text().splitlines()
    )
    assert written == [0, 2, 3]
    assert [index for index, _ in summary.skipped] == [1]
    assert "timeout" in summary.skipped[0][1]


def test_a_reference_of_200000_dots_leaves_its_batch_neighbours_checked(
    embedded_checker: Checker, sink: ResultSink
) -> None:
    """The issue's worst input at the input limit, on the default pipeline (sentence claims,
    embedded checker). How long the app's threads stall meanwhile is timed in
    benchmarks/pathological_input.py."""
    monitor = RefCheckMonitor(
        checker=embedded_checker, on_result=sink, exporters=[], batch_size=BATCH, max_wait=5.0
    )
    with monitor:
        for index in range(BATCH):
            references = ["." * 200_000] if index == 7 else REFERENCES
            monitor.submit(
                answer=f"Answer {index}: the tower stands in Paris.",
                references=references,
                metadata={"index": index},
            )
        assert monitor.flush(120)
    outcomes = _by_index(sink)
    assert outcomes.pop(7) in (Outcome.CHECKED, Outcome.TIMEOUT)
    assert list(outcomes.values()) == [Outcome.CHECKED] * (BATCH - 1)
