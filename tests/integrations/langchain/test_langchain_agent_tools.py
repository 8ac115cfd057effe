"""Pairing in agents whose tools retrieve: a `create_react_agent` with a retriever tool, and one
whose tool is a whole RAG chain (retriever -> prompt -> LLM) that the agent answers from. The
question is the agent's input, the answer its final message, the references the documents
that reached a prompt the final answer was built from. Real LangGraph agents, fake models, in
`invoke`, `stream` and `astream_events`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_chains import rag_chain, scripted, tool_call
from langchain_core.language_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import create_retriever_tool, tool
from langchain_modes import MODES, run_in
from langgraph.prebuilt import create_react_agent
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

EIFFEL = "How tall is the Eiffel Tower?"
FINAL = "The Eiffel Tower is 330 metres tall."
TOOL_ANSWER = "It stands 330 metres tall and was built from 1887 to 1889."


@pytest.mark.parametrize("mode", MODES)
def test_a_react_agent_with_a_retriever_tool_checks_its_final_answer_against_the_documents(
    mode: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    search = create_retriever_tool(vector_retriever, "search", "Search the encyclopedia.")
    model = scripted(tool_call("search", "1", query="Eiffel Tower"), FINAL)
    agent = create_react_agent(model, [search])
    run_in(mode, agent, {"messages": [("user", EIFFEL)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == EIFFEL
    assert request.answer == FINAL
    expected = vector_retriever.invoke("Eiffel Tower")
    assert [(r.id, r.text) for r in request.references] == [
        (d.id, d.page_content) for d in expected
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_rag_chain_inside_a_tool_gives_the_documents_its_prompt_showed(
    mode: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The agent passes the tool a short query; the tool retrieves, prompts its own model and
    returns that model's answer, from which the agent answers the user."""
    chain = rag_chain(vector_retriever, FakeListChatModel(responses=[TOOL_ANSWER]))

    @tool
    def encyclopedia(query: str) -> str:
        """Answer a question from the encyclopedia."""
        return chain.invoke(query)

    model = scripted(tool_call("encyclopedia", "1", query="Eiffel Tower"), FINAL)
    agent = create_react_agent(model, [encyclopedia])
    run_in(mode, agent, {"messages": [("user", EIFFEL)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == EIFFEL
    assert request.metadata["refcheck.retrieval_query"] == "Eiffel Tower"
    assert request.answer == FINAL
    # The tool's documents, as they were; not the tool's own answer as one text.
    expected = vector_retriever.invoke("Eiffel Tower")
    assert [(r.id, r.text) for r in request.references] == [
        (d.id, d.page_content) for d in expected
    ]
