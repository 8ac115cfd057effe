"""Check a few RAG answers offline and print a verdict table.

Each bundled example is a question, the passages a retriever returned and an answer; two of
the answers carry a planted contradiction (a wrong figure) and an unsupported claim. No
network, no API key: the embedded extractor and checker run on the CPU.

    python examples/quickstart.py
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from refcheck_callbacks import CheckResult, RefCheckMonitor, Reference

EXAMPLES = Path(__file__).with_name("rag_examples.json")


def _cell(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_result(result: CheckResult) -> None:
    request = result.request
    print(f"\nQ: {request.question}")
    label = result.response_label.value if result.response_label else "-"
    ratio = result.hallucination_ratio
    hallucinated = "-" if ratio is None else f"{ratio:.0%}"
    print(f"   outcome={result.outcome.value}  response={label}  hallucination rate={hallucinated}")
    if result.message:
        print(textwrap.indent(result.message, "   "))
    if not result.claims:
        return
    print(f"   {'claim':<58} {'verdict':<14} {'conf':>5}  evidence")
    for index, (claim, verdict) in enumerate(zip(result.claims, result.verdicts, strict=True)):
        source = ""
        if verdict.evidence:
            source = f"[{verdict.evidence[0].reference_id}] "
        evidence = source + result.evidence_text(index)
        name = verdict.label.value if verdict.label else f"error: {verdict.error}"
        print(
            f"   {_cell(claim.text, 58):<58} {name:<14} {verdict.confidence:>5.2f}  "
            f"{_cell(evidence, 60)}"
        )


def main() -> None:
    examples = json.loads(EXAMPLES.read_text(encoding="utf-8"))
    with RefCheckMonitor() as monitor:
        for example in examples:
            result = monitor.check(
                question=example["question"],
                answer=example["answer"],
                references=[Reference(**ref) for ref in example["references"]],
            )
            print_result(result)


if __name__ == "__main__":
    main()
