"""The demo's bundled examples (`rag_examples.json`) and how a result is printed, shared by
the direct route (`quickstart`) and the LangChain route (`langchain_rag`)."""

from __future__ import annotations

import json
import textwrap
from importlib import resources
from typing import Any

from refcheck_callbacks.types import CheckResult


def load_examples() -> list[dict[str, Any]]:
    """The bundled examples: `question`, `references` ([{id, text}]) and `answer` each."""
    text = resources.files(__package__).joinpath("rag_examples.json").read_text(encoding="utf-8")
    examples: list[dict[str, Any]] = json.loads(text)
    return examples


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
    if not result.claims or not result.verdicts:
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
