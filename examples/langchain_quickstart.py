"""A LangChain RAG chain watched by `RefCheckCallbackHandler`: the demo's LangChain route.

The chain and the handler wiring are in `refcheck_callbacks/demo/langchain_rag.py` (shipped in
the package, so `refcheck demo` runs it from an installed wheel): an in-memory vector store over
the bundled documents, a prompt, a chat model (scripted offline, or OpenAI when
`OPENAI_API_KEY` is set) and a parser; the verdicts print as a table.

    python examples/langchain_quickstart.py
"""

from refcheck_callbacks.demo.examples import print_result
from refcheck_callbacks.demo.langchain_rag import run

if __name__ == "__main__":
    run(print_result)
