"""`refcheck collect` as a user runs it: `--help` documents every option, and the command, given
an app's trace over OTLP/HTTP, sends the Contradiction record with the app's trace id to
`--export-endpoint` over OTLP/HTTP, and on SIGTERM checks the traces still open before it
stops."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otlp_export import export, new_trace_id, span

from refcheck_callbacks.cli.main import build_parser

EIFFEL = "The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889."
QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 450 metres tall."

pytestmark = pytest.mark.slow


def test_help_documents_every_option() -> None:
    parser = build_parser()
    [collect] = [
        choice
        for action in parser._subparsers._group_actions  # type: ignore[union-attr]
        for name, choice in action.choices.items()  # type: ignore[union-attr]
        if name == "collect"
    ]
    text = collect.format_help()
    for action in collect._actions:
        for flag in action.option_strings:
            assert flag in text
        assert action.help, action.option_strings
    for needed in ("--export-endpoint", "--forward", "--token", "--idle", "--grpc-port"):
        assert needed in text


class _Capture(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP back end on loopback that keeps what it is sent, by path."""

    received: dict[str, list[bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.setdefault(self.path, []).append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def backend() -> Iterator[tuple[str, dict[str, list[bytes]]]]:
    received: dict[str, list[bytes]] = {}
    handler = type("Handler", (_Capture,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def _app_trace() -> tuple[bytes, str, str]:
    trace_id, root = new_trace_id(), os.urandom(8)
    body = export(
        span(trace_id, root, b"", "chain", {
            "openinference.span.kind": "CHAIN", "input.value": QUESTION, "output.value": ANSWER,
        }),
        span(trace_id, os.urandom(8), root, "retriever", {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": EIFFEL,
        }),
        span(trace_id, os.urandom(8), root, "llm", {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.content": f"Context: {EIFFEL}\\n{QUESTION}",
            "llm.output_messages.0.message.content": ANSWER,
        }),
    )  # fmt: skip
    return body, trace_id.hex(), root.hex()


def test_collect_exports_the_contradiction_on_the_apps_trace(
    backend: tuple[str, dict[str, list[bytes]]],
) -> None:
    endpoint, received = backend
    command = [
        sys.executable, "-m", "refcheck_callbacks.cli", "collect", "--port", "0",
        "--grpc-port", "off", "--idle", "0.2", "--placement", "thread",
        "--export-endpoint", endpoint,
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "receiving OTLP/HTTP traces on" in line, (
            process.stderr.read() if process.stderr else ""
        )
        url = line.rsplit(" ", 1)[-1].strip()
        body, trace_id, root_id = _app_trace()
        post = urllib.request.Request(
            url, body, {"Content-Type": "application/x-protobuf"}, method="POST"
        )
        with urllib.request.urlopen(post, timeout=30) as reply:
            assert reply.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr

    records = []
    for raw in received.get("/v1/logs", []):
        logs = ExportLogsServiceRequest()
        logs.ParseFromString(raw)
        records += [r for rl in logs.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    labels = {(a.key, a.value.string_value) for r in records for a in r.attributes}
    assert ("gen_ai.evaluation.score.label", "contradiction") in labels
    assert {r.trace_id.hex() for r in records} == {trace_id}
    spans = []
    for raw in received.get("/v1/traces", []):
        traces = ExportTraceServiceRequest()
        traces.ParseFromString(raw)
        spans += [s for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans]
    [evaluation] = [s for s in spans if s.name == "evaluate refcheck"]
    assert evaluation.trace_id.hex() == trace_id
    assert evaluation.parent_span_id.hex() == root_id


def test_the_trace_limits_defaults_and_help_come_from_trace_limits() -> None:
    """One flag per `TraceLimits` field, its default the field's, its help the field's."""
    import dataclasses

    from refcheck_callbacks.cli.collect import _options
    from refcheck_callbacks.integrations.otlp.traces import TraceLimits

    parser = build_parser()
    options = _options(parser.parse_args(["collect"]))
    assert options.limits == TraceLimits()
    [collect] = [
        choice
        for action in parser._subparsers._group_actions  # type: ignore[union-attr]
        for name, choice in action.choices.items()  # type: ignore[union-attr]
        if name == "collect"
    ]
    helps = {action.dest: action.help for action in collect._actions}
    for limit in dataclasses.fields(TraceLimits):
        assert limit.metadata["help"] in str(helps[limit.name])
    changed = _options(parser.parse_args(["collect", "--remembered-traces", "7", "--idle", "2"]))
    assert (changed.limits.remembered_traces, changed.limits.idle) == (7, 2.0)


def test_a_forward_url_it_cannot_post_to_fails_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from refcheck_callbacks.cli.main import main

    assert main(["collect", "--port", "0", "--forward", "ftp://127.0.0.1/v1/traces"]) == 2
    assert "--forward takes an http:// or https:// URL" in capsys.readouterr().err
