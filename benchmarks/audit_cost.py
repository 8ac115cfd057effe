"""What the random audit costs the app and the checking worker.

The audit adds nothing to `submit` (the callback path): it draws where results are delivered,
on the monitor's worker thread, and writes on a thread of its own. So three figures:

- callback path: `monitor.submit` with the audit off and at `audit_rate=1`, interleaved call
  by call (the worker checks meanwhile; what it cannot keep up with is dropped and counted):
  median microseconds per call of each, and their ratio;
- worker: answers checked per second through submit -> flush, rounds alternating audit off /
  `audit_rate=1` / `audit_rate=0.01` (the scripted instant checker, so that the engine's own
  cost is what is measured; the embedded checker's tens of milliseconds per answer would hide
  it), median over paired rounds of the ratio to the round without the audit;
- the draw alone (`Audit.draw` per result, microseconds) and one record's write (serialize,
  lock, append, fdatasync: milliseconds, on the audit's thread).

    python benchmarks/audit_cost.py [--rounds 7] [--answers 400] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.engine.audit import Audit
from refcheck_callbacks.engine.audit_file import AuditFile

REFERENCES = [{"id": "doc", "text": "The Eiffel Tower is 330 metres tall. It stands in Paris."}]
ANSWER = "The tower is supported by the record. The tower is contradicted by the record."


def _monitor(folder: Path, rate: float | None) -> RefCheckMonitor:
    audit = {} if rate is None else {"audit_rate": rate, "audit_file": folder / f"{rate}.jsonl"}
    return RefCheckMonitor(
        checker=KeywordChecker(),
        placement="thread",
        conflict=None,
        exporters=[],
        max_queue=100_000,
        **audit,  # type: ignore[arg-type]
    )


def _throughput(monitor: RefCheckMonitor, answers: int) -> float:
    start = time.perf_counter()
    for n in range(answers):
        monitor.submit(answer=f"{ANSWER} Number {n}.", references=REFERENCES)
    assert monitor.flush(120)
    return answers / (time.perf_counter() - start)


def _submit_us(off: RefCheckMonitor, on: RefCheckMonitor, calls: int) -> tuple[float, float]:
    times: dict[int, list[float]] = {0: [], 1: []}
    for n in range(calls):
        for which, monitor in ((n % 2, (off, on)[n % 2]), (1 - n % 2, (off, on)[1 - n % 2])):
            start = time.perf_counter()
            monitor.submit(answer=ANSWER, references=REFERENCES)
            times[which].append(time.perf_counter() - start)
    return statistics.median(times[0]) * 1e6, statistics.median(times[1]) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--answers", type=int, default=400)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="audit-cost-"))
    rates = (None, 1.0, 0.01)
    monitors = {rate: _monitor(folder, rate) for rate in rates}
    for monitor in monitors.values():
        _throughput(monitor, 50)  # warm-up
    ratios: dict[float, list[float]] = {1.0: [], 0.01: []}
    per_second: dict[float | None, list[float]] = {rate: [] for rate in rates}
    for round_number in range(args.rounds):
        order = rates if round_number % 2 == 0 else tuple(reversed(rates))
        measured = {rate: _throughput(monitors[rate], args.answers) for rate in order}
        for rate in rates:
            per_second[rate].append(measured[rate])
        for rate in ratios:
            ratios[rate].append(measured[rate] / measured[None])
    submit_off, submit_on = _submit_us(monitors[None], monitors[1.0], 4000)
    for monitor in monitors.values():
        monitor.flush(120)
    results = [monitors[1.0].check(answer=ANSWER, references=REFERENCES) for _ in range(200)]
    audit = Audit(0.0, AuditFile(folder / "draw.jsonl"), lambda reason: None)
    start = time.perf_counter()
    for _ in range(50):
        audit.draw(results)
    draw_us = (time.perf_counter() - start) / (50 * len(results)) * 1e6
    file = AuditFile(folder / "write.jsonl")
    start = time.perf_counter()
    for result in results:
        file.append(result, None, "2026-01-01T00:00:00+00:00")
    write_ms = (time.perf_counter() - start) / len(results) * 1e3
    stats = monitors[1.0].stats.snapshot()
    for monitor in monitors.values():
        monitor.shutdown()
    figures = {
        "submit_us_audit_off": round(submit_off, 2),
        "submit_us_audit_on": round(submit_on, 2),
        "submit_ratio": round(submit_on / submit_off, 3),
        "answers_per_second": {str(r): round(statistics.median(v)) for r, v in per_second.items()},
        "worker_ratio_rate_1": round(statistics.median(ratios[1.0]), 3),
        "worker_ratio_rate_0.01": round(statistics.median(ratios[0.01]), 3),
        "draw_us_per_result": round(draw_us, 3),
        "write_ms_per_record": round(write_ms, 3),
        "audited_at_rate_1": stats.get("audited", {}),
    }
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
