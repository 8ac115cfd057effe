"""What `refcheck collect` ingests and checks: spans per second, traces per second, memory per
open trace.

The receiver runs in this process as `refcheck collect` runs it (the HTTP server, the trace
assembly, a `RefCheckMonitor` with the embedded checker and the default extractor, 10%
sampling, the default placement: checking in a child process). A client process, started
first so that building its requests costs the receiver nothing, posts OTLP/HTTP protobuf
export requests of OpenInference-shaped RAG traces (a chain root, a retriever with four
documents, a model call whose prompt shows them, and `--extra-spans` plain spans such as an
app's HTTP and database spans), `--traces-per-request` traces per request, over one
keep-alive connection.

- spans/s ingested: spans posted / the time until the last request was answered (decoded,
  assembled);
- traces/s checked: traces / the time from the first request until every trace was finished
  (checked, or sampled out, or counted), the checker's work on the sampled tenth included
  (and, of those, the answers checked per second);
- memory per open trace: with `--idle` long enough that no trace completes, the Python memory
  (tracemalloc) this process holds more after `--open-traces` traces arrived, per trace, and
  the receiver's own estimate (`buffered_bytes`, what `--max-buffered-bytes` bounds).

- ingest rate against a baseline (`--baseline REV`, default c5acbe0: the receiver before it
  moved to h11): the receiver alone (a sink that checks nothing), spans per second posted by
  a client process, the baseline's package (`git archive REV`) and this tree's run in turn in
  fresh processes, `--rounds` times each; the ratio of the medians is this tree's / the
  baseline's.

    flock /tmp/cpu.lock python benchmarks/collect_throughput.py [--traces 20000] [--json out.json]
    flock /tmp/cpu.lock python benchmarks/collect_throughput.py --ingest-ratio-only
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DOCUMENTS = [
    "The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889 for the World's Fair.",
    "Mount Everest is 8,849 metres high and lies on the border of Nepal and China in Asia.",
    "Python was created by Guido van Rossum and first released in 1991 as a scripting language.",
    "The Amazon river flows through Brazil, Peru and Colombia into the Atlantic Ocean in the east.",
]


def _trace_spans(index: int, extra_spans: int) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    trace_id = os.urandom(16)
    root, retriever, llm = os.urandom(8), os.urandom(8), os.urandom(8)

    def span(span_id: bytes, parent: bytes, name: str, attributes: dict[str, Any]) -> Span:
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=name,
            start_time_unix_nano=time.time_ns(),
            end_time_unix_nano=time.time_ns() + 1000,
            attributes=[
                KeyValue(
                    key=k,
                    value=AnyValue(double_value=v)
                    if isinstance(v, float)
                    else AnyValue(string_value=str(v)),
                )
                for k, v in attributes.items()
            ],
        )

    question = f"Question {index}: how tall is the Eiffel Tower?"
    answer = "The Eiffel Tower is 330 metres tall. It was built for the World's Fair."
    documents: dict[str, Any] = {}
    for i, text in enumerate(DOCUMENTS):
        documents[f"retrieval.documents.{i}.document.content"] = text
        documents[f"retrieval.documents.{i}.document.id"] = f"doc-{i}"
        documents[f"retrieval.documents.{i}.document.score"] = 0.9 - i / 10
    context = "\n".join(DOCUMENTS)
    spans = [
        span(root, b"", "RunnableSequence", {
            "openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer,
        }),
        span(retriever, root, "retriever", {"openinference.span.kind": "RETRIEVER", **documents}),
        span(llm, root, "ChatModel", {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-bench",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": f"Answer from this context:\n{context}",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": question,
            "llm.output_messages.0.message.content": answer,
        }),
    ]  # fmt: skip
    for n in range(extra_spans):
        attributes = {"http.route": "/ask", "db.statement": "SELECT * FROM docs WHERE id = ?"}
        spans.append(span(os.urandom(8), root, f"step {n}", attributes))
    return spans


def _bodies(traces: int, per_request: int, extra_spans: int) -> list[bytes]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    bodies = []
    for start in range(0, traces, per_request):
        request = ExportTraceServiceRequest()
        spans = request.resource_spans.add().scope_spans.add().spans
        for index in range(start, min(traces, start + per_request)):
            spans.extend(_trace_spans(index, extra_spans))
        bodies.append(request.SerializeToString())
    return bodies


def _client(args: argparse.Namespace, ports: Any, done: Any) -> None:
    """Builds every request, then waits for a port, posts them all and reports the time."""
    phases = [
        _bodies(args.traces, args.traces_per_request, args.extra_spans),
        _bodies(args.open_traces, args.traces_per_request, args.extra_spans),
    ]
    done.put("ready")
    for bodies in phases:
        port = ports.get()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        started = time.perf_counter()
        for body in bodies:
            connection.request(
                "POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
            )
            reply = connection.getresponse()
            reply.read()
            assert reply.status == 200, reply.status
        done.put(time.perf_counter() - started)
        connection.close()


class _NullSink:
    """An `AnswerSink` that checks nothing: the ingest rate is the receiver's alone."""

    def submit(self, **fields: Any) -> bool:
        return False

    def skipped(self, reason: Any, count: int = 1) -> None:
        pass

    dropped = errored = skipped


def _ingest_once(args: argparse.Namespace) -> None:
    """One ingest measurement, of whichever `refcheck_callbacks` is on the path: prints the
    spans per second posted and answered."""
    from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
    from refcheck_callbacks.integrations.otlp.traces import TraceLimits

    args.open_traces = 0
    spawn = multiprocessing.get_context("spawn")
    ports, done = spawn.Queue(), spawn.Queue()
    client = spawn.Process(target=_client, args=(args, ports, done), daemon=True)
    client.start()
    assert done.get(timeout=600) == "ready"
    limits = TraceLimits(idle=0.5, max_open_traces=100_000, max_buffered_bytes=4 << 30)
    receiver = Receiver(_NullSink(), ReceiverOptions(port=0, limits=limits)).start()  # type: ignore[arg-type]
    ports.put(receiver.server.port)
    posting = done.get(timeout=3600)
    receiver.stop()
    ports.put(0)  # the client's second phase: nothing to send
    client.join(10)
    print(json.dumps({"spans_per_s": args.traces * (3 + args.extra_spans) / posting}))


def _ingest_ratio(args: argparse.Namespace) -> dict[str, Any]:
    """This tree's ingest rate over the baseline's, measured in turn in fresh processes."""
    rates: dict[str, list[float]] = {"baseline": [], "this_tree": []}
    with tempfile.TemporaryDirectory() as baseline:
        archive = subprocess.run(
            ["git", "archive", args.baseline, "refcheck_callbacks"],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(["tar", "-x", "-C", baseline], input=archive.stdout, check=True)
        command = [
            sys.executable, __file__, "--ingest-once", "--traces", str(args.traces),
            "--traces-per-request", str(args.traces_per_request),
            "--extra-spans", str(args.extra_spans),
        ]  # fmt: skip
        for _ in range(args.rounds):
            for name, tree in (("baseline", baseline), ("this_tree", str(ROOT))):
                env = {**os.environ, "PYTHONPATH": tree}
                out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
                rates[name].append(json.loads(out.stdout.strip().splitlines()[-1])["spans_per_s"])
    medians = {name: statistics.median(values) for name, values in rates.items()}
    return {
        "baseline": args.baseline,
        "ingest_spans_per_s": {name: [round(v) for v in values] for name, values in rates.items()},
        "ingest_ratio_this_tree_over_baseline": round(
            medians["this_tree"] / medians["baseline"], 3
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--open-traces", type=int, default=5_000)
    parser.add_argument("--traces-per-request", type=int, default=50)
    parser.add_argument("--extra-spans", type=int, default=5)
    parser.add_argument("--sample-rate", type=float, default=0.1)
    parser.add_argument("--checker", default="embedded")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--baseline", default="c5acbe0", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ingest-ratio-only", action="store_true")
    parser.add_argument("--ingest-once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ingest_once:
        _ingest_once(args)
        return
    ratio = _ingest_ratio(args)
    if args.ingest_ratio_only:
        json.dump(ratio, sys.stdout, indent=2)
        print()
        return

    from refcheck_callbacks import RefCheckMonitor
    from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
    from refcheck_callbacks.integrations.otlp.traces import TraceLimits

    spawn = multiprocessing.get_context("spawn")
    ports, done = spawn.Queue(), spawn.Queue()
    client = spawn.Process(target=_client, args=(args, ports, done), daemon=True)
    client.start()
    checked: list[Any] = []
    monitor = RefCheckMonitor(
        checker=args.checker,
        sample_rate=args.sample_rate,
        exporters=[],
        on_result=[checked.append],
        max_queue=100_000,
    )
    monitor.check(answer="Warm-up: the tower is 330 metres tall.", references=[DOCUMENTS[0]])
    checked.clear()
    spans_per_trace = 3 + args.extra_spans
    assert done.get(timeout=600) == "ready"

    # 1. Throughput: traces complete 0.5 s after their last span.
    limits = TraceLimits(idle=0.5, max_open_traces=100_000, max_buffered_bytes=4 << 30)
    receiver = Receiver(monitor, ReceiverOptions(port=0, limits=limits)).start()
    started = time.perf_counter()
    ports.put(receiver.server.port)
    posting = done.get(timeout=3600)
    collector = receiver.collector
    while sum(collector.traces.values()) < args.traces or collector.assembly.open_traces:
        time.sleep(0.01)
    assert monitor.flush(3600)
    finished = time.perf_counter() - started
    counts = dict(collector.traces)
    stats = monitor.stats.snapshot()
    results = len(checked)
    receiver.stop()

    # 2. Memory per open trace: nothing completes while they wait.
    limits = TraceLimits(idle=3600, max_open_traces=100_000, max_buffered_bytes=4 << 30)
    receiver = Receiver(monitor, ReceiverOptions(port=0, limits=limits)).start()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    ports.put(receiver.server.port)
    done.get(timeout=3600)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    open_traces = receiver.collector.assembly.open_traces
    estimate = receiver.collector.assembly.buffered_bytes
    receiver.stop()
    monitor.shutdown()
    client.join(10)

    figures = {
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "placement": str(monitor.runner.placement),
        "traces": args.traces,
        "spans_per_trace": spans_per_trace,
        "sample_rate": args.sample_rate,
        "spans_per_s_ingested": round(args.traces * spans_per_trace / posting),
        "traces_per_s_checked": round(args.traces / finished, 1),
        "sampled_answers_checked_per_s": round(results / finished, 1),
        "results": results,
        "trace_outcomes": counts,
        "monitor": stats,
        "open_traces": open_traces,
        "python_bytes_per_open_trace": round(grown / max(open_traces, 1)),
        "estimated_bytes_per_open_trace": round(estimate / max(open_traces, 1)),
        **ratio,
    }
    json.dump(figures, sys.stdout, indent=2)
    print()
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
