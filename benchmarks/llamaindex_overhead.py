"""LlamaIndex overhead: microseconds our handlers add to one `query`, with versus without them.

Workload: a `VectorStoreIndex` over 6 short documents (bundled MiniLM embeddings; the query
text repeats, so its embedding comes from the encoder's cache), `as_query_engine()` with
`MockLLM` and `similarity_top_k=2`. One query opens 14 LlamaIndex spans and 14 events.

Five arms, interleaved round by round in a rotating order so drift in the shared machine's
load hits all alike:
- `plain`: no handlers beyond LlamaIndex's default null pair;
- `noop_handlers`: one more null span + event handler pair: what LlamaIndex's dispatch to
  any handler pair costs, the floor under ours;
- `openinference`: OpenInference's LlamaIndex tracer (spans recorded, exported nowhere), the
  usual observability tool, for scale;
- `capture`: our handlers, the monitor samples every answer out (everything but the enqueue);
- `capture_submit`: our handlers, every answer enqueued for the background worker.
Reported per query, in microseconds: median and p99 of each arm and what each adds to
`plain`, in wall time and in the app thread's CPU time (`time.thread_time`: on a shared,
loaded machine, wall time also counts waiting for a core; CPU time does not); and the paired
added median, the median over rounds of each round's difference to `plain`'s round next to
it, which cancels the drift of the machine's load between rounds.

The worker is real, but its extractor finds no claims, so every answer ends as `abstain`
without model work, and it has no exporters: the figures isolate what runs on the app's
thread, plus the worker's own share of the GIL. The worker is flushed after each arm,
outside the timing, so no backlog spills into the next arm.

A second measurement sums the CPU time spent inside the handler bodies themselves (span
enter / exit / drop, event handling), and inside `monitor.submit` among them, with the
timer's own cost subtracted.

    python benchmarks/llamaindex_overhead.py [--rounds 60] [--per-round 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.instrumentation import NullEventHandler, NullSpanHandler, get_dispatcher
from llama_index.core.llms import MockLLM
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from refcheck_callbacks import CheckRequest, RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.contract.components import Extraction
from refcheck_callbacks.embeddings.llamaindex import (
    SentenceEncoderEmbedding,
)
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.extract.base import SyncExtractor
from refcheck_callbacks.integrations.llamaindex import instrument as llamaindex

DOCUMENTS = [
    "The Eiffel Tower in Paris is 330 metres tall and was completed in 1889.",
    "The Colosseum in Rome could hold about 50,000 spectators.",
    "Mount Everest is 8,849 metres high and lies on the border of Nepal and China.",
    "The Nile is about 6,650 kilometres long and flows into the Mediterranean Sea.",
    "The Great Wall of China is more than 21,000 kilometres long.",
    "Lake Baikal in Siberia is the deepest lake in the world, at 1,642 metres.",
]
QUESTION = "How tall is the Eiffel Tower?"


class _NoClaims(SyncExtractor):
    """Finds no claims, so the worker does no model work (see the module docstring)."""

    name = "no-claims"

    def extract_batch(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        return [Extraction() for _ in requests]


Timer = Callable[[], float]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median_us": round(statistics.median(values), 1),
        "p99_us": round(_percentile(values, 0.99), 1),
    }


def _added(arm: dict[str, float], plain: dict[str, float]) -> dict[str, float]:
    return {
        **arm,
        "added_median_us": round(arm["median_us"] - plain["median_us"], 1),
        "added_p99_us": round(arm["p99_us"] - plain["p99_us"], 1),
        "added_share_of_median": round(arm["median_us"] / plain["median_us"] - 1, 4),
    }


def _timed_queries(engine: Any, count: int) -> tuple[list[float], list[float]]:
    """Wall and thread-CPU microseconds of `count` queries."""
    wall, cpu = [], []
    for _ in range(count):
        wall_start, cpu_start = time.perf_counter(), time.thread_time()
        engine.query(QUESTION)
        cpu.append((time.thread_time() - cpu_start) * 1e6)
        wall.append((time.perf_counter() - wall_start) * 1e6)
    return wall, cpu


Arm = tuple[Callable[[], object], Callable[[], object]]
"""How to attach and detach one arm's handlers."""


def _ours(monitor: RefCheckMonitor) -> Arm:
    def detach() -> None:
        llamaindex.uninstrument_llamaindex()
        monitor.flush(timeout=60)  # no backlog spills into the next arm's timing

    return lambda: llamaindex.instrument_llamaindex(monitor), detach


def _noop() -> Arm:
    """A second pair of LlamaIndex's own null handlers: what any handler pair costs."""
    dispatcher = get_dispatcher()
    span_handler, event_handler = NullSpanHandler(), NullEventHandler()

    def attach() -> None:
        dispatcher.span_handlers = [*dispatcher.span_handlers, span_handler]
        dispatcher.event_handlers = [*dispatcher.event_handlers, event_handler]

    def detach() -> None:
        dispatcher.span_handlers = [h for h in dispatcher.span_handlers if h is not span_handler]
        dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not event_handler]

    return attach, detach


def _openinference() -> Arm:
    """OpenInference's LlamaIndex tracer; spans are recorded but go to no exporter."""
    instrumentor = LlamaIndexInstrumentor()
    provider = TracerProvider()
    return lambda: instrumentor.instrument(tracer_provider=provider), instrumentor.uninstrument


def end_to_end(engine: Any, arms: dict[str, Arm], rounds: int, per_round: int) -> dict[str, Any]:
    """Per-query times of each arm, interleaved round by round in a rotating order.

    The first arm is the baseline the others are compared with.
    """
    names = list(arms)
    wall: dict[str, list[list[float]]] = {name: [] for name in names}
    cpu: dict[str, list[list[float]]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            attach, detach = arms[name]
            attach()
            round_wall, round_cpu = _timed_queries(engine, per_round)
            detach()
            wall[name].append(round_wall)
            cpu[name].append(round_cpu)
    plain = names[0]
    report: dict[str, Any] = {"queries_per_arm": rounds * per_round}
    for kind, times in (("wall", wall), ("cpu", cpu)):
        flat = {name: [t for r in rounds_ for t in r] for name, rounds_ in times.items()}
        base = _summary(flat[plain])
        report[kind] = {plain: base} | {
            n: _added(_summary(flat[n]), base) | _paired(times[n], times[plain]) for n in names[1:]
        }
    return report


def _paired(arm: list[list[float]], plain: list[list[float]]) -> dict[str, float]:
    """The median over rounds of (arm's round median - plain's median in the same round).

    Rounds run back to back, so the load of the shared machine drifts little within one; the
    difference taken round by round cancels most of that drift, which the pooled medians
    above do not."""
    gaps = [statistics.median(a) - statistics.median(p) for a, p in zip(arm, plain, strict=True)]
    return {"paired_added_median_us": round(statistics.median(gaps), 1)}


class _Clock:
    """Sums the CPU time spent inside wrapped callables; `overhead` is the wrapper's own."""

    def __init__(self, timer: Timer = time.thread_time) -> None:
        self.timer = timer
        self.spent = 0.0
        self.calls = 0
        self.overhead = self._calibrate()

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        timer = self.timer

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = timer()
            try:
                return function(*args, **kwargs)
            finally:
                self.spent += timer() - start
                self.calls += 1

        return timed

    def _calibrate(self, calls: int = 20_000) -> float:
        """Seconds a wrapped call costs beyond the same call unwrapped (best of 5)."""

        def empty() -> None:
            return None

        def loop(function: Callable[[], None]) -> float:
            start = self.timer()
            for _ in range(calls):
                function()
            return (self.timer() - start) / calls

        overhead = min(loop(self.wrap(empty)) - loop(empty) for _ in range(5))
        self.spent, self.calls = 0.0, 0
        return max(overhead, 0.0)

    def since(self, spent: float, calls: int) -> float:
        """Microseconds spent since a reading of (`spent`, `calls`), less timer overhead."""
        return (self.spent - spent - (self.calls - calls) * self.overhead) * 1e6


HANDLER_ENTRY_POINTS = (
    (llamaindex.RefCheckSpanHandler, "span_enter"),
    (llamaindex.RefCheckSpanHandler, "span_exit"),
    (llamaindex.RefCheckSpanHandler, "span_drop"),
    (llamaindex.RefCheckEventHandler, "handle"),
)


def handler_time(engine: Any, monitor: RefCheckMonitor, queries: int) -> dict[str, Any]:
    """CPU time inside our handlers per query, and inside `monitor.submit` among it."""
    handlers, submit = _Clock(), _Clock()
    originals = [(owner, name, getattr(owner, name)) for owner, name in HANDLER_ENTRY_POINTS]
    for owner, name, original in originals:
        setattr(owner, name, handlers.wrap(original))
    monitor.submit = submit.wrap(monitor.submit)  # type: ignore[method-assign]
    in_handlers: list[float] = []
    in_submit: list[float] = []
    calls_per_query = 0
    llamaindex.instrument_llamaindex(monitor)
    try:
        for _ in range(queries):
            handlers_before = (handlers.spent, handlers.calls)
            submit_before = (submit.spent, submit.calls)
            engine.query(QUESTION)
            submits = submit.calls - submit_before[1]
            # submit runs inside a handler, so its timer's overhead is in the handler's time
            in_handlers.append(handlers.since(*handlers_before) - submits * submit.overhead * 1e6)
            in_submit.append(submit.since(*submit_before))
            calls_per_query = handlers.calls - handlers_before[1]
    finally:
        llamaindex.uninstrument_llamaindex()
        for owner, name, original in originals:
            setattr(owner, name, original)
        del monitor.submit
    return {
        "queries": queries,
        "handlers_cpu": _summary(in_handlers),
        "of_which_monitor_submit_cpu": _summary(in_submit),
        "handler_calls_per_query": calls_per_query,
        "timer_overhead_per_call_us": round(handlers.overhead * 1e6, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--handler-queries", type=int, default=1000)
    args = parser.parse_args()

    encoder = SentenceEncoder()
    index = VectorStoreIndex.from_documents(
        [Document(text=text) for text in DOCUMENTS], embed_model=SentenceEncoderEmbedding(encoder)
    )
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=2)
    checker = EmbeddedChecker(encoder=encoder)
    quiet: dict[str, Any] = {
        "extractor": _NoClaims(),
        "checker": checker,
        "exporters": [],
        "placement": "thread",
    }
    sampled_out = RefCheckMonitor(**quiet, sample_rate=0.0)
    submitting = RefCheckMonitor(**quiet, max_queue=100_000)
    with sampled_out, submitting:
        _timed_queries(engine, 50)  # warm caches and lazy imports
        arms: dict[str, Arm] = {
            "plain": (lambda: None, lambda: None),
            "noop_handlers": _noop(),
            "openinference": _openinference(),
            "capture": _ours(sampled_out),
            "capture_submit": _ours(submitting),
        }
        report = {
            "workload": "VectorStoreIndex.as_query_engine(MockLLM, top_k=2).query",
            "end_to_end": end_to_end(engine, arms, args.rounds, args.per_round),
            "handler_time": handler_time(engine, submitting, args.handler_queries),
        }
        submitting.flush(timeout=60)
        report["monitor_stats"] = {
            "capture": sampled_out.stats.snapshot(),
            "capture_submit": submitting.stats.snapshot(),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
