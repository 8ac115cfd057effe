"""Shared fixtures. Model-backed parts are built once per session: loading them is slow."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.embedded import EmbeddedChecker
from refcheck_callbacks.check.encoder import SentenceEncoder

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` beside the repository (public evaluation sets; read only)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def encoder() -> SentenceEncoder:
    """The bundled MiniLM encoder, loaded once."""
    return SentenceEncoder()


@pytest.fixture(scope="session")
def embedded_checker(encoder: SentenceEncoder) -> EmbeddedChecker:
    return EmbeddedChecker(encoder=encoder)


class ResultSink:
    """An `on_result` hook that keeps every result."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def __call__(self, result: CheckResult) -> None:
        self.results.append(result)


@pytest.fixture
def sink() -> ResultSink:
    return ResultSink()


@pytest.fixture
def monitor(embedded_checker: EmbeddedChecker, sink: ResultSink) -> Iterator[RefCheckMonitor]:
    """A monitor on the embedded checker whose results land in `sink`."""
    with RefCheckMonitor(checker=embedded_checker, on_result=[sink]) as m:
        yield m
