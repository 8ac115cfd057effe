"""Shared fixtures. Model-backed parts are built once per session: loading them is slow."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from required import skip_or_fail
from results import ResultSink
from scripted_openai_server import ScriptedOpenAIServer
from telemetry import Telemetry

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.bench.data_dir import DATA_DIR_ENV, data_dir, download_hint, missing_files
from refcheck_callbacks.bench.sources import SOURCES
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.embeddings.minilm import SentenceEncoder

# The labelled sets: $REFCHECK_DATA_DIR, else ../shared/data beside the checkout where there
# is one (as the Makefile sets it), else the user's cache directory (`refcheck data download`).
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not os.environ.get(DATA_DIR_ENV) and SHARED_DATA.is_dir():
    os.environ[DATA_DIR_ENV] = str(SHARED_DATA)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes `shared_data` needs labelled data, marked or not: mark it."""
    for item in items:
        uses_data = "shared_data" in getattr(item, "fixturenames", ())
        if uses_data and item.get_closest_marker("labelled_data") is None:
            item.add_marker(pytest.mark.labelled_data)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.labelled_data(*sets)` (no sets: all of them): skip when a set is absent,
    saying how to get it; with CI=true, fail instead, since CI must run these tests."""
    marker = item.get_closest_marker("labelled_data")
    if marker is None:
        return
    absent = [name for name in (marker.args or SOURCES) if missing_files(name)]
    if not absent:
        return
    skip_or_fail(f"labelled data {', '.join(absent)} not in {data_dir()}: {download_hint(absent)}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The labelled sets' folder (`data_dir()`); tests taking it are marked `labelled_data`."""
    return data_dir()


@pytest.fixture(scope="session")
def encoder() -> SentenceEncoder:
    """The bundled MiniLM encoder, loaded once."""
    return SentenceEncoder()


@pytest.fixture(scope="session")
def embedded_checker(encoder: SentenceEncoder) -> EmbeddedChecker:
    return EmbeddedChecker(encoder=encoder)


@pytest.fixture
def sink() -> ResultSink:
    return ResultSink()


@pytest.fixture
def monitor(embedded_checker: EmbeddedChecker, sink: ResultSink) -> Iterator[RefCheckMonitor]:
    """A monitor on the embedded checker whose results land in `sink`."""
    with RefCheckMonitor(checker=embedded_checker, on_result=[sink]) as m:
        yield m


@pytest.fixture(scope="session")
def _litellm_loaded() -> None:
    """Import litellm once up front, so its seconds-long import is not inside a deadline."""
    from refcheck_callbacks.llm.client import load_litellm

    load_litellm()


@pytest.fixture(scope="session")
def _llm_server(_litellm_loaded: None) -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    yield server
    server.close()


@pytest.fixture
def llm_server(_llm_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1: empty script, no recorded requests."""
    _llm_server.reset()
    return _llm_server


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """Private OpenTelemetry providers (traces, metrics, logs) read back in memory."""
    t = Telemetry()
    yield t
    t.shutdown()
