"""What the LangChain handler adds to a chain's `invoke`, beside OpenInference's tracer.

One LCEL RAG chain (MiniLM vector-store retriever | prompt | fake chat model | parser), run in
four ways, interleaved call by call in a shuffled order so that drift and noise from the
shared machine fall on all of them alike:

- none: no callback handler;
- noop: a handler that does nothing: what LangChain itself charges for dispatching callbacks to
  any handler, the floor under both handlers below;
- ours: `RefCheckCallbackHandler` on a `RefCheckMonitor` with the default embedded checker,
  which really checks the submitted answers in its background thread meanwhile (answers it
  cannot keep up with are dropped and counted; the count is printed);
- openinference: `openinference-instrumentation-langchain`'s tracer alone, exporting spans
  through a `BatchSpanProcessor` (the production setup) to an exporter that discards them.

Three more measures: (1) LangChain taken out: the callbacks of one invoke are recorded and
replayed straight into each handler (fresh run ids each time), interleaved, which times the
handlers' own code alone; (2) CPU time instead of wall time, which a busy machine inflates
less: the CPU the app's threads spend per invoke (process CPU minus OpenTelemetry's export
thread), with our monitor sampling every answer out so that no checking thread runs;
(3) what background checking costs the app's other calls: our checker runs Python in the
app's process, so while it checks it holds the GIL part of the time and slows every call of
the app, `none` included, which the interleaving above spreads over all four ways. Rounds
alternate between a handler whose monitor checks every answer and one whose monitor samples
every answer out, each round interleaving `none` with that handler; the figure is the median
over round pairs of `none`'s median difference.

Both handlers are passed in `config["callbacks"]`, so the chain, the order and the callback
machinery are the same for both; only the handler differs. The retriever's query embeddings
come from the encoder's cache after the warm-up, so the chain itself costs little and the
handlers' share is measurable. Reports per-invoke latency (median, p99) per way, the
microseconds each handler adds over `none`, and ours / OpenInference.

    python benchmarks/langchain_overhead.py [--iterations 3000] [--warmup 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.components import Checker, Extractor
from refcheck_callbacks.embeddings.langchain import (
    SentenceEncoderEmbeddings,
)
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

FACTS = {
    "eiffel": "The Eiffel Tower in Paris is 330 metres tall and was built from 1887 to 1889.",
    "python": "Python was created by Guido van Rossum and first released in 1991.",
    "everest": "Mount Everest is 8,849 metres high, on the border of Nepal and China.",
    "amazon": "The Amazon river flows through Brazil, Peru and Colombia into the Atlantic.",
    "moon": "Neil Armstrong was the first person to walk on the Moon, in July 1969.",
    "insulin": "Insulin was discovered in 1921 by Frederick Banting and Charles Best.",
}
QUESTIONS = [
    "How tall is the Eiffel Tower?",
    "Who created Python?",
    "How high is Mount Everest?",
    "Where does the Amazon flow?",
    "Who first walked on the Moon?",
    "Who discovered insulin?",
]
ANSWERS = [
    "The Eiffel Tower is 330 metres tall. It was built from 1887 to 1889.",
    "Guido van Rossum created Python. It was first released in 1991.",
    "Mount Everest is 8,849 metres high. It lies in Peru.",
]
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer from this context only:\n{context}"), ("human", "{question}")]
)


class _NoopHandler(BaseCallbackHandler):
    run_inline = True

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        """Defined so LangChain does not fall back to `on_llm_start` with stringified messages."""


class _Recorder(BaseCallbackHandler):
    """Records every callback LangChain makes during a run, to replay them on a handler."""

    run_inline = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("on_"):
            return object.__getattribute__(self, name)
        calls = object.__getattribute__(self, "calls")
        return lambda *args, **kwargs: calls.append((name, args, kwargs))


Replay = list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]


def replays(
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]], handler: Any, count: int
) -> list[Replay]:
    """`count` copies of a recorded run tree bound to `handler`, each with fresh run ids."""
    return [_replay(calls, handler, {}) for _ in range(count)]


def _replay(calls: Any, handler: Any, fresh: dict[uuid.UUID, uuid.UUID]) -> Replay:
    def new_id(old: uuid.UUID | None) -> uuid.UUID | None:
        return None if old is None else fresh.setdefault(old, uuid.uuid4())

    return [
        (
            getattr(handler, name),
            args,
            {
                **kwargs,
                "run_id": new_id(kwargs["run_id"]),
                "parent_run_id": new_id(kwargs.get("parent_run_id")),
            },
        )
        for name, args, kwargs in calls
    ]


def time_replays(
    handlers: dict[str, Any], calls: Any, iterations: int, seed: int
) -> dict[str, list[float]]:
    """Microseconds per replayed run tree, the handlers interleaved in a shuffled order."""
    prepared = {name: replays(calls, handler, iterations) for name, handler in handlers.items()}
    times: dict[str, list[float]] = {name: [] for name in handlers}
    order = list(handlers)
    rng = random.Random(seed)
    for i in range(iterations):
        rng.shuffle(order)
        for name in order:
            start = time.perf_counter_ns()
            for method, args, kwargs in prepared[name][i]:
                method(*args, **kwargs)
            times[name].append((time.perf_counter_ns() - start) / 1000)
    return times


class _DiscardingExporter(SpanExporter):
    """Spans are built and batched as in production, then dropped: no network in a benchmark."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def build_chain(encoder: SentenceEncoder) -> Runnable[str, str]:
    store = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents([Document(id=key, page_content=text) for key, text in FACTS.items()])
    context = store.as_retriever(search_kwargs={"k": 2}) | (
        lambda docs: "\n".join(d.page_content for d in docs)
    )
    return (
        {"context": context, "question": RunnablePassthrough()}
        | PROMPT
        | FakeListChatModel(responses=ANSWERS)
        | StrOutputParser()
    )


def openinference_tracer() -> tuple[Any, TracerProvider]:
    """The handler OpenInference's instrumentor adds to every callback manager."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_DiscardingExporter()))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = instrumentor._tracer  # its handler, kept; the global patch is undone below
    instrumentor.uninstrument()
    return tracer, provider


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def time_invokes(
    ways: dict[str, Callable[[str], object]],
    iterations: int,
    warmup: int,
    seed: int,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> dict[str, list[float]]:
    """Microseconds per invoke by `clock`, the ways interleaved in a shuffled order."""
    rng = random.Random(seed)
    times: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways)
    for i in range(warmup + iterations):
        question = QUESTIONS[i % len(QUESTIONS)]
        rng.shuffle(order)
        for name in order:
            start = clock()
            ways[name](question)
            elapsed_us = (clock() - start) / 1000
            if i >= warmup:
                times[name].append(elapsed_us)
    return times


def app_cpu_clock() -> Callable[[], int]:
    """CPU time of the process minus OpenTelemetry's export threads: what the app's threads
    (the caller and LangChain's executor threads) spent. Unlike wall time it does not count
    the time other processes of a busy machine ran instead."""
    exporters = [t.ident for t in threading.enumerate() if t.name.startswith("OtelBatch")]
    clocks = [time.pthread_getcpuclockid(ident) for ident in exporters if ident is not None]

    def clock() -> int:
        return time.process_time_ns() - sum(time.clock_gettime_ns(c) for c in clocks)

    return clock


def run(iterations: int, warmup: int, seed: int) -> dict[str, Any]:
    encoder = SentenceEncoder()  # the chain's own: the checker's encoder lock is not shared
    chain = build_chain(encoder)
    outcomes: Counter[str] = Counter()
    monitor = RefCheckMonitor(
        on_result=lambda result: outcomes.update([result.outcome.value]), placement="thread"
    )
    ours = RefCheckCallbackHandler(monitor)
    theirs, provider = openinference_tracer()

    def ways(handler: Any) -> dict[str, Callable[[str], object]]:
        return {
            "none": lambda q: chain.invoke(q),
            "noop": lambda q: chain.invoke(q, config={"callbacks": [_NoopHandler()]}),
            "ours": lambda q: chain.invoke(q, config={"callbacks": [handler]}),
            "openinference": lambda q: chain.invoke(q, config={"callbacks": [theirs]}),
        }

    times = time_invokes(ways(ours), iterations, warmup, seed)
    recorder = _Recorder()
    chain.invoke(QUESTIONS[0], config={"callbacks": [recorder]})
    handler_times = time_replays(
        {"ours": ours, "openinference": theirs}, recorder.calls, iterations, seed
    )
    stats = monitor.stats.snapshot()
    during = dict(outcomes)
    flushed = monitor.flush(120)
    monitor.shutdown()
    # CPU phase: no checking thread may run meanwhile, so this monitor samples every answer
    # out; the handler does all its work up to `submit`, which then only counts a skip.
    with RefCheckMonitor(sample_rate=0.0, exporters=[], placement="thread") as idle:
        cpu = time_invokes(
            ways(RefCheckCallbackHandler(idle)), iterations, warmup, seed, app_cpu_clock()
        )
        background = time_background_checking(chain, RefCheckCallbackHandler(idle), seed)
    provider.shutdown()
    result = report(times, iterations, stats, flushed, ours.pending_runs)
    result["app_cpu"] = summarize(cpu)
    result["background_checking"] = background
    result["handler_only"] = {
        "callbacks_per_run": len(recorder.calls),
        **{
            name: {"median_us": statistics.median(v), "p99_us": percentile(v, 0.99)}
            for name, v in handler_times.items()
        },
    }
    result["handler_only"]["ours_over_openinference"] = (
        result["handler_only"]["ours"]["median_us"]
        / result["handler_only"]["openinference"]["median_us"]
    )
    result["monitor"]["outcomes_while_timing"] = during
    result["monitor"]["outcomes"] = dict(outcomes)
    return result


def time_background_checking(
    chain: Runnable[str, str],
    idle: RefCheckCallbackHandler,
    seed: int,
    rounds: int = 12,
    checker: Checker | str | None = None,
    extractor: Extractor | str | None = None,
    placement: str = "thread",
) -> dict[str, Any]:
    """How much a checking monitor slows the app's un-instrumented invokes (module doc, (3)).

    `checker`, `extractor` and `placement` are the checking monitor's (default: the embedded
    checker and the sentence extractor, in its thread); benchmarks/serve_scaling.py passes
    remote ones, and the child-process placement, to measure those."""
    per_round = 150
    outcomes: Counter[str] = Counter()
    with RefCheckMonitor(
        checker=checker,
        extractor=extractor,
        placement=placement,
        on_result=lambda r: outcomes.update([r.outcome.value]),
    ) as monitor:
        monitor.check(answer=ANSWERS[0], references=list(FACTS.values()))  # load, start
        checking = RefCheckCallbackHandler(monitor)
        slowed, cpu = [], []
        for r in range(rounds):
            medians = {}
            for name, handler in (("checking", checking), ("idle", idle)):
                config: RunnableConfig = {"callbacks": [handler]}
                ways: dict[str, Callable[[str], object]] = {
                    "none": chain.invoke,
                    "handler": functools.partial(chain.invoke, config=config),
                }
                before = background_cpu()
                times = time_invokes(ways, per_round, per_round // 5, seed + r)
                # The round's answers are checked before the next round: none of its checking
                # falls on the idle round that follows.
                monitor.flush(timeout=300)
                if name == "checking":
                    spent = sum(background_cpu().values()) - sum(before.values())
                    cpu.append(spent / (per_round + per_round // 5) * 1e6)
                medians[name] = statistics.median(times["none"])
            slowed.append(medians["checking"] - medians["idle"])
    return {
        "rounds": rounds,
        "invokes_per_round": per_round,
        "none_slowed_median_us": statistics.median(slowed),
        "none_slowed_per_round_us": slowed,
        "background_cpu_per_answer_us": statistics.median(cpu),
        "background_cpu_per_answer_per_round_us": cpu,
        "checked": outcomes["checked"],
        "stats": monitor.stats.snapshot(),
    }


def background_cpu() -> dict[int, float]:
    """CPU seconds of the app's threads that work for a monitor in the background, by thread:
    its worker and helper threads (`refcheck-*`) and the worker loop's executor threads, where
    blocking checkers run (`asyncio_*`; this benchmark's app runs no asyncio of its own)."""
    spent = {}
    for thread in threading.enumerate():
        if thread.ident is not None and thread.name.startswith(("refcheck", "asyncio")):
            try:
                clock = time.pthread_getcpuclockid(thread.ident)
                spent[thread.ident] = time.clock_gettime(clock)
            except OSError:  # the thread ended meanwhile
                pass
    return spent


def summarize(times: dict[str, list[float]]) -> dict[str, Any]:
    """Median per way, added over `none`, and ours / OpenInference."""
    medians = {name: statistics.median(v) for name, v in times.items()}
    added = {name: medians[name] - medians["none"] for name in medians if name != "none"}
    return {
        "median_us": medians,
        "added_median_us": added,
        "ours_over_openinference": added["ours"] / added["openinference"],
    }


def report(
    times: dict[str, list[float]],
    iterations: int,
    monitor_stats: dict[str, dict[str, int]],
    flushed: bool,
    pending_runs: int,
) -> dict[str, Any]:
    latency = {
        name: {"median_us": statistics.median(v), "p99_us": percentile(v, 0.99)}
        for name, v in times.items()
    }
    base = latency["none"]
    added = {
        name: {
            "median_us": latency[name]["median_us"] - base["median_us"],
            "p99_us": latency[name]["p99_us"] - base["p99_us"],
            "paired_median_us": statistics.median(
                t - b for t, b in zip(times[name], times["none"], strict=True)
            ),
        }
        for name in times
        if name != "none"
    }
    ratio = {
        key: added["ours"][key] / added["openinference"][key]
        if added["openinference"][key] > 0
        else None
        for key in ("median_us", "p99_us", "paired_median_us")
    }
    return {
        "iterations_per_way": iterations,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "latency": latency,
        "added": added,
        "ours_over_openinference": ratio,
        "monitor": {"counts": monitor_stats, "flushed": flushed, "pending_runs": pending_runs},
    }


def print_report(result: dict[str, Any]) -> None:
    print(
        f"invoke latency over {result['iterations_per_way']} interleaved calls per way (us); "
        f"{result['cpus']} CPUs, load average {result['load_average'][0]:.1f}"
    )
    print(f"  {'way':<14} {'median':>9} {'p99':>9} {'added med':>10} {'added p99':>10}")
    for name, lat in result["latency"].items():
        add = result["added"].get(name, {"median_us": 0.0, "p99_us": 0.0})
        print(
            f"  {name:<14} {lat['median_us']:>9.1f} {lat['p99_us']:>9.1f} "
            f"{add['median_us']:>10.1f} {add['p99_us']:>10.1f}"
        )
    for key, value in result["ours_over_openinference"].items():
        shown = "n/a" if value is None else f"{value:.2f}"
        print(f"  ours / openinference, added {key}: {shown}")
    own = result["added"]["ours"]["median_us"] - result["added"]["noop"]["median_us"]
    print(f"  ours beyond LangChain's own dispatch (ours - noop), median: {own:.1f}")
    only = result["handler_only"]
    print(
        f"handler bodies alone: one invoke's {only['callbacks_per_run']} callbacks replayed "
        f"(us): ours median {only['ours']['median_us']:.1f} p99 {only['ours']['p99_us']:.1f}; "
        f"openinference median {only['openinference']['median_us']:.1f} "
        f"p99 {only['openinference']['p99_us']:.1f}; ratio {only['ours_over_openinference']:.2f}"
    )
    cpu = result["app_cpu"]
    print("app-thread CPU time per invoke (us), answers sampled out (no checking thread):")
    for name, median in cpu["median_us"].items():
        print(f"  {name:<14} {median:>9.1f} {cpu['added_median_us'].get(name, 0.0):>10.1f}")
    print(f"  ours / openinference, added CPU median: {cpu['ours_over_openinference']:.2f}")
    background = result["background_checking"]
    print(
        "un-instrumented invokes slowed while our monitor checks in the background (GIL "
        f"share), median over {background['rounds']} round pairs: "
        f"{background['none_slowed_median_us']:.1f} us "
        f"(rounds: {', '.join(f'{v:.0f}' for v in background['none_slowed_per_round_us'])})"
    )
    monitor = result["monitor"]
    print(f"  background results while timing: {monitor['outcomes_while_timing']}")
    print(f"  all results: {monitor['outcomes']}; not checked: {monitor['counts'] or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    # OpenInference calls a LangChain API deprecated in 1.x; printing that warning on every
    # call would be charged to its timings.
    warnings.simplefilter("ignore")
    result = run(args.iterations, args.warmup, args.seed)
    print_report(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
