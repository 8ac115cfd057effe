"""Only the answering prompt counts: `create_agent` with `SummarizationMiddleware` over three
turns, and a fourth. Before turn 3's model call the middleware has a second model summarise
turn 1 (its tool call and the documents it returned) and replaces those messages with the
summary. Turn 3's model saw the summary and turn 2's documents, not turn 1's: the summariser's
prompt is not what it saw, the summary it wrote is (a reference of its own), and an earlier
turn's document counts only where the prompt shows enough of its text. The summary stays in
the history: turn 4 sees it too. Real LangChain v1 agent with a retriever tool and a
checkpointer, scripted fake chat models; in `invoke`, `stream` and `astream_events`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_chains import scripted, tool_call
from langchain_core.language_models import FakeListChatModel
from langchain_core.tools import create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_modes import MODES, run_in
from langgraph.checkpoint.memory import MemorySaver
from long_documents import PARENTS
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.integrations.langchain.pairing import EARLIER_TURNS_KEY
from refcheck_callbacks.integrations.shared.overlap import CONTAINED, LEFT_OUT_KEY

EIFFEL, EVEREST, _ = PARENTS
TURNS = [
    ("How tall is the Eiffel Tower?", "Eiffel Tower height", "It is 330 metres tall."),
    ("And Mount Everest?", "Mount Everest height", "Everest is 8,849 metres high."),
    ("Which of the two is taller?", None, "Mount Everest, by far."),
    ("Who first climbed it?", None, "Tenzing Norgay and Edmund Hillary, in 1953."),
]
# The summary keeps the Eiffel page's first sentences word for word: its start, not enough of
# it to check against.
SUMMARY = (
    "## SESSION INTENT\nThe user compares the heights of landmarks.\n## SUMMARY\n"
    f"A search for the Eiffel Tower found: {EIFFEL.page_content[:200]} "
    "The tower is 330 metres tall.\n## NEXT STEPS\nAnswer the next question."
)


@pytest.fixture(scope="module")
def store(encoder: SentenceEncoder) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents(PARENTS, ids=["eiffel", "everest", "python"])
    return store


def summarising_agent(store: InMemoryVectorStore, summary: str | None = SUMMARY) -> Any:
    """Turn 1 and 2 search, turns 3 and 4 answer from the history; at turn 3's first model
    call the history holds 9 messages, and all but the last 5 (turn 1's four) are summarised
    into `summary` (None: no summarising); at turn 4's, 8 again."""
    messages: list[Any] = []
    for index, (_, query, answer) in enumerate(TURNS):
        if query is not None:
            messages.append(tool_call("search", f"call-{index}", query=query))
        messages.append(answer)
    search = create_retriever_tool(
        store.as_retriever(search_kwargs={"k": 1}), "search", "Search the encyclopedia."
    )
    middleware = [
        SummarizationMiddleware(
            model=FakeListChatModel(responses=[summary]),
            trigger=("messages", 9),
            keep=("messages", 5),
        )
        for summary in ([summary] if summary is not None else [])
    ]
    return create_agent(
        scripted(*messages), [search], middleware=middleware, checkpointer=MemorySaver()
    )


def third_turn(
    agent: Any, handler: RefCheckCallbackHandler, monitor: RefCheckMonitor, sink: Any
) -> Any:
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": "chat"}}
    for question, _, _ in TURNS[:3]:
        agent.invoke({"messages": [("user", question)]}, config)
    return sorted(checked_requests(monitor, sink, count=3), key=lambda r: r.submitted_at)[2]


@pytest.mark.parametrize("mode", MODES)
def test_turn_three_is_checked_against_what_its_prompt_shows(
    mode: str,
    store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    agent = summarising_agent(store)
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": f"summary-{mode}"}}
    for question, _, _ in TURNS:
        run_in(mode, agent, {"messages": [("user", question)]}, config)
    history = agent.get_state(config).values["messages"]
    assert SUMMARY in history[0].content  # the middleware did replace turn 1

    requests = sorted(checked_requests(monitor, sink, count=4), key=lambda r: r.submitted_at)
    first, second, third, fourth = requests
    assert [r.id for r in first.references] == ["eiffel"]
    assert [r.id for r in second.references] == ["everest", "eiffel"]  # turn 1's, in its history
    # Turn 2's document, still in the history, and the summary: not the Eiffel page, which
    # only the summariser saw in full.
    for request, (question, _, answer) in zip((third, fourth), TURNS[2:], strict=True):
        assert (request.question, request.answer) == (question, answer)
        by_text = {r.text: r for r in request.references}
        assert set(by_text) == {EVEREST.page_content, SUMMARY}
        assert by_text[EVEREST.page_content].id == "everest"
        assert by_text[SUMMARY].metadata == {"generated": True}
    assert third.metadata[EARLIER_TURNS_KEY] == 1
    assert fourth.metadata[EARLIER_TURNS_KEY] == 2  # the summary is an earlier turn's now


def test_a_summary_that_quotes_an_earlier_document_in_full_keeps_it_as_evidence(
    store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """Where the prompt shows enough of an earlier document (here all of it, inside the
    summary), that document is what the model saw; it lies inside the summary, so the
    summary stays and the document is counted as contained."""
    quoting = SUMMARY.replace(EIFFEL.page_content[:200], EIFFEL.page_content)
    third = third_turn(summarising_agent(store, quoting), handler, monitor, sink)
    assert {r.text for r in third.references} == {EVEREST.page_content, quoting}
    assert third.metadata[LEFT_OUT_KEY] == {CONTAINED: 1}


def test_without_a_summary_earlier_turns_documents_count_where_the_history_shows_them(
    store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    third = third_turn(summarising_agent(store, None), handler, monitor, sink)
    assert sorted(r.id for r in third.references) == ["eiffel", "everest"]
    assert third.metadata[EARLIER_TURNS_KEY] == 2


def test_an_earlier_document_a_tool_cut_short_still_counts_in_later_turns(
    store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """A tool that prints the first 300 characters of each page: the history shows them as
    the tool printed them, as in their own turn, not as a summary's few words."""

    @tool
    def search(query: str) -> str:
        """Search the encyclopedia."""
        return "\n\n".join(d.page_content[:300] for d in store.similarity_search(query, k=1))

    messages: list[Any] = []
    for index, (_, query, answer) in enumerate(TURNS[:3]):
        if query is not None:
            messages.append(tool_call("search", f"call-{index}", query=query))
        messages.append(answer)
    agent = create_agent(scripted(*messages), [search], checkpointer=MemorySaver())
    third = third_turn(agent, handler, monitor, sink)
    assert sorted(r.id for r in third.references) == ["eiffel", "everest"]
