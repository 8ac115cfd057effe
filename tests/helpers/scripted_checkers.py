"""Real `Checker`s whose verdicts the test controls through the claim's words.

Deterministic and instant, so engine, exporter and integration tests measure our code, not a
model. A claim containing:
- "explodes", "poison" or "broken": the whole `check` call raises (a crashing checker);
- "unknowable": that claim gets an error verdict (no label) and the rest are judged;
- "contradicted", "unverified" or "supported": that label;
- anything else: entailment when its last word occurs in a reference, else neutral.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from refcheck_callbacks import CheckItem, Label, Verdict
from refcheck_callbacks.check.base import SyncChecker

RAISING_WORDS = ("explodes", "poison", "broken")
LABEL_WORDS = {
    "contradicted": Label.CONTRADICTION,
    "unverified": Label.NEUTRAL,
    "supported": Label.ENTAILMENT,
}


class KeywordChecker(SyncChecker):
    """The rules above. Records, per call, how many requests it saw, and each request's
    claims in the order they arrived."""

    name = "keyword"

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.requests: dict[str, list[str]] = {}

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        for word in RAISING_WORDS:
            if any(word in item.claim.text for item in items):
                raise RuntimeError(f"checker exploded on {word}")
        self.batches.append(len({item.request_id for item in items}))
        for item in items:
            self.requests.setdefault(item.request_id, []).append(item.claim.text)
        return [self.verdict(item) for item in items]

    def verdict(self, item: CheckItem) -> Verdict:
        text = item.claim.text
        if "unknowable" in text:
            return Verdict(label=None, error="no verdict for this claim")
        named = [label for word, label in LABEL_WORDS.items() if word in text]
        if named:
            return Verdict(label=named[0], confidence=0.9)
        word = text.rstrip(".").split()[-1] if text.split() else ""
        found = bool(word) and any(word in reference.text for reference in item.references)
        return Verdict(label=Label.ENTAILMENT if found else Label.NEUTRAL, confidence=1.0)


class GatedChecker(KeywordChecker):
    """Blocks until the test opens the gate: lets a test hold the worker busy."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        self.entered.set()
        self.gate.wait(30)
        return super().check_batch(items)


class SlowChecker(KeywordChecker):
    """Takes `seconds` per call, awaiting (so a stage deadline can cancel it)."""

    def __init__(self, seconds: float = 5.0) -> None:
        super().__init__()
        self.seconds = seconds

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        await asyncio.sleep(self.seconds)
        return self.check_batch(items)


class LazyChecker(KeywordChecker):
    """Loads on its first call unless preloaded; counts its loads and which came first."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []

    def preload(self) -> None:
        if not self.loads:
            self.loads.append("preload")

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if not self.loads:
            self.loads.append("first call")
        return super().check_batch(items)
