"""Real checkers and extractors that misbehave on purpose, for the fault suite.

Each is a full implementation of its protocol (built on the shared `KeywordChecker` rules) that
turns pathological on input marked with the word "pathological": it blocks in its thread, spins
the CPU, never returns from an await, or raises a BaseException. A test sets `release` so that
calls it abandoned end before the next test.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence

from scripted_checkers import KeywordChecker

from refcheck_callbacks import CheckItem, CheckRequest, Verdict
from refcheck_callbacks.contract.components import Extraction
from refcheck_callbacks.extract.base import SyncExtractor
from refcheck_callbacks.extract.sentences import SentenceExtractor

MARK = "pathological"


def marked(items: Sequence[CheckItem]) -> bool:
    return any(MARK in item.claim.text for item in items)


class StuckChecker(KeywordChecker):
    """Blocks its thread on a batch holding a marked claim, as a checker does that is stuck on
    pathological input: threads cannot be cancelled. Counts the calls it is stuck in."""

    name = "stuck"

    def __init__(self, seconds: float = 60.0) -> None:
        super().__init__()
        self.seconds = seconds
        self.release = threading.Event()
        self.stuck = 0
        self._lock = threading.Lock()

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if marked(items):
            with self._lock:
                self.stuck += 1
            try:
                self.release.wait(self.seconds)
            finally:
                with self._lock:
                    self.stuck -= 1
        return super().check_batch(items)


class SpinningChecker(KeywordChecker):
    """Burns the CPU in pure Python on a batch holding a marked claim (the GIL is shared in
    slices, as with slow but linear-time code), until released or `seconds` pass."""

    name = "spinning"

    def __init__(self, seconds: float = 60.0) -> None:
        super().__init__()
        self.seconds = seconds
        self.release = threading.Event()

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if marked(items):
            end = time.monotonic() + self.seconds
            n = 0
            while time.monotonic() < end and not self.release.is_set():
                n += sum(range(1000))
        return super().check_batch(items)


class NeverReturningChecker(KeywordChecker):
    """An async checker whose call on a marked claim never returns (a judge waiting on a
    socket that never answers); cancellable, unlike a thread."""

    name = "never-returning"

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if marked(items):
            await asyncio.Event().wait()
        return self.check_batch(items)


class RaisingChecker(KeywordChecker):
    """Raises `make()` on a batch holding a marked claim: any BaseException, not only errors."""

    name = "raising"

    def __init__(self, make: Callable[[], BaseException]) -> None:
        super().__init__()
        self.make = make

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        if marked(items):
            raise self.make()
        return self.check_batch(items)


class StuckExtractor(SyncExtractor):
    """Sentence claims, but blocks its thread on a batch holding a marked answer."""

    name = "stuck-sentences"

    def __init__(self, seconds: float = 60.0) -> None:
        self.seconds = seconds
        self.release = threading.Event()
        self._sentences = SentenceExtractor()

    def extract_batch(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        if any(MARK in request.answer for request in requests):
            self.release.wait(self.seconds)
        return self._sentences.extract_batch(requests)


class RaisingExtractor(SyncExtractor):
    """Sentence claims, but raises `make()` on a batch holding a marked answer: any
    BaseException, not only errors."""

    name = "raising-sentences"

    def __init__(self, make: Callable[[], BaseException]) -> None:
        self.make = make
        self._sentences = SentenceExtractor()

    async def extract(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        if any(MARK in request.answer for request in requests):
            raise self.make()
        return self._sentences.extract_batch(requests)
