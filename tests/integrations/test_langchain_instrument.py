"""instrument_langchain / uninstrument_langchain: global, idempotent, undone cleanly."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackManager, CallbackManager
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from refcheck_callbacks import RefCheckMonitor, Tally
from refcheck_callbacks.integrations.langchain import (
    RefCheckCallbackHandler,
    instrument_langchain,
    uninstrument_langchain,
)

ORIGINAL_INIT = BaseCallbackManager.__init__
ANSWER = "The Eiffel Tower is 330 metres tall."


@pytest.fixture(autouse=True)
def clean_instrumentation() -> Iterator[None]:
    yield
    uninstrument_langchain()
    assert BaseCallbackManager.__init__ is ORIGINAL_INIT


@pytest.fixture
def chain(
    make_rag_chain: Callable[..., Runnable[str, str]], vector_retriever: BaseRetriever
) -> Any:
    return make_rag_chain(vector_retriever, ANSWER)


def ours(manager: BaseCallbackManager) -> list[RefCheckCallbackHandler]:
    return [h for h in manager.handlers if isinstance(h, RefCheckCallbackHandler)]


def test_instrumenting_twice_adds_one_handler(
    chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    first = instrument_langchain(monitor)
    assert instrument_langchain(monitor) is first
    assert ours(CallbackManager.configure()) == [first]
    assert ours(CallbackManager.configure(inheritable_callbacks=[first])) == [first]
    assert chain.invoke("How tall is the Eiffel Tower?") == ANSWER
    assert monitor.flush(30)
    assert [r.request.answer for r in sink.results] == [ANSWER]


def test_other_options_replace_the_global_handler(monitor: RefCheckMonitor) -> None:
    first = instrument_langchain(monitor)
    second = instrument_langchain(monitor, answer_from="output")
    assert second is not first
    assert ours(CallbackManager.configure()) == [second]


def test_a_handler_passed_in_config_is_not_doubled(
    chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    instrument_langchain(monitor)
    explicit = RefCheckCallbackHandler(monitor)
    assert ours(CallbackManager.configure(inheritable_callbacks=[explicit])) == [explicit]
    chain.invoke("How tall is the Eiffel Tower?", config={"callbacks": [explicit]})
    assert monitor.flush(30)
    assert len(sink.results) == 1


def test_chains_run_in_other_threads_are_captured(
    chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    instrument_langchain(monitor)
    threads = [threading.Thread(target=chain.invoke, args=("Eiffel Tower?",)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert monitor.flush(30)
    assert len(sink.results) == 4


def test_async_and_streamed_chains_are_captured(
    chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    instrument_langchain(monitor)

    async def scenario() -> list[str]:
        first = await chain.ainvoke("Eiffel Tower?")
        streamed = "".join([chunk async for chunk in chain.astream("Eiffel Tower?")])
        return [first, streamed]

    assert asyncio.run(scenario()) == [ANSWER, ANSWER]
    assert monitor.flush(30)
    assert [r.request.answer for r in sink.results] == [ANSWER, ANSWER]


def test_after_uninstrument_nothing_is_captured(
    chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    handler = instrument_langchain(monitor)
    uninstrument_langchain()
    uninstrument_langchain()
    assert BaseCallbackManager.__init__ is ORIGINAL_INIT
    assert ours(CallbackManager.configure()) == []
    chain.invoke("How tall is the Eiffel Tower?")
    assert monitor.flush(30)
    assert sink.results == []
    assert monitor.stats.snapshot() == {}
    assert handler.pending_runs == 0


def test_works_beside_openinference_and_undoes_cleanly_in_any_order(
    chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    openinference = LangChainInstrumentor()
    instrument_langchain(monitor)
    openinference.instrument(tracer_provider=provider)
    try:
        chain.invoke("How tall is the Eiffel Tower?")
        assert monitor.flush(30)
        assert len(sink.results) == 1
        assert spans.get_finished_spans()

        # OpenInference wrapped __init__ over ours: ours stays underneath, inert.
        uninstrument_langchain()
        chain.invoke("How tall is the Eiffel Tower?")
        assert monitor.flush(30)
        assert len(sink.results) == 1
        assert monitor.stats.get(Tally.SKIPPED) == 0
    finally:
        openinference.uninstrument()
    instrument_langchain(monitor)
    chain.invoke("How tall is the Eiffel Tower?")
    assert monitor.flush(30)
    assert len(sink.results) == 2


@pytest.mark.parametrize("first", ["openinference", "refcheck"])
def test_another_instrumentors_uninstrument_never_removes_ours_nor_ours_theirs(
    first: str, chain: Any, monitor: RefCheckMonitor, sink: Any
) -> None:
    """Issue 47: OpenInference's `LangChainInstrumentor` instrumented first and ours second,
    its `uninstrument()` silently turned refcheck off (0 results for 20 answers): it puts back
    the `BaseCallbackManager.__init__` it saw, dropping a wrapper installed after it. Ours is
    no wrapper; in either order each one's uninstrument leaves the other working."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    openinference = LangChainInstrumentor()

    def traced() -> int:
        chain.invoke("How tall is the Eiffel Tower?")
        assert monitor.flush(30)
        count = len(spans.get_finished_spans())
        spans.clear()
        return count

    try:
        for name in (first, "refcheck" if first == "openinference" else "openinference"):
            if name == "openinference":
                openinference.instrument(tracer_provider=provider)
            else:
                instrument_langchain(monitor)
        assert traced() > 0 and len(sink.results) == 1

        openinference.uninstrument()
        for _ in range(3):
            assert traced() == 0  # theirs is off...
        assert len(sink.results) == 4  # ...ours is not

        openinference.instrument(tracer_provider=provider)
        uninstrument_langchain()
        assert traced() > 0  # ours off leaves theirs on
        assert len(sink.results) == 4
    finally:
        openinference.uninstrument()
    assert monitor.stats.snapshot() == {}
