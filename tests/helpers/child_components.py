"""Components that the tests have a checking process build (`placement="process"`), from a
spec (`py:child_components:EchoChecker`) or as picklable factories (`functools.partial`).

They report what happened inside the child through what the app can see: a verdict's
explanation, a marker file, the child's own end.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from refcheck_callbacks import CheckItem, Label, Verdict
from refcheck_callbacks.check.base import SyncChecker


class EchoChecker(SyncChecker):
    """Entailment for every claim; the explanation is what reached the checker, as JSON: the
    claim, the question, and each reference's text and metadata."""

    name = "echo"

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        return [
            Verdict(
                label=Label.ENTAILMENT,
                confidence=1.0,
                explanation=json.dumps(
                    {
                        "claim": item.claim.text,
                        "question": item.question,
                        "references": [[r.text, r.metadata] for r in item.references],
                        "pid": os.getpid(),
                    }
                ),
            )
            for item in items
        ]


class MarkedSlowChecker:
    """On a batch with a claim containing "slow": writes `marker` (the child's pid), then takes
    `seconds` (awaiting, so a stage deadline can end it), which lets a test act while the child
    holds the batch. Other batches get entailment at once."""

    name = "marked-slow"
    needs_references = True

    def __init__(self, marker: str, seconds: float) -> None:
        self.marker = Path(marker)
        self.seconds = seconds

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if any("slow" in item.claim.text for item in items):
            # Whole or not at all: a test reads the pid as soon as the file exists.
            partial = self.marker.with_suffix(".partial")
            partial.write_text(str(os.getpid()))
            partial.replace(self.marker)
            await asyncio.sleep(self.seconds)
        return [Verdict(label=Label.ENTAILMENT, confidence=1.0) for _ in items]


class LoopBlockingChecker:
    """Blocks the child's event loop for `seconds` on a claim containing "freeze" (no stage
    deadline can fire: the child hangs); checks every other claim at once."""

    name = "loop-blocking"
    needs_references = True

    def __init__(self, seconds: float = 600.0) -> None:
        self.seconds = seconds

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if any("freeze" in item.claim.text for item in items):
            time.sleep(self.seconds)
        return [Verdict(label=Label.ENTAILMENT, confidence=1.0) for _ in items]


def dies_while_building() -> EchoChecker:
    """A factory whose process ends while it builds (a crash at import or model load)."""
    os._exit(3)


class UnloadableChecker(EchoChecker):
    """Loads lazily, and its model cannot load (a missing file): built fine, fails at preload."""

    def preload(self) -> None:
        raise FileNotFoundError("the model table is missing")
