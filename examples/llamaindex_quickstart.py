"""Watch a LlamaIndex RAG app: every query and chat turn is checked in the background.

A `VectorStoreIndex` over the passages of the demo's examples, embedded offline with the
bundled MiniLM model. The LLM is LlamaIndex's `MockLLM`, which answers with its own prompt
(so its answers restate the retrieved passages), unless `OPENAI_API_KEY` is set and
`llama-index-llms-openai` is installed: then a real model answers. One line,
`instrument_llamaindex(monitor)`, attaches the monitor to every engine; the app code is
plain LlamaIndex. Runs offline.

    python examples/llamaindex_quickstart.py
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from llama_index.core import PromptTemplate, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.demo.examples import load_examples, print_result
from refcheck_callbacks.embeddings.llamaindex import SentenceEncoderEmbedding
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.llamaindex import (
    instrument_llamaindex,
    uninstrument_llamaindex,
)

# A short prompt keeps MockLLM's echoed answers readable.
QA_PROMPT = PromptTemplate("{context_str}\n\nQuestion: {query_str}\n")


def _llm() -> Any:
    """A real model when a key and its LlamaIndex package are there; MockLLM otherwise."""
    if os.environ.get("OPENAI_API_KEY") and importlib.util.find_spec("llama_index.llms.openai"):
        from llama_index.llms.openai import OpenAI

        print("LLM: OpenAI gpt-4o-mini (OPENAI_API_KEY is set)")
        return OpenAI(model="gpt-4o-mini")
    print("LLM: LlamaIndex MockLLM - it answers with its prompt, i.e. the retrieved passages.")
    print("     Set OPENAI_API_KEY and `pip install llama-index-llms-openai` for real answers.")
    return MockLLM()


def _passages() -> tuple[list[TextNode], list[str]]:
    """One node per passage, keeping its id, so verdicts name the passage they rest on."""
    examples = load_examples()
    nodes = [
        TextNode(text=ref["text"], id_=ref["id"])
        for example in examples
        for ref in example["references"]
    ]
    return nodes, [example["question"] for example in examples]


def main() -> None:
    encoder = SentenceEncoder()  # one copy of MiniLM for the index and the checker
    results: list[CheckResult] = []
    # The checker shares the index's encoder, so it checks in this process's thread.
    checker = EmbeddedChecker(encoder=encoder)
    with RefCheckMonitor(checker=checker, on_result=results.append, placement="thread") as m:
        instrument_llamaindex(m)
        nodes, questions = _passages()
        index = VectorStoreIndex(nodes, embed_model=SentenceEncoderEmbedding(encoder))
        llm = _llm()
        engine = index.as_query_engine(llm=llm, similarity_top_k=2, text_qa_template=QA_PROMPT)
        for question in questions[:-1]:
            engine.query(question)

        streaming = index.as_query_engine(
            llm=llm, similarity_top_k=2, text_qa_template=QA_PROMPT, streaming=True
        )
        answer = streaming.query(questions[-1])
        "".join(answer.response_gen)  # a streamed answer is checked once it has been read

        chat = index.as_chat_engine(chat_mode="context", llm=llm, similarity_top_k=1)
        chat.chat("Who designed the Eiffel Tower?")

        m.flush()
        uninstrument_llamaindex()
        for result in sorted(results, key=lambda r: r.request.submitted_at):
            print_result(result)
            print(f"   references: {', '.join(str(r.id) for r in result.request.references)}")
        print(f"\nnot checked: {m.stats.snapshot() or 'nothing'}")


if __name__ == "__main__":
    main()
