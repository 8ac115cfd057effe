"""End to end: a LangChain RAG chain, LLMExtractor + LLMChecker on one OpenAI-compatible server,
verdicts exported through the real OpenTelemetry SDK.

Every LLM in the picture (the app's own chat model, the claim extractor, the judge) talks real
HTTP to the scripted server, as they would to one vLLM deployment configured by `api_base`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_chains import CORPUS, KeywordRetriever, rag_chain
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from scripted_openai_server import (
    PRICED_MODEL,
    UNPRICED_MODEL,
    Received,
    Reply,
    ScriptedOpenAIServer,
)
from telemetry import Telemetry

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.cli.main import main
from refcheck_callbacks.contract.registry import build_checker, build_extractor
from refcheck_callbacks.exporters import names
from refcheck_callbacks.extract.triplets import LLMExtractor
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.llm.client import load_litellm

pytestmark = pytest.mark.timeout(60)  # a hang fails fast instead of stalling CI

QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 330 metres tall. It was built in 1850."
REFUSAL = "I'm sorry, I don't know."
TRIPLETS = '("Eiffel Tower", "is", "330 metres tall")\n("Eiffel Tower", "was built in", "1850")'
JUDGEMENT = """Claim 1:
Reasoning: Document 1 gives the height as 330 metres.
Evidence: 1
Label: Entailment
Claim 2:
Reasoning: Document 1 says it was built in 1887-1889, not 1850.
Evidence: 1
Label: Contradiction
Type: entity
Suggestion: Eiffel Tower was built in 1887-1889"""


class OpenAICompatibleChat(BaseChatModel):
    """The app's chat model: litellm against the same OpenAI-compatible endpoint."""

    model: str
    api_base: str

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        roles = {"human": "user", "ai": "assistant", "system": "system"}
        response = load_litellm().completion(
            model=self.model,
            api_base=self.api_base,
            api_key="k",
            messages=[{"role": roles[m.type], "content": m.content} for m in messages],
        )
        text = response.choices[0].message.content
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def scripted(answer: str) -> Any:
    """Replies by role: the app's answer, the extractor's triplets, the judge's labels."""

    def reply(request: Received) -> Reply:
        system = request.messages[0]["content"]
        if "Answer from this context only" in system:
            return Reply(content=answer)
        if "knowledge triplets" in system:
            return Reply(content="NONE" if answer == REFUSAL else TRIPLETS)
        return Reply(content=JUDGEMENT, prompt_tokens=400, completion_tokens=80)

    return reply


def run_chain(server: ScriptedOpenAIServer, telemetry: Telemetry, answer: str) -> CheckResult:
    server.respond(scripted(answer))
    results: list[CheckResult] = []
    monitor = RefCheckMonitor(
        extractor=LLMExtractor(UNPRICED_MODEL, api_base=server.api_base, api_key="k"),
        checker=LLMChecker(
            PRICED_MODEL, api_base=server.api_base, api_key="k", hallucination_types=True
        ),
        exporters=[telemetry.exporter()],
        on_result=results.append,
    )
    with monitor:
        chain = rag_chain(
            KeywordRetriever(documents=CORPUS),
            OpenAICompatibleChat(model=UNPRICED_MODEL, api_base=server.api_base),
        )
        output = chain.invoke(QUESTION, config={"callbacks": [RefCheckCallbackHandler(monitor)]})
        assert output == answer
        assert monitor.flush(30)
    [result] = results
    return result


def test_a_langchain_answer_is_checked_by_llms_and_exported(
    llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    result = run_chain(llm_server, telemetry, ANSWER)

    assert result.outcome.value == "checked" and result.response_label is not None
    assert result.response_label.value == "contradiction"
    assert [c.triplet.object for c in result.claims if c.triplet] == ["330 metres tall", "1850"]
    assert result.verdicts[1].suggestion == "Eiffel Tower was built in 1887-1889"
    assert result.request.references[0].id == "eiffel"
    assert len(llm_server.chat_requests()) == 3  # the app's answer, one extraction, one judge

    [span] = [s for s in telemetry.spans.get_finished_spans() if s.name == names.EVALUATION_SPAN]
    assert span.attributes is not None
    assert span.attributes[names.EXTRACTOR] == "llm-triplet"
    assert span.attributes[names.CHECKER] == "llm-adherence"
    records = [r.log_record.attributes or {} for r in telemetry.evaluation_records()]
    claim_events = [e for e in records if e[names.GEN_AI_EVALUATION_NAME] == names.CLAIM_EVALUATION]
    assert [e[names.GEN_AI_EVALUATION_SCORE_LABEL] for e in claim_events] == [
        "entailment",
        "contradiction",
    ]
    assert claim_events[1][names.CLAIM_HALLUCINATION_TYPE] == "entity"
    assert list(claim_events[0][names.CLAIM_EVIDENCE_DOC_IDS]) == ["eiffel"]

    claims = {p.attributes[names.VERDICT]: p.value for p in telemetry.points(names.CLAIMS).values()}
    assert claims == {"entailment": 1, "contradiction": 1}
    tokens = {
        tuple(
            p.attributes[k]
            for k in (names.LLM_ROLE, names.GEN_AI_REQUEST_MODEL, names.GEN_AI_TOKEN_TYPE)
        ): p.value
        for p in telemetry.points(names.LLM_TOKENS).values()
    }
    assert tokens == {  # spend by model and role: the extraction, then the judge
        ("extractor", UNPRICED_MODEL, "input"): 100,
        ("extractor", UNPRICED_MODEL, "output"): 20,
        ("checker", PRICED_MODEL, "input"): 400,
        ("checker", PRICED_MODEL, "output"): 80,
    }
    [cost] = telemetry.points(names.LLM_COST).values()
    assert cost.value == pytest.approx(result.usage.cost_usd if result.usage else -1)
    assert cost.value > 0  # the judge's model has a price in litellm; the extractor's has none
    assert cost.attributes[names.GEN_AI_REQUEST_MODEL] == PRICED_MODEL
    assert [v.decided_by for v in result.verdicts] == ["llm-adherence"] * 2


def test_a_refusal_abstains_without_calling_the_judge(
    llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    result = run_chain(llm_server, telemetry, REFUSAL)
    assert result.outcome.value == "abstain" and result.response_label is not None
    assert result.response_label.value == "abstain"
    assert len(llm_server.chat_requests()) == 2  # the app's answer and one extraction
    [responses] = telemetry.points(names.RESPONSES).values()
    assert responses.attributes[names.OUTCOME] == "abstain"


def test_judge_errors_are_exported_as_error_verdicts(
    llm_server: ScriptedOpenAIServer, telemetry: Telemetry
) -> None:
    def broken_judge(request: Received) -> Reply:
        if "BEGIN CLAIMS" in request.prompt:
            return Reply(content=JUDGEMENT.split("Claim 2:")[0])  # one block for two claims
        return scripted(ANSWER)(request)

    llm_server.respond(broken_judge)
    results: list[CheckResult] = []
    with RefCheckMonitor(
        extractor=LLMExtractor(UNPRICED_MODEL, api_base=llm_server.api_base, api_key="k"),
        checker=LLMChecker(UNPRICED_MODEL, api_base=llm_server.api_base, api_key="k"),
        exporters=[telemetry.exporter()],
        on_result=results.append,
    ) as monitor:
        monitor.submit(question=QUESTION, answer=ANSWER, references=[CORPUS[0].page_content])
        assert monitor.flush(30)
    [result] = results
    assert result.outcome.value == "partial"
    claims = {p.attributes[names.VERDICT]: p.value for p in telemetry.points(names.CLAIMS).values()}
    assert claims == {"entailment": 1, "error": 1}


def test_spec_built_components_reach_a_server_named_only_in_the_environment(
    llm_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--extractor llm:openai/NAME --checker llm:openai/NAME` plus OPENAI_API_BASE: no code."""
    monkeypatch.setenv("OPENAI_API_BASE", llm_server.api_base)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    llm_server.respond(scripted(ANSWER))
    with RefCheckMonitor(
        extractor=build_extractor(f"llm:{UNPRICED_MODEL}"),
        checker=build_checker(f"llm:{UNPRICED_MODEL}"),
        exporters=[],
    ) as monitor:
        result = monitor.check(
            question=QUESTION, answer=ANSWER, references=[CORPUS[0].page_content]
        )
    assert result.outcome.value == "checked"
    assert [v.label.value for v in result.verdicts if v.label] == ["entailment", "contradiction"]
    assert len(llm_server.chat_requests()) == 2


def test_building_llm_components_does_not_import_litellm() -> None:
    """litellm (seconds to import) loads on the first call, in the worker, not at construction."""
    code = (
        "import sys\n"
        "from refcheck_callbacks.check import LLMChecker\n"
        "from refcheck_callbacks.extract import LLMExtractor\n"
        "LLMChecker('openai/x', polls=5); LLMExtractor('openai/x')\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_refcheck_command_runs_on_an_openai_compatible_server(
    llm_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """RefChecker's command line with `--*_api_base`: extraction and judging by options alone."""
    llm_server.respond(scripted(ANSWER))
    source, output = tmp_path / "in.json", tmp_path / "out.jsonl"
    record = {"question": QUESTION, "response": ANSWER, "reference": [CORPUS[0].page_content]}
    source.write_text(json.dumps([record]))
    model = "llm:hosted_vllm/served-by-vllm"  # litellm's vLLM provider: no API key needed
    status = main(
        ["extract-check", "--input", str(source), "--output", str(output), "--no-progress",
         "--extractor", model, "--extractor_api_base", llm_server.api_base,
         "--checker", model, "--checker_api_base", llm_server.api_base,
         "--aggregator", "strict"]
    )  # fmt: skip
    assert status == 0
    [written] = [json.loads(line) for line in output.read_text().splitlines()]
    assert written["claims"] == [
        ["Eiffel Tower", "is", "330 metres tall"],
        ["Eiffel Tower", "was built in", "1850"],
    ]
    assert written["ys"] == ["Entailment", "Contradiction"] and written["Y"] == "Contradiction"
    assert len(llm_server.chat_requests()) == 2
