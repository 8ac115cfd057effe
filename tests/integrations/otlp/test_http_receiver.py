"""The OTLP/HTTP front of `refcheck collect`: OTLP/JSON with hex ids, gzip, the bearer token,
routes and media types, and `--forward` passing export requests on untouched."""

from __future__ import annotations

import gzip
import http.client
import json
import os
from collections.abc import Iterator

import pytest
from loopback_servers import closed_port
from otlp_export import export, new_trace_id, span, traces_done, wait_for
from results import ResultSink

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.contract.reasons import ForwardReason, RejectReason
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

TOKEN = "s3cret-token"
EIFFEL = "The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889."
ANSWER = "The Eiffel Tower is 450 metres tall."


def _receiver(
    checker: EmbeddedChecker, sink: ResultSink, **options: object
) -> tuple[Receiver, RefCheckMonitor]:
    monitor = RefCheckMonitor(checker=checker, exporters=[], on_result=[sink])
    limits = TraceLimits(idle=0.1)
    return Receiver(monitor, ReceiverOptions(port=0, limits=limits, **options)).start(), monitor


@pytest.fixture
def downstream(embedded_checker: EmbeddedChecker) -> Iterator[Receiver]:
    """A second receiver, the one `guarded` forwards to."""
    receiver, monitor = _receiver(embedded_checker, ResultSink())
    yield receiver
    receiver.stop()
    monitor.shutdown()


@pytest.fixture
def guarded(
    embedded_checker: EmbeddedChecker, sink: ResultSink, downstream: Receiver
) -> Iterator[Receiver]:
    """A receiver with a token that forwards to `downstream`."""
    receiver, monitor = _receiver(
        embedded_checker, sink, token=TOKEN, forward=f"{downstream.url}/v1/traces"
    )
    yield receiver
    receiver.stop()
    monitor.shutdown()


def request(
    receiver: Receiver, method: str, path: str, body: bytes = b"", **headers: str
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def otlp_json(trace_id: str) -> bytes:
    """An OTLP/JSON export of one OpenInference RAG trace (ids in hex, as OTLP/JSON has them)."""

    def attributes(**values: str) -> list[dict[str, object]]:
        return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]

    root, llm = os.urandom(8).hex(), os.urandom(8).hex()
    spans = [
        {"traceId": trace_id, "spanId": root, "name": "chain", "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
            {"key": "input.value", "value": {"stringValue": "How tall is the Eiffel Tower?"}},
            {"key": "output.value", "value": {"stringValue": ANSWER}},
        ]},
        {"traceId": trace_id, "spanId": os.urandom(8).hex(), "parentSpanId": root,
         "name": "retriever", "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
            {"key": "retrieval.documents.0.document.content", "value": {"stringValue": EIFFEL}},
            {"key": "retrieval.documents.0.document.score", "value": {"doubleValue": 0.5}},
        ]},
        {"traceId": trace_id, "spanId": llm, "parentSpanId": root, "name": "llm", "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
            {"key": "llm.input_messages.0.message.content", "value": {"stringValue": EIFFEL}},
            {"key": "llm.output_messages.0.message.content", "value": {"stringValue": ANSWER}},
        ]},
    ]  # fmt: skip
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def test_gzipped_otlp_json_is_paired_and_forwarded_untouched(
    guarded: Receiver, downstream: Receiver, sink: ResultSink
) -> None:
    trace_id = new_trace_id().hex()
    body = gzip.compress(otlp_json(trace_id))
    status, reply = request(
        guarded, "POST", "/v1/traces", body,
        **{"Content-Type": "application/json", "Content-Encoding": "gzip",
           "Authorization": f"Bearer {TOKEN}"},
    )  # fmt: skip
    assert (status, reply) == (200, b"{}")
    wait_for(traces_done(guarded, 1))
    assert guarded.sink.flush(60)
    [result] = sink.results
    assert result.request.trace_context is not None
    assert result.request.trace_context.trace_id == trace_id
    assert [(r.text, r.score) for r in result.request.references] == [(EIFFEL, 0.5)]
    wait_for(lambda: guarded.forwarder is not None and guarded.forwarder.forwarded == 1)
    wait_for(traces_done(downstream, 1))
    assert downstream.collector.assembly.spans.received == 3
    assert downstream.collector.traces["submitted"] == 1


def test_without_the_token_requests_get_401_and_are_counted(guarded: Receiver) -> None:
    body = export(span(new_trace_id(), os.urandom(8)))
    protobuf = {"Content-Type": "application/x-protobuf"}
    assert request(guarded, "POST", "/v1/traces", body, **protobuf)[0] == 401
    wrong = {**protobuf, "Authorization": "Bearer nope"}
    assert request(guarded, "POST", "/v1/traces", body, **wrong)[0] == 401
    assert request(guarded, "GET", "/v1/stats")[0] == 401
    assert guarded.collector.rejected == {RejectReason.UNAUTHORIZED.value: 3}
    assert guarded.collector.assembly.spans.received == 0
    assert guarded.forwarder is not None and guarded.forwarder.forwarded == 0
    status, stats = request(guarded, "GET", "/v1/stats", Authorization=f"Bearer {TOKEN}")
    assert status == 200
    assert json.loads(stats)["rejected_requests"] == {"unauthorized": 3}
    assert request(guarded, "GET", "/healthz")[0] == 200


def test_other_routes_and_media_types_are_refused_and_counted(guarded: Receiver) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = export(span(new_trace_id(), os.urandom(8)))
    assert request(guarded, "POST", "/v1/profiles", body, **auth)[0] == 404
    assert (
        request(guarded, "POST", "/v1/traces", body, **auth, **{"Content-Type": "text/plain"})[0]
        == 415
    )
    deflate = {**auth, "Content-Type": "application/x-protobuf", "Content-Encoding": "br"}
    assert request(guarded, "POST", "/v1/traces", body, **deflate)[0] == 415
    assert guarded.collector.rejected == {"not_found": 1, "unsupported_media_type": 2}


def test_a_downstream_that_is_down_is_counted_and_the_app_still_gets_200(
    embedded_checker: EmbeddedChecker, sink: ResultSink
) -> None:
    nowhere = f"http://127.0.0.1:{closed_port()}/v1/traces"
    receiver, monitor = _receiver(embedded_checker, sink, forward=nowhere)
    try:
        body = export(span(new_trace_id(), os.urandom(8)))
        status, _ = request(
            receiver, "POST", "/v1/traces", body, **{"Content-Type": "application/x-protobuf"}
        )
        assert status == 200
        assert receiver.forwarder is not None
        wait_for(
            lambda: receiver.collector.stats()["not_forwarded"] == {ForwardReason.FAILED.value: 1}
        )
        assert receiver.forwarder.forwarded == 0
    finally:
        receiver.stop()
        monitor.shutdown()
