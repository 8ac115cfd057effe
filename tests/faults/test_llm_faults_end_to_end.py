"""An LLM judge that fails in every way a provider can: each answer ends with a defined outcome in
bounded time, and the failure's kind is in the result, the metrics and `monitor.stats`.

Issue 19 found bounded retries held (a 3600 s Retry-After was capped), but LLM failures showed
in results and metrics, not in `monitor.stats`. The provider here is a real HTTP server on
127.0.0.1: the scripted OpenAI server, or a raw socket server for a slow drip of bytes and for
bodies no client expects.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest
from loopback_servers import RawHTTPServer, closed_port, http_reply
from results import ResultSink
from scripted_openai_server import UNPRICED_MODEL, Reply, ScriptedOpenAIServer
from telemetry import Telemetry

from refcheck_callbacks import Outcome, RefCheckMonitor, Tally
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.exporters import names
from refcheck_callbacks.llm.client import LLMClient, RetryPolicy

pytestmark = pytest.mark.timeout(120)

REFERENCES = ["The Louvre opened to the public in 1793."]
ANSWERS = [f"The Louvre opened in {1790 + i}." for i in range(4)]
DEADLINE = 2.0
SLACK = 4.0


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


def _run(api_base: str, telemetry: Telemetry) -> tuple[RefCheckMonitor, ResultSink, float]:
    client = LLMClient(
        UNPRICED_MODEL,
        api_base,
        "k",
        request_timeout=1.0,
        deadline=DEADLINE,
        retry=RetryPolicy(max_retries=2, backoff=0.05, max_backoff=60.0),
        supports_n=True,
    )
    sink = ResultSink()
    monitor = RefCheckMonitor(
        checker=LLMChecker(client), on_result=sink, exporters=[telemetry.exporter()]
    )
    started = time.monotonic()
    with monitor:
        for answer in ANSWERS:
            assert monitor.submit(answer=answer, references=REFERENCES)
        assert monitor.flush(60)
    return monitor, sink, time.monotonic() - started


def _assert_failed_and_counted(
    monitor: RefCheckMonitor, sink: ResultSink, telemetry: Telemetry, kinds: set[str]
) -> None:
    assert len(sink.results) == len(ANSWERS)
    assert {r.outcome for r in sink.results} == {Outcome.ERROR}
    seen = {r.error_type for r in sink.results}
    assert seen <= kinds, seen
    failed = monitor.stats.snapshot().get(Tally.FAILED.value, {})
    assert sum(failed.values()) == len(ANSWERS) and set(failed) == seen
    responses = telemetry.points(names.RESPONSES)
    assert sum(p.value for p in responses.values()) == len(ANSWERS)


SCRIPTED: dict[str, tuple[Callable[[], Reply], set[str]]] = {
    "429 with a Retry-After of an hour": (
        lambda: Reply(status=429, headers={"Retry-After": "3600"}, content="slow down"),
        {"deadline", "rate_limit"},
    ),
    "5xx": (lambda: Reply(status=503, content="overloaded"), {"server_error"}),
    "hang": (
        lambda: Reply(content="Claim 1:\nLabel: Entailment", delay=30.0),
        {"timeout", "deadline"},
    ),
    "garbage JSON": (
        lambda: Reply(raw=b"\x00\xffnot json at all{{{"),
        {"client_error", "server_error"},
    ),
}


@pytest.mark.parametrize("fault", list(SCRIPTED))
def test_a_failing_provider_fails_each_answer_in_time_with_its_kind_counted(
    fault: str, llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    reply, kinds = SCRIPTED[fault]
    llm_server.respond(lambda request: reply())
    monitor, sink, elapsed = _run(llm_server.api_base, telemetry)
    _assert_failed_and_counted(monitor, sink, telemetry, kinds)
    assert elapsed < DEADLINE + SLACK, f"{fault}: {elapsed:.1f}s"


@pytest.fixture
def raw_server(request: pytest.FixtureRequest) -> Iterator[RawHTTPServer]:
    reply, chunk, pause = request.param
    server = RawHTTPServer(reply, chunk=chunk, pause=pause)
    yield server
    server.close()


RAW = {
    "slow drip": ((lambda _: http_reply(_completion("Claim 1:\nLabel: Entailment" * 20))), 8, 0.1),
    "10 MB body of garbage": ((lambda _: http_reply(b"x" * 10_000_000)), 1 << 16, 0.0),
    "10 MB reply": ((lambda _: http_reply(_completion("Reasoning. " * 1_000_000))), 1 << 16, 0.0),
}


@pytest.mark.parametrize("raw_server", list(RAW.values()), ids=list(RAW), indirect=True)
def test_a_provider_sending_what_no_client_expects_fails_each_answer_in_time(
    raw_server: RawHTTPServer, telemetry: Telemetry
) -> None:
    monitor, sink, elapsed = _run(f"{raw_server.url}/v1", telemetry)
    assert len(sink.results) == len(ANSWERS)
    assert {r.outcome for r in sink.results} == {Outcome.ERROR}
    failed = monitor.stats.snapshot().get(Tally.FAILED.value, {})
    assert sum(failed.values()) == len(ANSWERS)
    assert elapsed < DEADLINE + SLACK, f"{elapsed:.1f}s"


def test_a_refused_connection_fails_each_answer_with_its_kind_counted(
    telemetry: Telemetry,
) -> None:
    """Issue 19: a refused connection was reported as `server_error`. `deadline` when the
    retries of a refused connection reach the client's deadline first."""
    monitor, sink, _ = _run(f"http://127.0.0.1:{closed_port()}/v1", telemetry)
    _assert_failed_and_counted(monitor, sink, telemetry, {"connection", "deadline"})
