"""Fixtures for the LLM tests: one scripted OpenAI-compatible server on 127.0.0.1 per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_openai_server import ScriptedOpenAIServer

from refcheck_callbacks.llm_client import load_litellm


@pytest.fixture(scope="session", autouse=True)
def _litellm_loaded() -> None:
    """Import litellm once up front, so its seconds-long import is not inside a deadline."""
    load_litellm()


@pytest.fixture(scope="session")
def _server() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    yield server
    server.close()


@pytest.fixture
def llm_server(_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    """The session's server with an empty script and no recorded requests."""
    _server.reset()
    return _server
