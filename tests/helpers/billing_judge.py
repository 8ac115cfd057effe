"""A judge on the scripted OpenAI-compatible server that bills like a provider, and usage
reports in every shape providers and proxies were seen to send.

`judging` scripts the server: every request it receives is billed (the prompt's tokens by the
model's tokenizer, the answer's the whole `max_tokens`: the worst case a reservation must
cover), whether or not the client waits for the reply, and the reply reports that usage, or one
of `USAGE_SHAPES` of it. `sixteen_answers` sends 16 answers at once (in one round or several)
through a monitor on a judge under a budget. Shared by tests/llm/test_budget.py and
benchmarks/judge_budget.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from scripted_openai_server import (
    COUNTED,
    NO_USAGE,
    PRICED_MODEL,
    Received,
    Reply,
    ScriptedOpenAIServer,
)

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.contract.components import Exporter
from refcheck_callbacks.llm.budget import JudgeBudget
from refcheck_callbacks.llm.loading import load_litellm

ANSWER_TOKENS = 100_000
"""What the scripted judge would write: every reply is billed the whole `max_tokens`, the
worst case a reservation must cover."""
UsageShape = Callable[[int, int], Any]
"""The `usage` a reply reports, from the prompt and completion tokens the provider bills."""
USAGE_SHAPES: dict[str, UsageShape] = {
    "missing": lambda p, c: NO_USAGE,
    "null": lambda p, c: None,
    "zero": lambda p, c: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    "negative": lambda p, c: {"prompt_tokens": -p, "completion_tokens": -c, "total_tokens": -p},
    "text": lambda p, c: {"prompt_tokens": "many", "completion_tokens": "few", "total_tokens": ""},
    "nan": lambda p, c: {"prompt_tokens": math.nan, "completion_tokens": math.nan},
    "huge": lambda p, c: {"prompt_tokens": 10**30, "completion_tokens": 10**30},
}
"""What providers and proxies were seen to report (issue 47: with no, zero or negative usage a
6,000-token cap was billed 21,700 tokens; with usage as text, 87,000)."""


def judging(
    server: ScriptedOpenAIServer, delay: float = 0.3, usage: UsageShape | None = None
) -> list[tuple[int, int]]:
    """Script the server as a judge that reports true usage (or `usage` of it); returns the
    (prompt, completion) tokens of every request it received, as the provider bills them
    (the reply is written whether or not the client waits for it)."""
    litellm = load_litellm()
    billed: list[tuple[int, int]] = []

    def judge(request: Received) -> Reply:
        prompt = int(litellm.token_counter(model=PRICED_MODEL, messages=request.messages))
        completion = min(ANSWER_TOKENS, int(request.body.get("max_tokens") or ANSWER_TOKENS))
        billed.append((prompt, completion))
        reply = "Claim 1:\nReasoning: Document 1 says so.\nLabel: Entailment"
        return Reply(
            content=reply,
            delay=delay,
            prompt_tokens=prompt,
            completion_tokens=completion,
            usage=COUNTED if usage is None else usage(prompt, completion),
        )

    server.respond(judge)
    return billed


def sixteen_answers(
    judge: LLMChecker, budget: JudgeBudget, exporters: list[Exporter], rounds: int = 1
) -> list[CheckResult]:
    """Sixteen answers at once through a monitor on `judge` under `budget`, `rounds` times
    (each round once the one before is done: the budget must hold across them, not only
    within one burst); their results."""
    results: list[CheckResult] = []
    with RefCheckMonitor(
        checker=judge,
        placement="thread",
        judge_budget=budget,
        exporters=exporters,
        on_result=results.append,
        batch_size=16,
        max_wait=0.5,
        conflict=None,
    ) as monitor:
        for n in range(16 * rounds):
            monitor.submit(
                question=f"When did the museum open? ({n})",
                answer="The Louvre opened to the public in 1793.",
                references=["The Louvre opened to the public in 1793, during the Revolution."],
            )
            if n % 16 == 15:
                assert monitor.flush(120) and len(results) == n + 1
    return results


def provider_bill(billed: list[tuple[int, int]]) -> tuple[int, float]:
    """The tokens and USD the provider billed for `billed` (what `judging` returns)."""
    litellm = load_litellm()
    tokens = sum(prompt + completion for prompt, completion in billed)
    usd = sum(sum(litellm.cost_per_token(PRICED_MODEL, p, c)) for p, c in billed)
    return tokens, usd
