"""RemoteChecker against a real HTTP server on 127.0.0.1 that plays the service's part.

The scripted server answers what each test needs (verdicts, 429 / 503 with Retry-After, a
slow, garbled, huge or out-of-range reply); the real service on Ray Serve is in tests/serve.
Every failure must come back as counted error verdicts within the deadline, never as an
exception. Time bounds are the configured deadline (or wait) plus one `SLACK`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Sequence

import pytest
from deadlines import SLACK
from loopback_servers import HugeReplyServer, closed_port
from memory import peak_rss_growth
from pydantic import ValidationError
from scripted_openai_server import Received, Reply, ScriptedOpenAIServer

from refcheck_callbacks import (
    CheckItem,
    Claim,
    Label,
    Outcome,
    Placement,
    RefCheckMonitor,
    Reference,
)
from refcheck_callbacks.check.remote import RemoteChecker
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.extract.remote import RemoteExtractor
from refcheck_callbacks.llm.client import RetryPolicy
from refcheck_callbacks.remote.options import RemoteOptions
from refcheck_callbacks.remote.wire import (
    DEFAULT_MAX_REPLY_BYTES,
    TOKEN_ENV,
    CheckCall,
    CheckReply,
    ErrorReply,
)
from refcheck_callbacks.types import Verdict

FAST_RETRY = RetryPolicy(max_retries=4, backoff=0.05, max_backoff=0.3)


def _items(
    requests: int = 2, claims: int = 3, text: str = "Paris is in France."
) -> list[CheckItem]:
    out = []
    for r in range(requests):
        references = [Reference(text=f"{text} Document {r}.", id=f"doc-{r}")]
        out.extend(
            CheckItem(claim=Claim(text=f"claim {r}.{c}"), references=references,
                      request_id=f"req-{r}", claim_index=c)
            for c in range(claims)
        )  # fmt: skip
    return out


def _verdicts_for(received: Received) -> Reply:
    """Entailment for even claim indexes, contradiction for odd, read from the real call."""
    call = CheckCall.model_validate(received.body)
    verdicts = [
        Verdict(label=Label.ENTAILMENT if c.claim_index % 2 == 0 else Label.CONTRADICTION,
                confidence=0.9)
        for c in call.claims
    ]  # fmt: skip
    return Reply(
        raw=CheckReply(checker="scripted-nli", verdicts=verdicts).model_dump_json().encode()
    )


def _then_verdicts(*first: Reply) -> Callable[[Received], Reply]:
    """Hands out `first` in order, then real verdicts."""
    pending = list(first)
    return lambda received: pending.pop(0) if pending else _verdicts_for(received)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = ErrorReply(error="scripted", message=message).model_dump_json().encode()
    return Reply(status=status, raw=body, headers=headers or {})


def _check(checker: RemoteChecker, items: Sequence[CheckItem]) -> tuple[list[Verdict], float]:
    started = time.perf_counter()
    verdicts = asyncio.run(checker.check(items))
    return verdicts, time.perf_counter() - started


def test_one_request_carries_the_whole_batch_with_each_requests_references_once(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "s3cret")
    llm_server.respond(_verdicts_for)
    checker = RemoteChecker(llm_server.url)
    verdicts, _ = _check(checker, _items(requests=2, claims=3))
    [request] = llm_server.received
    assert request.path == "/v1/check"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert len(request.body["requests"]) == 2 and len(request.body["claims"]) == 6
    assert [v.label for v in verdicts] == [
        Label.ENTAILMENT,
        Label.CONTRADICTION,
        Label.ENTAILMENT,
    ] * 2
    assert checker.served_by == "scripted-nli"
    assert checker.stats() == {"calls": 1, "requests_sent": 1, "failures": {}}


def test_one_options_object_sets_checker_and_extractor_and_a_bad_value_fails_where_made(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "from-the-environment")
    options = RemoteOptions(token="given", concurrency=2, max_call_inputs=4)
    checker, extractor = (
        RemoteChecker(llm_server.url, options),
        RemoteExtractor(llm_server.url, options),
    )
    assert checker.client.options is extractor.client.options is options
    assert "given" not in repr(options)  # a token never lands in a log line
    llm_server.respond(_verdicts_for)
    _check(checker, _items(1, 6))
    # concurrency 2: the two calls travel at once and may arrive in either order
    assert sorted(len(r.body["claims"]) for r in llm_server.received) == [2, 4]
    assert {r.headers["authorization"] for r in llm_server.received} == {"Bearer given"}
    with pytest.raises(ValidationError, match="deadline"):
        RemoteOptions(deadline=0)
    with pytest.raises(ValidationError, match="max_retries"):
        RemoteOptions(max_retries=3)  # type: ignore[call-arg]  # retry=RetryPolicy(...)


def test_429_and_503_are_retried_after_the_servers_retry_after(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(
        _then_verdicts(_error(429, "slow down", {"retry-after": "0.25"}), _error(503, "warming up"))
    )
    checker = RemoteChecker(llm_server.url, RemoteOptions(retry=FAST_RETRY, deadline=5))
    verdicts, _ = _check(checker, _items(1, 2))
    assert [v.label for v in verdicts] == [Label.ENTAILMENT, Label.CONTRADICTION]
    first, second, _ = llm_server.received
    assert second.at - first.at >= 0.24  # waited the server's Retry-After
    assert checker.stats()["requests_sent"] == 3 and checker.stats()["failures"] == {}


def test_a_long_retry_after_is_capped(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(_then_verdicts(_error(503, "maintenance", {"retry-after": "3600"})))
    checker = RemoteChecker(llm_server.url, RemoteOptions(retry=FAST_RETRY, deadline=5))
    verdicts, elapsed = _check(checker, _items(1, 1))
    assert verdicts[0].label is Label.ENTAILMENT
    assert elapsed < FAST_RETRY.max_backoff + SLACK


def test_retries_that_would_pass_the_deadline_end_as_counted_errors_in_time(
    llm_server: ScriptedOpenAIServer,
) -> None:
    # A wait past the deadline is not slept: sleeping 3 s would overrun it by more than SLACK.
    llm_server.respond(lambda r: _error(503, "overloaded", {"retry-after": "3"}))
    deadline = 1.2
    checker = RemoteChecker(
        llm_server.url,
        RemoteOptions(retry=RetryPolicy(max_retries=10, max_backoff=3), deadline=deadline),
    )
    verdicts, elapsed = _check(checker, _items(1, 2))
    assert elapsed < deadline + SLACK
    assert all(v.label is None for v in verdicts)
    assert "unavailable" in (verdicts[0].error or "") and "overloaded" in (verdicts[0].error or "")
    assert checker.stats()["failures"] == {"unavailable": 1}


def test_a_slow_service_is_given_up_at_the_deadline(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(lambda r: Reply(delay=10, raw=b"{}"))
    checker = RemoteChecker(llm_server.url, RemoteOptions(deadline=0.6))
    verdicts, elapsed = _check(checker, _items(1, 1))
    assert elapsed < checker.client.options.deadline + SLACK
    assert verdicts[0].label is None and "deadline" in (verdicts[0].error or "")


def test_a_deadline_reached_after_failed_tries_names_what_the_tries_met(
    llm_server: ScriptedOpenAIServer,
) -> None:
    # Refused, then too slow: the failure counted is the refusal, and the message says both.
    llm_server.respond(_then_verdicts(_error(503, "warming up"), Reply(delay=10, raw=b"{}")))
    checker = RemoteChecker(llm_server.url, RemoteOptions(retry=FAST_RETRY, deadline=0.8))
    verdicts, _ = _check(checker, _items(1, 1))
    error = verdicts[0].error or ""
    assert verdicts[0].label is None and "(unavailable)" in error, error
    assert "warming up" in error and "0.8s deadline after 2 attempts" in error
    assert checker.stats()["failures"] == {"unavailable": 1}


def test_a_service_that_is_down_is_retried_then_failed_within_the_deadline() -> None:
    checker = RemoteChecker(
        f"http://127.0.0.1:{closed_port()}", RemoteOptions(retry=FAST_RETRY, deadline=1.0)
    )
    verdicts, elapsed = _check(checker, _items(2, 2))
    assert elapsed < checker.client.options.deadline + SLACK
    assert all(v.label is None and "connection" in (v.error or "") for v in verdicts)
    stats = checker.stats()
    assert stats["calls"] == 1 and stats["failures"] == {"connection": 1}
    assert isinstance(stats["requests_sent"], int) and stats["requests_sent"] > 1


def test_a_rejected_call_is_not_retried_and_says_what_the_service_said(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(lambda r: _error(401, "the bearer token is wrong"))
    checker = RemoteChecker(llm_server.url, RemoteOptions(token="wrong", retry=FAST_RETRY))
    verdicts, _ = _check(checker, _items(1, 2))
    assert len(llm_server.received) == 1
    assert all("the bearer token is wrong" in (v.error or "") for v in verdicts)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"checker": "x", "verdicts": []}',
        b'{"checker": "x", "verdicts": [{"label": null}]}',
    ],
)
def test_a_reply_that_breaks_the_protocol_fails_its_claims(
    llm_server: ScriptedOpenAIServer, body: bytes
) -> None:
    llm_server.respond(lambda r: Reply(raw=body))
    checker = RemoteChecker(llm_server.url)
    verdicts, _ = _check(checker, _items(1, 2))
    assert len(verdicts) == 2 and all(v.label is None for v in verdicts)
    assert "bad_reply" in (verdicts[0].error or "")
    assert checker.stats()["failures"] == {"bad_reply": 1}


def test_a_batch_over_the_size_cap_is_split_in_order_and_an_unsendable_request_fails_alone(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(_verdicts_for)
    huge = _items(1, 2, text="x" * 6000)
    items = _items(4, 2) + [i.model_copy(update={"request_id": "huge"}) for i in huge]
    checker = RemoteChecker(llm_server.url, RemoteOptions(max_request_bytes=4000))
    verdicts, _ = _check(checker, items)
    assert len(llm_server.received) >= 2
    assert all(len(r.body["claims"]) > 1 for r in llm_server.received)  # never one per claim
    assert [v.label for v in verdicts[:8]] == [Label.ENTAILMENT, Label.CONTRADICTION] * 4
    assert all(v.label is None and "too_large" in (v.error or "") for v in verdicts[8:])
    assert all("x" * 6000 not in json.dumps(r.body) for r in llm_server.received)


def test_a_batch_over_the_call_limit_goes_in_parts_and_a_request_over_it_is_cut(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(_verdicts_for)
    items = _items(2, 3) + [i.model_copy(update={"request_id": "long"}) for i in _items(1, 10)]
    checker = RemoteChecker(llm_server.url, RemoteOptions(max_call_inputs=4))
    verdicts, _ = _check(checker, items)
    sent = llm_server.received
    assert sorted(len(r.body["claims"]) for r in sent) == [2, 3, 3, 4, 4]
    assert all(len(r.body["requests"]) == 1 for r in sent)  # each whole, or a part of "long"
    assert [v.label for v in verdicts] == [
        Label.ENTAILMENT if i.claim_index % 2 == 0 else Label.CONTRADICTION for i in items
    ]
    assert checker.stats() == {"calls": 5, "requests_sent": 5, "failures": {}}


def test_calls_in_flight_are_bounded_by_concurrency(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(lambda r: Reply(delay=0.15, raw=_verdicts_for(r).raw))
    checker = RemoteChecker(llm_server.url, RemoteOptions(concurrency=2))

    async def many() -> list[list[Verdict]]:
        return await asyncio.gather(*(checker.check(_items(1, 1)) for _ in range(6)))

    results = asyncio.run(many())
    assert all(r[0].label is Label.ENTAILMENT for r in results)
    assert llm_server.max_in_flight == 2


def test_in_a_monitor_results_say_service_and_a_dead_service_is_a_counted_error() -> None:
    up = RemoteChecker(
        f"http://127.0.0.1:{closed_port()}", RemoteOptions(retry=FAST_RETRY, deadline=0.5)
    )
    with RefCheckMonitor(checker=up, exporters=[]) as monitor:
        result = monitor.check(answer="Paris is in France.", references=["Paris is in France."])
    assert result.placement is Placement.SERVICE
    assert result.outcome is Outcome.ERROR and result.error_type == "CheckError"
    assert "remote check failed (connection)" in (result.message or "")
    assert result.timings["check"] < up.client.options.deadline + SLACK


def test_the_remote_spec_builds_remote_components(llm_server: ScriptedOpenAIServer) -> None:
    checker = build_checker(f"remote:{llm_server.url}/prefix")
    assert isinstance(checker, RemoteChecker)
    assert checker.client.url == f"{llm_server.url}/prefix"
    llm_server.respond(_verdicts_for)
    _check(checker, _items(1, 1))
    assert llm_server.received[0].path == "/prefix/v1/check"


def test_a_forked_child_checks_on_connections_of_its_own(llm_server: ScriptedOpenAIServer) -> None:
    llm_server.respond(_verdicts_for)
    checker = RemoteChecker(llm_server.url)
    assert _check(checker, _items(1, 1))[0][0].label is Label.ENTAILMENT
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only when its own check worked
        verdicts, _ = _check(checker, _items(1, 2))
        os._exit(0 if [v.label for v in verdicts] == [Label.ENTAILMENT, Label.CONTRADICTION] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(llm_server.received) == 2


def test_a_service_with_a_smaller_cap_gets_the_batch_in_parts(
    llm_server: ScriptedOpenAIServer,
) -> None:
    cap = 1500

    def capped(received: Received) -> Reply:
        size = len(json.dumps(received.body))
        return _error(413, f"over the {cap}-byte cap") if size > cap else _verdicts_for(received)

    llm_server.respond(capped)
    checker = RemoteChecker(llm_server.url)
    verdicts, _ = _check(checker, _items(4, 2))
    assert [v.label for v in verdicts] == [Label.ENTAILMENT, Label.CONTRADICTION] * 4
    assert checker.stats()["failures"] == {}


HUGE = 1_500_000_000
"""A reply of 1.5 GB: a wrong URL, a proxy's error page, a broken service."""


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_huge_reply_fails_at_the_cap_without_being_read_whole(declared: bool) -> None:
    length = f"Content-Length: {HUGE}\r\n" if declared else ""
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}Connection: close\r\n\r\n"
    server = HugeReplyServer(head.encode() + b'{"checker": "x", "verdicts": [', HUGE)
    checker = RemoteChecker(server.url, RemoteOptions(deadline=30))
    try:
        with peak_rss_growth() as growth:
            verdicts, elapsed = _check(checker, _items(1, 2))
    finally:
        server.close()
    assert elapsed < checker.client.options.deadline + SLACK
    assert all(v.label is None and "(bad_reply)" in (v.error or "") for v in verdicts)
    assert "reply larger than 67,108,864 bytes" in (verdicts[0].error or "")
    assert checker.stats()["failures"] == {"bad_reply": 1}
    # The rest was never read: the server got rid of the cap and what sockets buffer, at most.
    assert server.sent < DEFAULT_MAX_REPLY_BYTES + 32 * 1024 * 1024, server.sent
    assert growth.bytes < 4 * DEFAULT_MAX_REPLY_BYTES, f"{growth.bytes / 2**20:.0f} MiB"


def _reply(verdicts: str) -> Callable[[Received], Reply]:
    body = f'{{"checker": "scripted", "verdicts": [{verdicts}]}}'.encode()
    return lambda received: Reply(raw=body)


ENTAILED = '{"label": "entailment", "confidence": 0.9'


@pytest.mark.parametrize(
    ("verdict", "words"),
    [
        (ENTAILED + ', "evidence": [{"reference_index": 99, "span": {"start": 0, "end": 5}}]}',
         "verdicts[0] cites reference 99; its claim was sent with 1"),
        (ENTAILED + ', "evidence": [{"reference_index": 0, "span": {"start": 0, "end": 500}}]}',
         "verdicts[0] cites reference 0 up to character 500; it has 31"),
        (ENTAILED + ', "probabilities": {"entailment": NaN}}',
         "verdicts.0.probabilities.entailment is nan"),
        (ENTAILED + ', "usage": {"cost_usd": 1e999}}', "verdicts.0.usage.cost_usd is inf"),
    ],
    ids=["reference_index", "span", "nan", "overflow"],
)  # fmt: skip
def test_a_reply_that_points_outside_the_call_or_holds_non_finite_numbers_fails(
    llm_server: ScriptedOpenAIServer, verdict: str, words: str
) -> None:
    llm_server.respond(_reply(verdict))
    checker = RemoteChecker(llm_server.url)
    [result], _ = _check(checker, _items(1, 1))
    assert result.label is None and "(bad_reply)" in (result.error or "")
    assert words in (result.error or ""), result.error
    assert checker.stats()["failures"] == {"bad_reply": 1}
