"""LLMClient against a real HTTP server: retries are bounded and counted, deadlines hold."""

from __future__ import annotations

import asyncio
import time

import pytest
from litellm.integrations.custom_logger import CustomLogger
from loopback_servers import closed_port
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from scripted_openai_server import PRICED_MODEL, UNPRICED_MODEL, Reply, ScriptedOpenAIServer

from refcheck_callbacks.llm.client import LLMCallError, LLMClient, RetryPolicy, load_litellm

pytestmark = pytest.mark.timeout(60)  # a hang fails fast instead of stalling CI

MESSAGES = [{"role": "user", "content": "Say ok."}]
FAST_RETRIES = RetryPolicy(max_retries=2, backoff=0.05, max_backoff=2.0)


def client(
    server: ScriptedOpenAIServer, model: str = UNPRICED_MODEL, **kwargs: object
) -> LLMClient:
    kwargs.setdefault("retry", FAST_RETRIES)
    return LLMClient(model, api_base=server.api_base, api_key="test-key", **kwargs)  # type: ignore[arg-type]


def test_rate_limit_is_retried_after_the_servers_retry_after(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.queue(Reply(status=429, headers={"Retry-After": "0.6"}, content="slow down"), "ok")
    llm = client(llm_server)
    completion = asyncio.run(llm.complete(MESSAGES))
    requests = llm_server.chat_requests()
    assert completion.texts == ["ok"]
    assert len(requests) == 2 and llm.requests_sent == 2
    assert requests[1].at - requests[0].at >= 0.55  # waited as told, not our 50 ms backoff
    assert completion.usage.requests == 2


def test_server_errors_are_retried_a_bounded_number_of_times(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.queue(*[Reply(status=500, content="boom")] * 5)
    llm = client(llm_server)
    with pytest.raises(LLMCallError) as raised:
        asyncio.run(llm.complete(MESSAGES))
    assert raised.value.kind == "server_error"
    assert "retries exhausted" in str(raised.value)
    assert len(llm_server.chat_requests()) == 3  # the first try and max_retries=2, no more
    assert raised.value.usage.requests == 3


def test_a_server_error_then_success_returns_the_reply(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.queue(Reply(status=503, content="overloaded"), "ok")
    completion = asyncio.run(client(llm_server).complete(MESSAGES))
    assert completion.texts == ["ok"] and len(llm_server.chat_requests()) == 2


def test_client_errors_are_not_retried(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.queue(Reply(status=400, content="bad request"), "never sent")
    with pytest.raises(LLMCallError) as raised:
        asyncio.run(client(llm_server).complete(MESSAGES))
    assert raised.value.kind == "client_error"
    assert len(llm_server.chat_requests()) == 1


def test_a_slow_reply_past_the_deadline_fails_in_time(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.queue(*[Reply(content="late", delay=10.0)] * 3)
    llm = client(llm_server, request_timeout=0.5, deadline=1.2)
    started = time.monotonic()
    with pytest.raises(LLMCallError) as raised:
        asyncio.run(llm.complete(MESSAGES))
    elapsed = time.monotonic() - started
    assert raised.value.kind in ("timeout", "deadline")
    assert elapsed < 6.0  # bounded by the deadline, never the server's 10 s
    assert 1 <= len(llm_server.chat_requests()) <= 3


def test_a_retry_after_beyond_the_deadline_gives_up_at_once(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.queue(Reply(status=429, headers={"Retry-After": "30"}, content="later"), "ok")
    llm = client(llm_server, deadline=2.0, retry=RetryPolicy(max_retries=3, max_backoff=60.0))
    started = time.monotonic()
    with pytest.raises(LLMCallError) as raised:
        asyncio.run(llm.complete(MESSAGES))
    assert raised.value.kind == "deadline" and "rate_limit" in str(raised.value)
    assert time.monotonic() - started < 10  # no 30 s sleep
    assert len(llm_server.chat_requests()) == 1


def test_polls_use_one_request_with_n_where_supported(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.queue(Reply(content=["a", "b", "c"]))
    llm = client(llm_server)
    assert llm.supports_n  # litellm's answer for OpenAI-compatible endpoints
    completion = asyncio.run(llm.complete(MESSAGES, n=3, temperature=0.7))
    [request] = llm_server.chat_requests()
    assert request.body["n"] == 3 and request.body["temperature"] == 0.7
    assert completion.texts == ["a", "b", "c"]


def test_polls_without_n_support_are_parallel_requests(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(lambda request: Reply(content="vote"))
    completion = asyncio.run(client(llm_server, supports_n=False).complete(MESSAGES, n=4))
    requests = llm_server.chat_requests()
    assert len(requests) == 4 and all("n" not in r.body for r in requests)
    assert completion.texts == ["vote"] * 4 and completion.usage.requests == 4


def test_a_server_that_caps_n_gets_single_requests_for_the_rest(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.queue(Reply(content=["a", "b"]), "c", "d")
    completion = asyncio.run(client(llm_server).complete(MESSAGES, n=4))
    assert sorted(completion.texts) == ["a", "b", "c", "d"]
    assert len(llm_server.chat_requests()) == 3


def test_the_concurrency_limit_bounds_requests_in_flight(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(lambda request: Reply(content="ok", delay=0.2))
    llm = client(llm_server, concurrency=2)

    async def many() -> None:
        await asyncio.gather(*(llm.complete(MESSAGES) for _ in range(6)))

    asyncio.run(many())
    assert len(llm_server.chat_requests()) == 6
    assert llm_server.max_in_flight == 2


def test_usage_and_cost_come_back_with_the_completion(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.queue(Reply(content="ok", prompt_tokens=1000, completion_tokens=500))
    priced = asyncio.run(client(llm_server, PRICED_MODEL).complete(MESSAGES))
    assert (priced.usage.prompt_tokens, priced.usage.completion_tokens) == (1000, 500)
    assert priced.usage.cost_usd is not None and priced.usage.cost_usd > 0

    llm_server.queue(Reply(content="ok", prompt_tokens=1000, completion_tokens=500))
    unpriced = asyncio.run(client(llm_server, UNPRICED_MODEL).complete(MESSAGES))
    assert unpriced.usage.prompt_tokens == 1000 and unpriced.usage.cost_usd is None


def test_litellm_retries_are_off_so_only_ours_count(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.queue(*[Reply(status=429, content="no")] * 3)
    with pytest.raises(LLMCallError):
        asyncio.run(client(llm_server, retry=RetryPolicy(max_retries=0)).complete(MESSAGES))
    assert len(llm_server.chat_requests()) == 1


def test_llm_calls_run_with_instrumentation_suppressed(llm_server: ScriptedOpenAIServer) -> None:
    """Instrumentations tracing litellm see the suppress flag: judge calls stay out of traces."""
    litellm = load_litellm()
    seen: list[object] = []

    class SuppressionProbe(CustomLogger):  # type: ignore[misc]
        def log_pre_api_call(self, model: str, messages: object, kwargs: object) -> None:
            seen.append(otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY))

    probe = SuppressionProbe()
    litellm.callbacks.append(probe)
    try:
        llm_server.queue("ok")
        asyncio.run(client(llm_server).complete(MESSAGES))
    finally:
        litellm.callbacks.remove(probe)
    assert seen == [True]
    assert otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY) is None


def test_choices_from_a_capped_n_survive_failing_top_up_requests(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(
        lambda r: Reply(content=["a", "b"]) if r.body.get("n") else Reply(status=500, content="x")
    )
    completion = asyncio.run(client(llm_server).complete(MESSAGES, n=4))
    assert completion.texts == ["a", "b"]
    # One n=4 request, then two single top-ups that each try 1 + max_retries=2 times.
    assert completion.usage.requests == 7 == len(llm_server.chat_requests())


def test_a_missing_api_key_fails_at_once_without_retries(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = LLMClient(UNPRICED_MODEL, api_base=llm_server.api_base, retry=FAST_RETRIES)
    with pytest.raises(LLMCallError) as raised:
        asyncio.run(llm.complete(MESSAGES))
    assert raised.value.kind == "client_error" and "api_key" in str(raised.value)
    assert llm.requests_sent == 1 and llm_server.chat_requests() == []  # one attempt, no retry


def test_a_refused_connection_is_reported_as_a_connection_error() -> None:
    port = closed_port()  # held bound, never listening: connections are refused
    refused = LLMClient(
        UNPRICED_MODEL, api_base=f"http://127.0.0.1:{port}/v1", api_key="k", retry=FAST_RETRIES
    )
    with pytest.raises(LLMCallError) as raised:
        asyncio.run(refused.complete(MESSAGES))
    assert raised.value.kind == "connection"
    assert "retries exhausted: connection after 3 request(s)" in str(raised.value)
