"""Issue 19's engine faults, each measured as the issue measured it, on this checkout or on
another one (`--before PATH`, a folder holding an older `refcheck_callbacks`), side by side.

Each case runs in a process of its own with a wall-clock cap: code that does not keep its
deadline is reported as still blocked at the cap, not waited for. The cases:
- shutdown_full_queue: `shutdown(timeout=2)` with 2,048 queued on a slow checker;
- interpreter_exit: an app returns with 2,048 queued (`exit_timeout=2`);
- sigterm: an app with 500 queued gets SIGTERM (handlers installed where the API has them);
- checker_cancelled_error: a batch of 11 whose checker raises `asyncio.CancelledError`;
- hook_system_exit: an `on_result` hook raising `SystemExit`, then more submits and a check;
- redact_raises: `capture_content=True` and a `redact` that raises, exported to the real SDK;
- poisoned_batch: 16 answers in one batch, one of which blocks the checker's thread (check
  timeout 2 s);
- otlp_closed_port / otlp_black_hole: `flush(timeout=2)` with the real OTLP/HTTP exporters;
- huge_model_name: a 10 MB `model` with content capture off: the longest exported string;
- llm_refused: an LLM judge on a closed port: the result's kind and `monitor.stats`.
Every "uncounted" figure is accepted - delivered - counted dropped.

    python benchmarks/fault_figures.py [--before PATH] [--json FILE]

Measured on 2 shared cores, before = 65e7610 (the commit before the engine half of issue 19):
shutdown(2) with 2,048 queued 4.0 s -> 2.0 s, uncounted 496 -> 0; exit (exit_timeout=2)
4.1 s -> 2.1 s, uncounted 1,744 -> 0; SIGTERM uncounted 468 of 500 -> 0 (1.0 s handler);
CancelledError checker 0 of 11 results -> 11, counted in stats; SystemExit hook 1 of 6
delivered and check() raising -> 6 of 6 and checked; failing redact 8 raw-email attributes
-> 0; poisoned batch 0 of 15 neighbours checked -> 15 (4.0 s, twice the 2 s check timeout);
flush(2) to an OTLP closed port 7.2 s True -> 2.0 s False, to a black hole 10.1 s True ->
2.0 s False; a 10 MB model name exported at 10,000,000 characters -> 256.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
CAP = 30.0
"""Seconds a case may run before it is reported as still blocked."""
REFERENCES = ["The Eiffel Tower stands in Paris."]
EMAIL = "jane.doe@example.com"
MARK = "pathological"


def _components() -> tuple[type, type]:
    """A checker that sleeps per batch (awaiting) and one that blocks its thread on a marked
    claim; built here so that they run on whichever package the case imports."""
    from refcheck_callbacks import Label, Verdict
    from refcheck_callbacks.check.base import SyncChecker

    class Slow(SyncChecker):
        name = "slow"

        def __init__(self, seconds: float) -> None:
            self.seconds = seconds

        def check_batch(self, items: Sequence[Any]) -> list[Any]:
            if any(MARK in item.claim.text for item in items):
                time.sleep(60)
            time.sleep(self.seconds)
            return [Verdict(label=Label.ENTAILMENT, confidence=1.0) for _ in items]

    class Raising(Slow):
        name = "raising"

        async def check(self, items: Sequence[Any]) -> list[Any]:
            raise asyncio.CancelledError

    return Slow, Raising


def _counting_exporter(path: Path) -> Any:
    """An exporter that writes every count the monitor records, line by line (read after the
    process ended, even by a signal)."""
    from refcheck_callbacks.contract.components import Exporter

    class Counts(Exporter):
        name = "counts"

        def __init__(self) -> None:
            self.file = path.open("a", buffering=1)

        def record(self, tally: Any, reason: str, count: int = 1) -> None:
            self.file.write(f"{getattr(tally, 'value', tally)} {reason} {count}\n")

        def export(self, results: Sequence[Any]) -> None:
            pass

    return Counts()


def _dropped(path: Path) -> int:
    lines = path.read_text().split("\n") if path.exists() else []
    return sum(int(n) for t, r, n in (line.split() for line in lines if line) if t == "dropped")


def _lost(stats: dict[str, dict[str, int]]) -> int:
    return sum(n for reason, n in stats.get("dropped", {}).items() if reason != "queue_full")


def _submit(monitor: Any, count: int, word: str = "Paris") -> int:
    return sum(
        monitor.submit(answer=f"Claim {i} is in {word}.", references=REFERENCES)
        for i in range(count)
    )


def shutdown_full_queue() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor

    slow, _ = _components()
    results: list[Any] = []
    monitor = RefCheckMonitor(checker=slow(0.05), on_result=results.append, exporters=[])
    accepted = _submit(monitor, 2048)
    started = time.monotonic()
    monitor.shutdown(timeout=2)
    elapsed = time.monotonic() - started
    time.sleep(1.0)
    counted = _lost(monitor.stats.snapshot())
    return {
        "shutdown_s": round(elapsed, 2),
        "accepted": accepted,
        "delivered": len(results),
        "counted": counted,
        "uncounted": accepted - len(results) - counted,
    }


def _app(mode: str, folder: Path) -> None:
    """The app process of interpreter_exit and sigterm."""
    from refcheck_callbacks import RefCheckMonitor

    slow, _ = _components()
    delivered = (folder / "delivered").open("a", buffering=1)
    count = 2048 if mode == "exit" else 500
    monitor = RefCheckMonitor(
        checker=slow(0.2),
        on_result=lambda result: delivered.write("x\n"),
        exporters=[_counting_exporter(folder / "counts")],
        max_queue=count,
        exit_timeout=2.0,
    )
    if mode == "sigterm" and hasattr(monitor, "install_signal_handlers"):
        monitor.install_signal_handlers(timeout=1.0)
    print(_submit(monitor, count), flush=True)
    if mode == "sigterm":
        threading.Event().wait()


def _app_case(mode: str, folder: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    app = subprocess.Popen(
        [sys.executable, str(HERE), "--app", mode, str(folder)], stdout=subprocess.PIPE, env=env
    )
    assert app.stdout is not None
    accepted = int(app.stdout.readline())
    if mode == "sigterm":
        time.sleep(0.5)
        app.send_signal(signal.SIGTERM)
    started = time.monotonic()
    app.wait(CAP)
    elapsed = time.monotonic() - started
    path = folder / "delivered"
    delivered = len(path.read_text().splitlines()) if path.exists() else 0
    counted = _dropped(folder / "counts")
    return {
        "seconds_to_end": round(elapsed, 2),
        "returncode": app.returncode,
        "accepted": accepted,
        "delivered": delivered,
        "counted": counted,
        "uncounted": accepted - delivered - counted,
    }


def interpreter_exit(folder: Path) -> dict[str, Any]:
    return _app_case("exit", folder)


def sigterm(folder: Path) -> dict[str, Any]:
    return _app_case("sigterm", folder)


def checker_cancelled_error() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor

    _, raising = _components()
    results: list[Any] = []
    monitor = RefCheckMonitor(
        checker=raising(0), on_result=results.append, exporters=[], batch_size=11, max_wait=2.0
    )
    accepted = _submit(monitor, 11)
    flushed = monitor.flush(5)
    outcome = {
        "accepted": accepted,
        "results": len(results),
        "flush_returned": flushed,
        "stats": monitor.stats.snapshot(),
    }
    monitor.shutdown(2)
    return outcome


def hook_system_exit() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor

    slow, _ = _components()
    results: list[Any] = []

    def exiting(result: Any) -> None:
        results.append(result)
        raise SystemExit(1)

    monitor = RefCheckMonitor(checker=slow(0), on_result=exiting, exporters=[])
    first = _submit(monitor, 3)
    monitor.flush(5)
    later = _submit(monitor, 3)
    monitor.flush(5)
    delivered = len(results)
    try:
        check = monitor.check(answer="It is in Paris.", references=REFERENCES).outcome.value
    except BaseException as exc:
        check = f"raised {exc!r}"
    monitor.shutdown(2)
    return {"accepted": first + later, "delivered": delivered, "check()": check}


def _in_memory_otel(capture_content: bool) -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return OpenTelemetryExporter(provider, capture_content=capture_content), spans


def _span_strings(spans: Any) -> list[str]:
    values = [v for span in spans.get_finished_spans() for v in (span.attributes or {}).values()]
    flat = [v for value in values for v in (value if isinstance(value, tuple) else [value])]
    return [v for v in flat if isinstance(v, str)]


def redact_raises() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor

    slow, _ = _components()
    exporter, spans = _in_memory_otel(capture_content=True)

    def redact(text: str) -> str:
        raise TimeoutError("the PII service timed out")

    with RefCheckMonitor(
        checker=slow(0), capture_content=True, redact=redact, exporters=[exporter]
    ) as monitor:
        for _ in range(4):
            monitor.submit(
                question=f"What did {EMAIL} order?",
                answer=f"The customer {EMAIL} ordered a bicycle.",
                references=[f"Order by {EMAIL}: a bicycle."],
            )
        monitor.flush(5)
    strings = _span_strings(spans)
    return {
        "exported_strings": len(strings),
        "carrying_the_raw_email": sum(EMAIL in s for s in strings),
    }


def poisoned_batch() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor, StageTimeouts

    slow, _ = _components()
    results: list[Any] = []
    monitor = RefCheckMonitor(
        checker=slow(0),
        on_result=results.append,
        exporters=[],
        batch_size=16,
        max_wait=5.0,
        timeouts=StageTimeouts(check=2.0),
    )
    started = time.monotonic()
    for index in range(16):
        word = MARK if index == 7 else "Paris"
        monitor.submit(answer=f"Answer {index} is in {word}.", references=REFERENCES)
    monitor.flush(CAP)
    elapsed = time.monotonic() - started
    neighbours = [r.outcome.value for r in results if MARK not in r.request.answer]
    return {
        "seconds": round(elapsed, 2),
        "neighbours_checked": neighbours.count("checked"),
        "neighbours_timeout": neighbours.count("timeout"),
    }


def _otlp_flush(endpoint: str) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from refcheck_callbacks import RefCheckMonitor
    from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

    slow, _ = _components()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces")))
    monitor = RefCheckMonitor(checker=slow(0), exporters=[OpenTelemetryExporter(provider)])
    _submit(monitor, 20)
    started = time.monotonic()
    flushed = monitor.flush(timeout=2)
    return {"flush_s": round(time.monotonic() - started, 2), "flush_returned": flushed}


def otlp_closed_port() -> dict[str, Any]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return _otlp_flush(f"http://127.0.0.1:{port}")


def otlp_black_hole() -> dict[str, Any]:
    """A listener whose backlog completes connections that nobody ever reads or answers."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    return _otlp_flush(f"http://127.0.0.1:{hole.getsockname()[1]}")


def huge_model_name() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor

    slow, _ = _components()
    exporter, spans = _in_memory_otel(capture_content=False)
    with RefCheckMonitor(checker=slow(0), exporters=[exporter]) as monitor:
        monitor.submit(answer="It is in Paris.", references=REFERENCES, model="m" * 10_000_000)
        monitor.flush(10)
    return {"longest_exported_string": max(map(len, _span_strings(spans)))}


def llm_refused() -> dict[str, Any]:
    from refcheck_callbacks import RefCheckMonitor
    from refcheck_callbacks.check.judge.checker import LLMChecker
    from refcheck_callbacks.llm.client import LLMClient

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = LLMClient("openai/m", f"http://127.0.0.1:{port}/v1", "k", deadline=2.0)
    with RefCheckMonitor(checker=LLMChecker(client), exporters=[]) as monitor:
        monitor.submit(answer="The Louvre opened in 1790.", references=["It opened in 1793."])
        monitor.flush(10)
    return {"stats": monitor.stats.snapshot()}


CASES: dict[str, Callable[..., dict[str, Any]]] = {
    case.__name__: case
    for case in (
        shutdown_full_queue,
        interpreter_exit,
        sigterm,
        checker_cancelled_error,
        hook_system_exit,
        redact_raises,
        poisoned_batch,
        otlp_closed_port,
        otlp_black_hole,
        huge_model_name,
        llm_refused,
    )
}


def _run_case(name: str, package_root: Path) -> dict[str, Any]:
    """One case in a fresh process importing `refcheck_callbacks` from `package_root`."""
    env = {**os.environ, "PYTHONPATH": str(package_root), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(HERE), "--case", name],
            capture_output=True,
            text=True,
            env=env,
            timeout=CAP + 15,
            cwd="/tmp",
        )
    except subprocess.TimeoutExpired:
        return {"still_blocked_after_s": round(time.monotonic() - started, 1)}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="folder holding an older refcheck_callbacks")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--app", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.app:
        _app(args.app[0], Path(args.app[1]))
        return
    if args.case:
        import tempfile

        case = CASES[args.case]
        with tempfile.TemporaryDirectory() as folder:
            figures = case(Path(folder)) if args.case in ("interpreter_exit", "sigterm") else case()
        print(json.dumps(figures), flush=True)
        os._exit(0)  # whatever the case left running (a stuck flush) is not waited for
    trees = {"after": HERE.parents[1]}
    if args.before:
        trees = {"before": args.before.resolve(), **trees}
    figures = {
        name: {tree: _run_case(name, root) for tree, root in trees.items()} for name in CASES
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
