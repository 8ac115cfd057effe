"""Fixtures for the LLM tests: one scripted OpenAI-compatible server on 127.0.0.1 per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_openai_server import ScriptedOpenAIServer

from refcheck_callbacks.llm_client import load_litellm

PRICED_MODEL = "openai/gpt-4o-mini"
"""A model litellm has a price for: cost is computed from the server's token counts."""
UNPRICED_MODEL = "openai/served-by-vllm"
"""A name only our server knows, as with a self-hosted vLLM model: no cost, tokens only."""


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
