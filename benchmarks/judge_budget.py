"""What a judge budget lets the provider bill, by the usage shape its replies report.

Sixteen answers at once, twice (the second round once the first is done), through a monitor
whose `llm:` judge (on the scripted OpenAI-compatible server, real HTTP on loopback) is capped
at 6,000 tokens and 0.003 USD. The server bills every request it receives (the prompt by the
model's tokenizer, the answer the whole `max_tokens`) and reports that usage, or none, zero,
negative, text, NaN or a huge count; one more row has every reply slower than the request
timeout. Reports, per shape: the tokens and USD the provider billed against the cap (their
ratio), requests received, and the claims sent to the fallback.

    flock /tmp/cpu.lock python benchmarks/judge_budget.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from billing_judge import USAGE_SHAPES, judging, provider_bill, sixteen_answers
from scripted_openai_server import PRICED_MODEL, ScriptedOpenAIServer

from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.llm.budget import BUDGET_EXHAUSTED, JudgeBudget
from refcheck_callbacks.llm.client import LLMClient
from refcheck_callbacks.support.retry import RetryPolicy

BUDGET = JudgeBudget(
    usd=0.003, tokens=6000, window_s=3600, fallback_checker="py:scripted_checkers:KeywordChecker"
)
SLOW = "slower than the timeout"


def measure(server: ScriptedOpenAIServer, shape: str) -> dict[str, Any]:
    server.reset()
    retry = RetryPolicy(max_retries=3, backoff=0.01)
    if shape == SLOW:
        billed = judging(server, delay=5.0)
        client = LLMClient(PRICED_MODEL, server.api_base, "k", request_timeout=1.0, retry=retry)
    else:
        billed = judging(server, usage=USAGE_SHAPES.get(shape))
        client = LLMClient(PRICED_MODEL, server.api_base, "k", retry=retry)
    client.concurrency = 16
    results = sixteen_answers(LLMChecker(client), BUDGET, [], rounds=2)
    tokens, usd = provider_bill(billed)
    verdicts = [v for r in results for v in r.verdicts]
    assert BUDGET.tokens is not None and BUDGET.usd is not None
    return {
        "shape": shape,
        "billed_tokens": tokens,
        "token_cap": BUDGET.tokens,
        "tokens_over_cap": tokens / BUDGET.tokens,
        "billed_usd": usd,
        "usd_over_cap": usd / BUDGET.usd,
        "requests": len(billed),
        "fallback_claims": sum(v.fallback == BUDGET_EXHAUSTED for v in verdicts),
        "claims": len(verdicts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    server = ScriptedOpenAIServer()
    try:
        rows = [measure(server, shape) for shape in ["counted", *USAGE_SHAPES, SLOW]]
    finally:
        server.close()
    for row in rows:
        print(
            f"{row['shape']:>24}: billed {row['billed_tokens']:>6,} tokens "
            f"({row['tokens_over_cap']:.2f}x the cap), {row['billed_usd']:.5f} USD "
            f"({row['usd_over_cap']:.2f}x), {row['requests']:>2} requests, "
            f"{row['fallback_claims']}/{row['claims']} claims to the fallback"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
