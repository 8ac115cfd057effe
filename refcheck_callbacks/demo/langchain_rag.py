"""A LangChain RAG chain watched by `RefCheckCallbackHandler` (the demo's LangChain route).

The chain is the one from LangChain's RAG tutorial: an in-memory vector store over the bundled
example documents (embedded with the bundled MiniLM model, no download), a prompt, a chat model
and a string parser. The handler pairs each answer with the documents the retriever returned
and the monitor checks it in the background; the verdicts are printed at the end.

- No `OPENAI_API_KEY`: the chat model is LangChain's `FakeListChatModel`, replaying the scripted
  answers of `rag_examples.json` (two of them carry planted errors). Fully offline.
- `OPENAI_API_KEY` set: a real OpenAI model answers (`OPENAI_MODEL`, default gpt-4o-mini); this
  needs `pip install langchain-openai`.

    python examples/langchain_quickstart.py   (or: python -m refcheck_callbacks.demo.langchain_rag)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.demo.examples import load_examples, print_result
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer the question using only this context:\n\n{context}"),
        ("human", "{question}"),
    ]
)


def chat_model(examples: list[dict[str, Any]]) -> tuple[BaseChatModel, str]:
    """A real OpenAI model when a key is set and langchain-openai is installed, else the fake."""
    scripted = FakeListChatModel(responses=[example["answer"] for example in examples])
    if not os.environ.get("OPENAI_API_KEY"):
        return scripted, (
            "No OPENAI_API_KEY: the chat model is LangChain's FakeListChatModel replaying "
            "scripted answers (two with planted errors)."
        )
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        return scripted, (
            "OPENAI_API_KEY is set, but langchain-openai is not installed "
            "(pip install langchain-openai): using the scripted FakeListChatModel instead."
        )
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    return ChatOpenAI(model=model, temperature=0), f"Answers come from OpenAI {model}."


def build_chain(
    examples: list[dict[str, Any]], encoder: SentenceEncoder, llm: BaseChatModel
) -> Runnable[str, str]:
    """retriever | prompt | chat model | parser, over every example's documents."""
    store = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents(
        [
            Document(id=ref["id"], page_content=ref["text"])
            for example in examples
            for ref in example["references"]
        ]
    )
    retriever = store.as_retriever(search_kwargs={"k": 3})
    context = retriever | (lambda docs: "\n\n".join(d.page_content for d in docs))
    return (
        {"context": context, "question": RunnablePassthrough()} | PROMPT | llm | StrOutputParser()
    )


def run(show: Callable[[CheckResult], None]) -> None:
    """Ask every example question through the chain, then show each verdict in order."""
    examples = load_examples()
    encoder = SentenceEncoder()  # one model load serves the vector store and the checker
    llm, origin = chat_model(examples)
    print(origin)
    chain = build_chain(examples, encoder, llm)
    results: list[CheckResult] = []
    # The checker shares the vector store's encoder, so it checks in this process's thread;
    # an app's RefCheckMonitor() checks in a child process of its own.
    checker = EmbeddedChecker(encoder=encoder)
    with RefCheckMonitor(checker=checker, on_result=results.append, placement="thread") as m:
        handler = RefCheckCallbackHandler(m)
        for example in examples:
            try:
                chain.invoke(example["question"], config={"callbacks": [handler]})
            except Exception as exc:  # a real model can fail (network, quota): say so, go on
                print(f"\nQ: {example['question']}\n   the chain failed: {exc}")
        m.flush(timeout=60)
    order = {example["question"]: index for index, example in enumerate(examples)}
    for result in sorted(results, key=lambda r: order.get(r.request.question or "", 0)):
        show(result)
    print(f"\nNot checked: {m.stats.snapshot() or 'nothing'}")


if __name__ == "__main__":
    run(print_result)
