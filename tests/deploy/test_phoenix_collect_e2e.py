"""Downstream: `refcheck collect` between an app and Arize Phoenix. The app (a LangChain chain
traced by OpenInference) exports to the receiver only; `--forward` passes its spans on to
Phoenix untouched and `--export-endpoint` sends the evaluation there, so Phoenix shows the
`evaluate refcheck` span, with its Contradiction event, on the app's own trace under the app's
root span. Phoenix runs from its own virtualenv (`make phoenix-venv`), as in test_phoenix_e2e."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from langchain_chains import CORPUS, KeywordRetriever, rag_chain
from langchain_core.language_models import FakeListChatModel
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from test_phoenix_e2e import _attribute, _trace_spans, phoenix  # noqa: F401  (a fixture)

from refcheck_callbacks.exporters import names

PROJECT = "refcheck-e2e"  # the project _trace_spans reads
ANSWER = "The Eiffel Tower is 450 metres tall."

pytestmark = pytest.mark.slow


def test_the_evaluation_shows_on_the_apps_trace_in_phoenix(phoenix: str) -> None:  # noqa: F811
    command = [
        sys.executable, "-m", "refcheck_callbacks.cli", "collect", "--port", "0",
        "--grpc-port", "off", "--idle", "0.3", "--placement", "thread", "--events", "span",
        "--forward", f"{phoenix}/v1/traces", "--export-endpoint", phoenix,
    ]  # fmt: skip
    env = {**os.environ, "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}"}
    receiver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert receiver.stdout is not None
        line = receiver.stdout.readline().decode()
        assert "receiving OTLP/HTTP traces on" in line
        url = line.rsplit(" ", 1)[-1].strip()
        resource = Resource.create(
            {"service.name": "rag-app", "openinference.project.name": PROJECT}
        )
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(url)))
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            chain = rag_chain(
                KeywordRetriever(documents=CORPUS), FakeListChatModel(responses=[ANSWER])
            )
            with provider.get_tracer("rag-app").start_as_current_span("POST /ask") as root:
                chain.invoke("How tall is the Eiffel Tower?")
        finally:
            instrumentor.uninstrument()
        assert provider.force_flush(30_000)
        provider.shutdown()
        trace_id = format(root.get_span_context().trace_id, "032x")
        root_id = format(root.get_span_context().span_id, "016x")
        spans = _trace_spans(phoenix, trace_id, expected=1)  # the app's, forwarded
    finally:
        receiver.send_signal(signal.SIGTERM)  # checks what is open, exports, stops
        _, stderr = receiver.communicate(timeout=120)
    assert receiver.returncode == 0, stderr.decode()[-3000:]

    deadline = time.monotonic() + 60
    while not any(s["name"] == names.EVALUATION_SPAN for s in spans):
        assert time.monotonic() < deadline, [s["name"] for s in spans]
        time.sleep(0.5)
        spans = _trace_spans(phoenix, trace_id, expected=1)
    assert {"POST /ask", "RunnableSequence", "KeywordRetriever"} <= {s["name"] for s in spans}
    [evaluation] = [s for s in spans if s["name"] == names.EVALUATION_SPAN]
    assert evaluation["parent_id"] == root_id
    assert _attribute(evaluation["attributes"], names.GEN_AI_OPERATION_NAME) == "evaluation"
    labels = [
        _attribute(event["attributes"], names.GEN_AI_EVALUATION_SCORE_LABEL)
        for event in evaluation.get("events", [])
    ]
    assert "contradiction" in labels
