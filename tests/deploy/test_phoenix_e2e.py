"""End to end: evaluation spans over OTLP/HTTP into Arize Phoenix, in the chain's own trace.

A real LCEL RAG chain (vector-store retriever over the bundled MiniLM, prompt, chat model,
parser) runs inside an app request span, and again with no app span at all. OpenInference's
LangChain instrumentation traces the chain and our `RefCheckCallbackHandler` captures the
answer, both on one TracerProvider that exports over OTLP/HTTP to a Phoenix server on
127.0.0.1 (installed in its own virtualenv by `make phoenix-venv`). In both cases the
evaluation span must be a child of the chain's root span. Everything is read back through
Phoenix's REST API.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from free_ports import PortTaken, start_on_a_port, unassigned_ports
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from refcheck_metrics_app import ScriptedChecker  # beside this file

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
PROJECT = "refcheck-e2e"
# The scripted checker takes each claim's label from a word in it.
CLAIMS = (
    "The Eiffel Tower's height is supported by the record.",
    "Its year of construction is contradicted by the record.",
)
ANSWER = " ".join(CLAIMS)

pytestmark = pytest.mark.slow


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


PORT_TAKEN = ("address already in use", "Errno 98", "Failed to bind")
"""What Phoenix's log says when a port it was given is held by another process."""


def _start_phoenix(env: dict[str, str], log: Path, port: int) -> subprocess.Popen[bytes]:
    """Phoenix serving on `port` (its gRPC port from `unassigned_ports` too), once it answers;
    `PortTaken` when one of its ports was held after all."""
    env = {**env, "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(next(unassigned_ports()))}
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(PHOENIX), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).close()
            return process
        except OSError:
            if process.poll() is not None:
                output = log.read_text()
                if any(sign in output for sign in PORT_TAKEN):
                    raise PortTaken(output[-500:]) from None
                pytest.fail(f"Phoenix did not start:\n{output[-3000:]}")
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"Phoenix did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 with a throwaway working dir; yields its base URL. It
    cannot bind port 0 and say which it got: its ports are below the ephemeral range, and it
    starts again on others should one be held (`free_ports`)."""
    if not PHOENIX.exists():
        subprocess.run(["make", "-C", str(ROOT), "phoenix-venv"], check=True, timeout=900)
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix")),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = tmp_path_factory.mktemp("phoenix-log") / "phoenix.log"
    process, port = start_on_a_port(lambda port: _start_phoenix(env, log, port))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _trace_spans(phoenix: str, trace_id: str, expected: int) -> list[dict[str, Any]]:
    """The trace's spans as Phoenix serves them, once at least `expected` have arrived."""
    query = urllib.parse.urlencode({"trace_id": trace_id, "limit": 1000})
    url = f"{phoenix}/v1/projects/{PROJECT}/spans?{query}"
    deadline = time.monotonic() + 60
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            spans = list(_get_json(url)["data"])
        except urllib.error.HTTPError as error:
            if error.code != 404:  # 404: the project does not exist until its first span
                raise
        if len(spans) >= expected:
            return spans
        time.sleep(0.5)
    pytest.fail(f"Phoenix holds {len(spans)} spans of trace {trace_id}, expected {expected}")


def _attribute(attributes: dict[str, Any], key: str) -> Any:
    """An attribute whether Phoenix returns it flat ("a.b") or nested ({"a": {"b": ...}})."""
    if key in attributes:
        return attributes[key]
    value: Any = attributes
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


@pytest.mark.parametrize("app_span", [True, False], ids=["in-app-span", "no-app-span"])
def test_evaluation_span_and_events_reach_phoenix_in_the_chains_trace(
    app_span: bool, phoenix: str, encoder: SentenceEncoder
) -> None:
    resource = Resource.create({"service.name": "rag-app", "openinference.project.name": PROJECT})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    exporter = OpenTelemetryExporter(
        provider,
        MeterProvider(),
        events="span",
        capture_content=True,  # Phoenix reads spans
    )
    store = InMemoryVectorStore(SentenceEncoderEmbeddings(encoder))
    store.add_documents(
        [
            Document(id="eiffel", page_content="The Eiffel Tower in Paris is 330 metres tall."),
            Document(id="built", page_content="The Eiffel Tower was built from 1887 to 1889."),
            Document(id="everest", page_content="Mount Everest is 8,849 metres high."),
        ]
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context only:\n{context}"), ("human", "{question}")]
    )
    chain = (
        {
            "context": store.as_retriever(search_kwargs={"k": 2})
            | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListChatModel(responses=[ANSWER])
        | StrOutputParser()
    )
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    results: list[CheckResult] = []
    try:
        with RefCheckMonitor(
            checker=ScriptedChecker(), exporters=[exporter], on_result=results.append
        ) as monitor:
            handler = RefCheckCallbackHandler(monitor)
            tracer = provider.get_tracer("rag-app")
            with (
                tracer.start_as_current_span("POST /ask") if app_span else contextlib.nullcontext()
            ) as request_span:
                assert chain.invoke("How tall is the Eiffel Tower?", {"callbacks": [handler]})
            assert monitor.flush(60)
    finally:
        instrumentor.uninstrument()
    assert provider.force_flush(30_000)
    provider.shutdown()

    [result] = results
    assert result.request.trace_context is not None
    trace_id = result.request.trace_context.trace_id
    spans = _trace_spans(phoenix, trace_id, expected=8 if app_span else 7)
    by_name = {span["name"]: span for span in spans}
    evaluation = by_name[names.EVALUATION_SPAN]
    app_span_id = format(request_span.get_span_context().span_id, "016x") if app_span else None
    # The outermost chain span: under the app's span, or the root of the trace without one.
    [root_chain] = [s for s in spans if s["parent_id"] == app_span_id]
    assert root_chain["name"] == "RunnableSequence"
    assert evaluation["parent_id"] == root_chain["context"]["span_id"]
    if app_span:
        assert trace_id == format(request_span.get_span_context().trace_id, "032x")
    chain_spans = [s for s in spans if s["name"] not in ("POST /ask", names.EVALUATION_SPAN)]
    assert {"VectorStoreRetriever", "FakeListChatModel"} <= {s["name"] for s in chain_spans}
    span_ids = {s["context"]["span_id"] for s in spans}
    top = "POST /ask" if app_span else "RunnableSequence"
    assert all(s["parent_id"] in span_ids for s in spans if s["name"] != top)
    stage_spans = {
        s["name"] for s in spans if s.get("parent_id") == evaluation["context"]["span_id"]
    }
    assert {"refcheck queue", "refcheck extract", "refcheck check"} <= stage_spans

    attributes = evaluation["attributes"]
    assert _attribute(attributes, names.GEN_AI_OPERATION_NAME) == "evaluation"
    assert _attribute(attributes, names.OUTCOME) == "checked"
    assert _attribute(attributes, names.CLAIM_COUNT) == 2
    assert _attribute(attributes, names.REFERENCE_COUNT) == 2
    assert _attribute(attributes, names.ANSWER) == ANSWER

    events = [e for e in evaluation["events"] if e["name"] == names.EVALUATION_EVENT]
    claims = [
        e["attributes"]
        for e in events
        if _attribute(e["attributes"], names.GEN_AI_EVALUATION_NAME) == names.CLAIM_EVALUATION
    ]
    relevance = [
        e["attributes"]
        for e in events
        if _attribute(e["attributes"], names.GEN_AI_EVALUATION_NAME) == names.RELEVANCE_EVALUATION
    ]
    # two claims, each reference's relevance and the answer's, and the answer's own verdict
    assert len(events) == 6 and len(claims) == 2 and len(relevance) == 3
    subjects = sorted(_attribute(a, names.RELEVANCE_SUBJECT) for a in relevance)
    assert subjects == ["answer", "reference", "reference"]
    first = min(claims, key=lambda a: _attribute(a, names.CLAIM_INDEX))
    second = max(claims, key=lambda a: _attribute(a, names.CLAIM_INDEX))
    assert _attribute(first, names.CLAIM_TEXT) == CLAIMS[0]
    assert _attribute(first, names.GEN_AI_EVALUATION_SCORE_LABEL) == "entailment"
    assert _attribute(first, names.GEN_AI_EVALUATION_SCORE_VALUE) == 0.9
    assert _attribute(second, names.GEN_AI_EVALUATION_SCORE_LABEL) == "contradiction"
    [doc_id] = _attribute(first, names.CLAIM_EVIDENCE_DOC_IDS)
    assert doc_id in {"eiffel", "built"}  # the first document the retriever returned
    [response] = [e["attributes"] for e in events if e["attributes"] not in claims + relevance]
    assert _attribute(response, names.GEN_AI_EVALUATION_SCORE_LABEL) == "contradiction"
    assert _attribute(response, names.GEN_AI_EVALUATION_SCORE_VALUE) == 0.5
