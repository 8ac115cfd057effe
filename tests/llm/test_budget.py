"""Judge budgets: checked before each call, held under concurrency, refused calls sent to the
fallback, spend exported by model and role; against the loopback OpenAI-compatible server,
which reports usage as a provider does (the prompt's tokens counted by the model's tokenizer,
the answer's tokens at most `max_tokens`)."""

from __future__ import annotations

import asyncio

import pytest
from scripted_openai_server import (
    PRICED_MODEL,
    UNPRICED_MODEL,
    Received,
    Reply,
    ScriptedOpenAIServer,
)
from telemetry import Telemetry

from refcheck_callbacks import CheckRequest, CheckResult, RefCheckMonitor
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.errors import BudgetError
from refcheck_callbacks.exporters import names
from refcheck_callbacks.extract.triplets import LLMExtractor
from refcheck_callbacks.llm.budget import (
    BUDGET_EXHAUSTED,
    JudgeBudget,
    SpendLedger,
    TokenPrice,
)
from refcheck_callbacks.llm.loading import load_litellm

pytestmark = pytest.mark.timeout(120)

ANSWER_TOKENS = 100_000
"""What the scripted judge would write: every reply is billed the whole `max_tokens`, the
worst case a reservation must cover."""
FALLBACK = "py:scripted_checkers:KeywordChecker"
"""A real checker that needs no model: the budget's fallback in these tests."""


def _judging(server: ScriptedOpenAIServer, delay: float = 0.3) -> list[tuple[int, int]]:
    """Script the server as a judge that reports true usage; returns the (prompt, completion)
    tokens of every reply it sends, as the provider would bill them."""
    litellm = load_litellm()
    billed: list[tuple[int, int]] = []

    def judge(request: Received) -> Reply:
        prompt = int(litellm.token_counter(model=PRICED_MODEL, messages=request.messages))
        completion = min(ANSWER_TOKENS, int(request.body.get("max_tokens") or ANSWER_TOKENS))
        billed.append((prompt, completion))
        reply = "Claim 1:\nReasoning: Document 1 says so.\nLabel: Entailment"
        return Reply(content=reply, delay=delay, prompt_tokens=prompt, completion_tokens=completion)

    server.respond(judge)
    return billed


def test_the_ledger_holds_what_is_in_flight_and_frees_what_leaves_the_window() -> None:
    now = [0.0]
    ledger = SpendLedger(JudgeBudget(usd=1.0, tokens=1000, window_s=60), clock=lambda: now[0])
    first = ledger.reserve(0.4, 600)
    assert first is not None
    assert ledger.reserve(0.1, 500) is None  # 600 held + 500 > 1000 tokens: not sent
    ledger.settle(first, 0.3, 450)  # the reply used less than it held
    second = ledger.reserve(0.6, 500)
    assert second is not None and ledger.used() == pytest.approx(0.95)
    assert ledger.reserve(0.2, 10) is None  # 0.3 + 0.6 + 0.2 > 1 USD
    ledger.release(second)  # failed before any usage was reported
    assert ledger.spent() == (pytest.approx(0.3), 450)
    now[0] = 60.0  # the settled call leaves the rolling window
    assert ledger.spent() == (0.0, 0) and ledger.reserve(0.9, 990) is not None


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
    billed = _judging(llm_server)
    litellm = load_litellm()
    # About six calls' worth: sixteen sent at once (no reservations) would bill ~14,500 tokens.
    budget = JudgeBudget(usd=0.003, tokens=6000, window_s=3600, fallback_checker=FALLBACK)
    judge = LLMChecker(PRICED_MODEL, llm_server.api_base, "k")
    judge.client.concurrency = 16
    results: list[CheckResult] = []
    with RefCheckMonitor(
        checker=judge,
        placement="thread",
        judge_budget=budget,
        exporters=[telemetry.exporter()],
        on_result=results.append,
        batch_size=16,
        max_wait=0.5,
        conflict=None,
    ) as monitor:
        for n in range(16):
            monitor.submit(
                question=f"When did the museum open? ({n})",
                answer="The Louvre opened to the public in 1793.",
                references=["The Louvre opened to the public in 1793, during the Revolution."],
            )
        assert monitor.flush(60)

    assert len(results) == 16 and llm_server.max_in_flight >= 4  # the calls did overlap
    tokens = sum(prompt + completion for prompt, completion in billed)
    usd = sum(sum(litellm.cost_per_token(PRICED_MODEL, p, c)) for p, c in billed)
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
    _judging(llm_server)
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
    _judging(llm_server, delay=0.0)
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
    _judging(llm_server, delay=0.0)
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
