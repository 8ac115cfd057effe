"""Check a few RAG answers offline and print a verdict table (`refcheck demo`).

Each bundled example (`rag_examples.json`) is a question, the passages a retriever returned
and an answer; two of the answers carry a planted contradiction (a wrong figure) and an
unsupported claim. The questions go through a real LangChain RAG chain watched by our callback
handler (`langchain_rag`); without langchain-core installed, the answers are checked directly.
No network, no API key: the embedded extractor and checker run on the CPU.
"""

from __future__ import annotations

import importlib.util

from refcheck_callbacks import RefCheckMonitor, Reference
from refcheck_callbacks.demo.examples import load_examples, print_result


def check_directly() -> None:
    """The same examples through `RefCheckMonitor.check`, no framework involved."""
    with RefCheckMonitor() as monitor:
        for example in load_examples():
            result = monitor.check(
                question=example["question"],
                answer=example["answer"],
                references=[Reference(**ref) for ref in example["references"]],
            )
            print_result(result)


def main() -> None:
    if importlib.util.find_spec("langchain_core") is None:
        print("langchain-core is not installed: checking the example answers directly.")
        check_directly()
        return
    from refcheck_callbacks.demo.langchain_rag import run

    run(print_result)


if __name__ == "__main__":
    main()
