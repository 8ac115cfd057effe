"""A checker factory that waits for the test to open `GATE`: holds a monitor's build (a
`py:gated_components:gated_keyword_checker` spec, placement thread) for as long as a test needs."""

from __future__ import annotations

import threading

from scripted_checkers import KeywordChecker

GATE = threading.Event()
BUILT_ON: list[str] = []
"""The names of the threads the factory ran on."""


def gated_keyword_checker() -> KeywordChecker:
    BUILT_ON.append(threading.current_thread().name)
    GATE.wait(60)
    return KeywordChecker()
