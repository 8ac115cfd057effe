"""Choosing the LLM relevance judge (`relevance=`, `REFCHECK_RELEVANCE`, `refcheck check
--relevance`), and in a monitor: the judge budget it shares, the redact hook that runs before
it sends anything, and its fallbacks in the metrics. Real HTTP on loopback throughout."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from relevance_grader import MODEL, grading, relevance_on
from scripted_openai_server import Reply, ScriptedOpenAIServer
from telemetry import Telemetry

from refcheck_callbacks import ConfigurationError, JudgeBudget, PlacementError, RefCheckMonitor
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.check.relevance.llm_relevance import LLMRelevance
from refcheck_callbacks.cli.main import main
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.pipeline import Pipeline, StageTimeouts
from refcheck_callbacks.engine.placement.components import Recipe, Settings
from refcheck_callbacks.environment_variables import REFCHECK_RELEVANCE, read_environment
from refcheck_callbacks.exporters import names
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.llm.client import LLMClient
from refcheck_callbacks.support.retry import RetryPolicy
from refcheck_callbacks.types import Placement, RelevanceSubject

pytestmark = pytest.mark.timeout(90)

EMAIL = "jane.doe@example.com"
QUESTION = f"What did {EMAIL} order?"
ANSWER = f"The customer {EMAIL} ordered a red bicycle."
REFERENCES = [f"Order 1182 by {EMAIL}: one red bicycle, shipped to Lyon.", "Lyon is in France."]
FALLBACK = "py:scripted_checkers:KeywordChecker"
"""A real checker that needs no model: the judge budget's fallback checker here."""


def monitor(**options: Any) -> RefCheckMonitor:
    options.setdefault("exporters", [])
    return RefCheckMonitor(placement="thread", conflict=None, **options)


def test_the_redact_hook_runs_before_the_request_body_is_sent(
    llm_server: ScriptedOpenAIServer, embedded_checker: Any
) -> None:
    grading(llm_server, {"Document 1": "3"})
    with monitor(
        checker=embedded_checker,
        relevance=relevance_on(llm_server),
        redact=lambda text: text.replace(EMAIL, "[email]"),
    ) as m:
        result = m.check(question=QUESTION, answer=ANSWER, references=REFERENCES)
    [request] = llm_server.chat_requests()
    sent = json.dumps(request.body)
    assert EMAIL not in sent and "jane.doe" not in sent
    assert "What did [email] order?" in request.prompt and "Order 1182 by [email]" in request.prompt
    assert result.relevance_scorer == "llm" and result.references_used[0].relevance == 1.0


def test_a_tiny_token_budget_sends_nothing_and_the_head_scores_counted(
    llm_server: ScriptedOpenAIServer, embedded_checker: Any, telemetry: Telemetry
) -> None:
    grading(llm_server, {}, "3")
    with monitor(
        checker=embedded_checker,
        relevance=relevance_on(llm_server),
        judge_budget=JudgeBudget(tokens=50, fallback_checker=FALLBACK),
        exporters=[telemetry.exporter()],
    ) as m:
        result = m.check(question=QUESTION, answer=ANSWER, references=REFERENCES)
        m.flush(30)
    assert llm_server.chat_requests() == []
    assert {f.reason for f in result.relevance_fallbacks} == {"budget_exhausted"}
    subjects = [f.subject for f in result.relevance_fallbacks]
    assert subjects.count(RelevanceSubject.REFERENCE) == 2 and RelevanceSubject.ANSWER in subjects
    assert all(u.relevance is not None for u in result.references_used)  # the head's
    assert result.usage is not None and result.usage.requests == 0
    [spend] = result.usage.by_model
    assert (spend.role, spend.refused) == ("relevance", 1)

    [refused] = telemetry.points(names.LLM_BUDGET_FALLBACKS).values()
    assert refused.value == 1 and refused.attributes[names.LLM_ROLE] == "relevance"
    counted = {
        (p.attributes[names.RELEVANCE_SUBJECT], p.attributes[names.RELEVANCE_FALLBACK]): p.value
        for p in telemetry.points(names.RELEVANCE_FALLBACKS).values()
    }
    assert counted == {
        ("reference", "budget_exhausted"): 2,
        ("claim", "budget_exhausted"): len(result.claims),
        ("answer", "budget_exhausted"): 1,
    }


def test_the_judge_and_the_relevance_judge_draw_on_one_budget(
    llm_server: ScriptedOpenAIServer,
) -> None:
    """The judge's reply reports more than the whole cap: the relevance call that follows
    must find the shared budget spent (a budget of its own would have sent it)."""
    huge = {"prompt_tokens": 10**6, "completion_tokens": 0, "total_tokens": 10**6}
    verdict = "Claim 1:\nReasoning: Document 1 says so.\nLabel: Entailment"
    llm_server.queue(Reply(verdict, usage=huge))
    client = LLMClient(MODEL, llm_server.api_base, "k", retry=RetryPolicy(max_retries=0))
    with monitor(
        checker=LLMChecker(client),
        relevance=relevance_on(llm_server),
        judge_budget=JudgeBudget(tokens=100_000, fallback_checker=FALLBACK),
    ) as m:
        result = m.check(question=QUESTION, answer="The customer ordered a red bicycle.",
                         references=REFERENCES)  # fmt: skip
    assert len(llm_server.chat_requests()) == 1  # the judge's call only
    assert result.verdicts[0].decided_by == "llm-adherence"
    assert {f.reason for f in result.relevance_fallbacks} == {"budget_exhausted"}


def test_the_default_stays_the_offline_head_and_bad_specs_are_refused(
    llm_server: ScriptedOpenAIServer, embedded_checker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monitor(checker=embedded_checker) as m:
        result = m.check(question=QUESTION, answer=ANSWER, references=REFERENCES)
    assert result.relevance_scorer == "embedded" and llm_server.chat_requests() == []
    for bad in ("nli:model", "llm:", "llm:bespoke-minicheck@hosted_vllm/x", "LLM"):
        with pytest.raises(ConfigurationError, match=r"embedded .* or llm:MODEL"):
            monitor(checker=embedded_checker, relevance=bad)
    with pytest.raises(ConfigurationError, match="needs `name`, `threshold`"):
        monitor(checker=embedded_checker, relevance=object())
    with pytest.raises(ConfigurationError, match="diagnostics"):
        Pipeline(SentenceExtractor(), embedded_checker, diagnostics=False, relevance="llm:m")
    monkeypatch.setenv(REFCHECK_RELEVANCE, "remote:http://x")
    with pytest.raises(ConfigurationError, match=f"{REFCHECK_RELEVANCE}='remote:http://x'"):
        read_environment()
    monkeypatch.setenv(REFCHECK_RELEVANCE, " llm:gpt-4o-mini ")
    assert read_environment().relevance == "llm:gpt-4o-mini"


def test_the_environment_picks_the_llm_judge(
    llm_server: ScriptedOpenAIServer, embedded_checker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REFCHECK_RELEVANCE, f"llm:{MODEL}")
    monkeypatch.setenv("OPENAI_API_BASE", llm_server.api_base)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    grading(llm_server, {}, "3")
    with monitor(checker=embedded_checker) as m:
        result = m.check(question=QUESTION, answer=ANSWER, references=REFERENCES)
    assert len(llm_server.chat_requests()) == 1
    assert result.relevance_scorer == "llm" and result.answer_relevance == 1.0


def test_a_checking_process_takes_a_spec_not_a_built_judge() -> None:
    settings = Settings(Aggregator.STRICT, StageTimeouts(), None, relevance=LLMRelevance(MODEL))
    with pytest.raises(PlacementError, match=r"relevance judge .* 'llm:MODEL'"):
        Recipe.of("sentence", "embedded", settings)
    Recipe.of("sentence", "embedded", Settings(Aggregator.STRICT, StageTimeouts(), None,
                                               relevance=f"llm:{MODEL}"))  # fmt: skip


def test_refcheck_check_takes_relevance(
    llm_server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    grading(llm_server, {"Document 2": "0"}, "3")
    source = tmp_path / "in.json"
    record = {"question": QUESTION, "response": ANSWER, "reference": REFERENCES,
              "claims": [ANSWER]}  # fmt: skip
    source.write_text(json.dumps([record]))
    out = tmp_path / "out.jsonl"
    argv = ["check", "--input", str(source), "--output", str(out), "--no-progress"]
    status = main([*argv, "--relevance", f"llm:{MODEL}", "--relevance-api-base",
                   llm_server.api_base])  # fmt: skip
    assert status == 0
    ours = json.loads(out.read_text())["refcheck"]
    assert ours["relevance_scorer"] == "llm" and "relevance_fallbacks" not in ours
    assert [r["relevance"] for r in ours["references"]] == [1.0, 0.0]
    assert main([*argv, "--relevance", "llm"]) == 2


class _Recording:
    """A relevance judge of an app's own: the LLM judge, noting the thread it is awaited on,
    or one that raises."""

    name = "mine"
    threshold = 0.5

    def __init__(self, inner: LLMRelevance | None) -> None:
        self.inner = inner
        self.threads: list[int] = []

    async def judge(self, request: Any, claims: Any) -> Any:
        self.threads.append(threading.get_ident())
        if self.inner is None:
            raise RuntimeError("my scorer broke")
        return await self.inner.judge(request, claims)


def test_the_judge_is_awaited_on_the_worker_never_on_the_apps_thread(
    llm_server: ScriptedOpenAIServer, embedded_checker: Any
) -> None:
    grading(llm_server, {}, "3")
    mine, broken = _Recording(relevance_on(llm_server)), _Recording(None)
    for judge in (mine, broken):
        with monitor(checker=embedded_checker, relevance=judge) as m:
            result = m.check(question=QUESTION, answer=ANSWER, references=REFERENCES)
            assert judge.threads and threading.get_ident() not in judge.threads
    assert len(llm_server.chat_requests()) == 1  # the broken one sent nothing
    assert {f.reason for f in result.relevance_fallbacks} == {"RuntimeError"}
    assert result.relevance_scorer == "mine" and result.references_used[0].relevance is not None


def test_a_checking_process_builds_the_judge_from_its_spec(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_BASE", llm_server.api_base)  # the child inherits it
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    grading(llm_server, {"Document 1": "3"}, "1")
    with RefCheckMonitor(placement="process", relevance=f"llm:{MODEL}", exporters=[]) as m:
        result = m.check(question=QUESTION, answer=ANSWER, references=REFERENCES)
    assert result.placement is Placement.PROCESS and len(llm_server.chat_requests()) == 1
    assert [u.relevance for u in result.references_used] == [1.0, pytest.approx(1 / 3)]
