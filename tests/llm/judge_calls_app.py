"""An async app that uses litellm itself and two monitors with LLM judges, for the log test.

Run as `python judge_calls_app.py API_BASE ANSWERS`. Logging is set up as an app would
(`logging.basicConfig`, WARNING and up, to stderr, every logger named). On one long-lived event
loop the app asks its own model through `litellm.acompletion` for each answer, then hands the
answer to one of two monitors (each with its own worker thread and loop, each judging through
litellm), alternately: litellm is called from three event loops in turn. At the end it prints
one JSON line: verdicts per monitor and the outcomes.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
from collections import Counter

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.llm.client import load_litellm

MODEL = "openai/served-by-vllm"


async def serve(api_base: str, answers: int, monitors: list[RefCheckMonitor]) -> None:
    litellm = load_litellm()
    for index in range(answers):
        reply = await litellm.acompletion(
            model=MODEL,
            api_base=api_base,
            api_key="k",
            messages=[{"role": "user", "content": f"How tall is tower {index}?"}],
        )
        assert reply.choices[0].message.content
        monitor = monitors[index % len(monitors)]
        monitor.submit(
            answer=f"Tower {index} is 330 metres tall.",
            references=[f"Tower {index} is 330 metres tall."],
            trace_context=None,
        )
        # Wait for the judge before the next answer, so the loops take turns with litellm.
        await asyncio.to_thread(monitor.flush, 30)


def main(api_base: str, answers: int) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    outcomes: Counter[str] = Counter()

    def record(result: CheckResult) -> None:
        outcomes[result.outcome.value] += 1

    monitors = [
        RefCheckMonitor(
            checker=LLMChecker(MODEL, api_base=api_base, api_key="k"),
            on_result=[record],
            placement="thread",  # a judge built here, waiting on the network
        )
        for _ in range(2)
    ]
    asyncio.run(serve(api_base, answers, monitors))
    for monitor in monitors:
        monitor.shutdown(30)
    gc.collect()  # a task orphaned by litellm is reported when it is collected
    print(json.dumps({"outcomes": outcomes}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
