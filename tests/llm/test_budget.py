"""Judge budgets: checked before each call, held under concurrency, refused calls sent to the
fallback, spend exported by model and role; against the loopback OpenAI-compatible server,
which reports usage as a provider does (the prompt's tokens counted by the model's tokenizer,
the answer's tokens at most `max_tokens`)."""

from __future__ import annotations

import asyncio
import math

import pytest
from billing_judge import USAGE_SHAPES, judging, provider_bill, sixteen_answers
from loopback_servers import closed_port
from scripted_openai_server import (
    PRICED_MODEL,
    UNPRICED_MODEL,
    Reply,
    ScriptedOpenAIServer,
)
from telemetry import Telemetry

from refcheck_callbacks import CheckRequest, RefCheckMonitor
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.errors import BudgetError
from refcheck_callbacks.exporters import names
from refcheck_callbacks.extract.triplets import LLMExtractor
from refcheck_callbacks.llm.budget import (
    BUDGET_EXHAUSTED,
    MAX_REPORTED_TOKENS,
    JudgeBudget,
    SpendLedger,
    TokenPrice,
    reported_count,
)
from refcheck_callbacks.llm.client import LLMCallError, LLMClient
from refcheck_callbacks.support.retry import RetryPolicy

pytestmark = pytest.mark.timeout(120)

FALLBACK = "py:scripted_checkers:KeywordChecker"
"""A real checker that needs no model: the budget's fallback in these tests."""


def test_the_ledger_holds_what_is_in_flight_and_frees_what_leaves_the_window() -> None:
    now = [0.0]
    ledger = SpendLedger(JudgeBudget(usd=1.0, tokens=1000, window_s=60), clock=lambda: now[0])
    first = ledger.reserve(0.4, 600)
    assert first is not None
    assert ledger.reserve(0.1, 500) is None  # 600 held + 500 > 1000 tokens: not sent
    ledger.settle(first, 0.3, 350)  # a reply reporting less is charged its estimate
    assert ledger.spent() == (pytest.approx(0.4), 600)
    second = ledger.reserve(0.5, 400)
    assert second is not None and ledger.used() == pytest.approx(1.0)
    assert ledger.reserve(0.05, 1) is None  # 0.4 + 0.5 + 0.05 > 1 USD... and 1001 tokens
    ledger.release(second)  # refused by the provider: nothing is charged
    assert ledger.spent() == (pytest.approx(0.4), 600)
    third = ledger.reserve(0.1, 100)
    assert third is not None
    ledger.settle(third, 0.2, 300)  # a reply reporting more raises the charge
    assert ledger.spent() == (pytest.approx(0.6), 900)
    now[0] = 60.0  # the settled calls leave the rolling window
    assert ledger.spent() == (pytest.approx(0.0), 0) and ledger.reserve(0.9, 990) is not None


@pytest.mark.parametrize(
    ("reported", "read"),
    [
        (120, 120),
        (0, 0),
        (-500, 0),
        (True, 0),
        (12.2, 13),
        (math.nan, 0),
        (math.inf, MAX_REPORTED_TOKENS),
        (10**30, MAX_REPORTED_TOKENS),
        ("1500", 1500),
        (" 7 ", 7),
        ("lots", 0),
        ("¹⁰⁰⁰", 0),
        ("-5", 0),
        ("9" * 40, MAX_REPORTED_TOKENS),
        (None, 0),
        ({"tokens": 5}, 0),
    ],
)
def test_a_reported_count_is_read_where_it_can_be_and_never_lowers_the_charge(
    reported: object, read: int
) -> None:
    assert reported_count(reported) == read
    ledger = SpendLedger(JudgeBudget(tokens=10**18))
    reservation = ledger.reserve(0.0, 500)
    assert reservation is not None
    ledger.settle(reservation, math.nan, reported_count(reported))
    assert ledger.spent() == (0.0, max(500, read))


def test_an_unpriced_model_refuses_a_usd_cap_unless_priced_or_unlimited(
    llm_server: ScriptedOpenAIServer,
) -> None:
    def judge(budget: JudgeBudget) -> LLMChecker:
        return LLMChecker(UNPRICED_MODEL, llm_server.api_base, "k", budget=budget)

    with pytest.raises(BudgetError, match="no price in litellm's cost map"):
        judge(JudgeBudget(usd=1.0, fallback_checker=FALLBACK))
    price = TokenPrice(input_usd_per_million=1.0, output_usd_per_million=2.0)
    judge(JudgeBudget(usd=1.0, price=price, fallback_checker=FALLBACK))
    judge(JudgeBudget(usd=1.0, price="unlimited", tokens=10_000, fallback_checker=FALLBACK))
    judge(JudgeBudget(tokens=10_000, fallback_checker=FALLBACK))  # a token cap needs no price
    with pytest.raises(ValueError, match="needs a limit"):
        JudgeBudget()


def test_spend_never_passes_the_budget_under_16_concurrent_answers(
    llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    billed = judging(llm_server)
    # About six calls' worth: sixteen sent at once (no reservations) would bill ~14,500 tokens.
    budget = JudgeBudget(usd=0.003, tokens=6000, window_s=3600, fallback_checker=FALLBACK)
    judge = LLMChecker(PRICED_MODEL, llm_server.api_base, "k")
    judge.client.concurrency = 16
    results = sixteen_answers(judge, budget, [telemetry.exporter()])

    assert llm_server.max_in_flight >= 4  # the calls did overlap
    tokens, usd = provider_bill(billed)
    assert tokens <= budget.tokens and usd <= budget.usd  # what the provider billed
    assert tokens > budget.tokens * 0.8  # ...and the budget was not left mostly unspent
    verdicts = [v for r in results for v in r.verdicts]
    judged = [v for v in verdicts if v.decided_by == "llm-adherence"]
    fallen = [v for v in verdicts if v.fallback == BUDGET_EXHAUSTED]
    assert len(judged) == len(billed) > 0 and len(fallen) == 16 - len(billed) > 0
    assert {v.decided_by for v in fallen} == {"keyword"} and all(v.label for v in fallen)

    role = {names.GEN_AI_REQUEST_MODEL: PRICED_MODEL, names.LLM_ROLE: "checker"}
    [refused] = telemetry.points(names.LLM_BUDGET_FALLBACKS).values()
    assert refused.value == len(fallen) and role.items() <= refused.attributes.items()
    spent = {
        p.attributes[names.GEN_AI_TOKEN_TYPE]: p.value
        for p in telemetry.points(names.LLM_TOKENS).values()
    }
    assert spent == {
        "input": sum(p for p, _ in billed),
        "output": sum(c for _, c in billed),
    }
    [cost] = telemetry.points(names.LLM_COST).values()
    assert cost.value == pytest.approx(usd) and role.items() <= cost.attributes.items()
    [used] = telemetry.points(names.LLM_BUDGET_UTILIZATION).values()
    assert 0.5 < used.value <= 1.0
    events = [
        (e[names.CLAIM_DECIDED_BY], e.get(names.CLAIM_FALLBACK))
        for e in (r.log_record.attributes or {} for r in telemetry.evaluation_records())
        if e[names.GEN_AI_EVALUATION_NAME] == names.CLAIM_EVALUATION
    ]
    assert sorted(events, key=str) == sorted(
        [("llm-adherence", None)] * len(judged) + [("keyword", BUDGET_EXHAUSTED)] * len(fallen),
        key=str,
    )


def test_a_refused_extraction_goes_to_the_fallback_extractor(
    llm_server: ScriptedOpenAIServer,
) -> None:
    judging(llm_server)
    extractor = LLMExtractor(
        UNPRICED_MODEL, llm_server.api_base, "k", budget=JudgeBudget(tokens=50)
    )
    request = CheckRequest(
        question="When did it open?", answer="The Louvre opened in 1793. It is in Paris."
    )
    [extraction] = asyncio.run(extractor.extract([request]))
    assert llm_server.chat_requests() == []  # over the budget before it was sent
    assert [c.text for c in extraction.claims] == ["The Louvre opened in 1793.", "It is in Paris."]
    assert any(BUDGET_EXHAUSTED in note and "sentence" in note for note in extraction.notes)
    assert extraction.usage is not None
    [spend] = extraction.usage.by_model
    assert (spend.role, spend.refused, spend.prompt_tokens) == ("extractor", 1, 0)


def test_the_budget_reaches_a_checking_process_and_refuses_there(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default placement builds the judge in a child: the budget goes with the recipe."""
    monkeypatch.setenv("OPENAI_API_BASE", llm_server.api_base)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    judging(llm_server, delay=0.0)
    budget = JudgeBudget(tokens=1, fallback_checker=FALLBACK)  # no call fits
    with RefCheckMonitor(
        checker=f"llm:{UNPRICED_MODEL}", placement="process", judge_budget=budget, exporters=[]
    ) as monitor:
        result = monitor.check(
            answer="The Louvre opened in 1793.", references=["The Louvre opened in 1793."]
        )
    assert llm_server.chat_requests() == []
    [verdict] = result.verdicts
    assert (verdict.decided_by, verdict.fallback) == ("keyword", BUDGET_EXHAUSTED)
    assert result.usage is not None and result.usage.by_model[0].refused == 1


def test_the_monitor_takes_its_budget_from_the_environment(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REFCHECK_JUDGE_BUDGET_* caps a monitor built with no judge_budget keyword."""
    monkeypatch.setenv("OPENAI_API_BASE", llm_server.api_base)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    judging(llm_server, delay=0.0)
    judge = f"llm:{UNPRICED_MODEL}"
    monkeypatch.setenv("REFCHECK_JUDGE_BUDGET_USD", "1")
    with pytest.raises(BudgetError, match="no price in litellm's cost map"):
        RefCheckMonitor(checker=judge, placement="thread", exporters=[])
    monkeypatch.delenv("REFCHECK_JUDGE_BUDGET_USD")
    monkeypatch.setenv("REFCHECK_JUDGE_BUDGET_TOKENS", "1")  # no call fits
    with RefCheckMonitor(checker=judge, placement="thread", exporters=[]) as monitor:
        result = monitor.check(
            answer="The Louvre opened in 1793.", references=["The Louvre opened in 1793."]
        )
    assert llm_server.chat_requests() == []
    [verdict] = result.verdicts
    assert verdict.fallback == BUDGET_EXHAUSTED and verdict.decided_by != "llm-adherence"


# litellm warns of the text and NaN counts it cannot read (then raises): that is the case.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("shape", sorted(USAGE_SHAPES))
def test_the_cap_holds_from_our_estimate_whatever_usage_the_provider_reports(
    shape: str, llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    """Each call is charged its estimate (prompt plus `max_tokens`) before it is sent, and a
    report can only raise that: what the provider bills stays within the cap under 16
    concurrent answers, two rounds of them, and the claims past it go to the fallback,
    counted."""
    billed = judging(llm_server, usage=USAGE_SHAPES[shape])
    budget = JudgeBudget(usd=0.003, tokens=6000, window_s=3600, fallback_checker=FALLBACK)
    judge = LLMChecker(PRICED_MODEL, llm_server.api_base, "k")
    judge.client.concurrency = 16
    judge.client.retry = RetryPolicy(max_retries=3, backoff=0.01)
    results = sixteen_answers(judge, budget, [telemetry.exporter()], rounds=2)

    tokens, usd = provider_bill(billed)
    assert 0 < tokens <= budget.tokens and usd <= budget.usd  # what the provider billed
    verdicts = [v for r in results for v in r.verdicts]
    fallen = [v for v in verdicts if v.fallback == BUDGET_EXHAUSTED]
    assert len(fallen) > 0 and {v.decided_by for v in fallen} == {"keyword"}
    [refused] = telemetry.points(names.LLM_BUDGET_FALLBACKS).values()
    assert refused.value == len(fallen)
    [used] = telemetry.points(names.LLM_BUDGET_UTILIZATION).values()
    # (A huge report raises the charge past the cap: the gauge then reads above 1.)
    assert used.value > 0.5 and (used.value <= 1.0 or shape == "huge")
    exported = telemetry.metrics().get(names.LLM_TOKENS)  # none where nothing was reported
    assert exported is None or all(p.value >= 0 for p in exported.data.data_points)


def test_a_reply_slower_than_the_request_timeout_is_still_billed(
    llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    """The provider writes (and bills) an answer the client stopped waiting for: each timed
    out request, retries included, is charged its estimate."""
    billed = judging(llm_server, delay=5.0)
    budget = JudgeBudget(usd=0.003, tokens=6000, window_s=3600, fallback_checker=FALLBACK)
    client = LLMClient(
        PRICED_MODEL,
        llm_server.api_base,
        "k",
        concurrency=16,
        request_timeout=1.0,
        deadline=20.0,
        retry=RetryPolicy(max_retries=3, backoff=0.01),
    )
    results = sixteen_answers(LLMChecker(client), budget, [telemetry.exporter()], rounds=2)
    tokens, usd = provider_bill(billed)
    assert 0 < tokens <= budget.tokens and usd <= budget.usd
    verdicts = [v for r in results for v in r.verdicts]
    # A timed-out call's retry is refused once the budget is spent: its claims fall back too.
    fallen = [v for v in verdicts if v.fallback == BUDGET_EXHAUSTED]
    assert fallen and all(v.fallback == BUDGET_EXHAUSTED or v.error_type for v in verdicts)


def test_a_call_the_provider_refused_or_never_received_is_not_charged(
    llm_server: ScriptedOpenAIServer,
) -> None:
    """An error status (429, 400, 500) or a refused connection: no work, no charge."""
    ledger = SpendLedger(JudgeBudget(tokens=10**9))
    for status in (429, 400, 500):
        llm_server.queue(Reply(status=status, content="no"))
        client = LLMClient(UNPRICED_MODEL, llm_server.api_base, "k", retry=RetryPolicy(0))
        client.limit_spend(ledger)
        with pytest.raises(LLMCallError):
            asyncio.run(client.complete([{"role": "user", "content": "hi"}], max_tokens=10))
    client = LLMClient(
        UNPRICED_MODEL, f"http://127.0.0.1:{closed_port()}/v1", "k", retry=RetryPolicy(0)
    )
    client.limit_spend(ledger)
    with pytest.raises(LLMCallError):
        asyncio.run(client.complete([{"role": "user", "content": "hi"}], max_tokens=10))
    assert ledger.spent() == (0.0, 0) and ledger.used() == 0.0
