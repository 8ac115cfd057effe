"""The scripted OpenAI-compatible server as an LLM relevance judge: it answers the lines the
prompt asks for (`Document 1: <grade>`, ...) with the grades a test gives, by item name."""

from __future__ import annotations

from collections.abc import Mapping

from scripted_openai_server import Received, Reply, ScriptedOpenAIServer

from refcheck_callbacks.check.relevance.llm_relevance import LLMRelevance
from refcheck_callbacks.llm.client import LLMClient
from refcheck_callbacks.support.retry import RetryPolicy

MODEL = "openai/served-by-vllm"


def asked_lines(request: Received) -> list[str]:
    """The item names the prompt asks a grade for, in order (`Document 1`, `Answer`, ...)."""
    user = request.messages[-1]["content"]
    return [line.split(":")[0] for line in user.splitlines() if line.endswith(": <grade>")]


def grading(
    server: ScriptedOpenAIServer, grades: Mapping[str, str], default: str = "0"
) -> list[list[str]]:
    """Script `server` to grade every asked item (`grades[name]`, else `default`); returns
    the names each request asked, in order of arrival."""
    asked: list[list[str]] = []

    def answer(request: Received) -> Reply:
        names = asked_lines(request)
        asked.append(names)
        return Reply("\n".join(f"{name}: {grades.get(name, default)}" for name in names))

    server.respond(answer)
    return asked


def relevance_on(server: ScriptedOpenAIServer, **options: object) -> LLMRelevance:
    """An LLM relevance judge on `server`, retrying once, quickly."""
    client = LLMClient(MODEL, server.api_base, "k", retry=RetryPolicy(max_retries=1, backoff=0.05))
    return LLMRelevance(client, **options)  # type: ignore[arg-type]
