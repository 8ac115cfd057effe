"""Running the Python snippets of a Markdown page, in order, as a reader would paste them.

A page's ```python blocks run one after the other in one namespace (a later block may use a
name an earlier one made, as `monitor`). A block right after a line `<!-- not run: REASON -->`
needs what a test machine cannot have (model weights to download, a model on a path of the
reader's): it is compiled, and its import lines run. Where a page's snippets use the app's own
objects, `chain` (a LangChain RAG runnable) and `index` (a LlamaIndex index), real ones are
made first, offline: a keyword retriever and a scripted chat model, an index on the bundled
MiniLM with LlamaIndex's `MockLLM`.

    python doc_snippets.py PAGE.md        # prints one line per block: ran / compiled
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOT_RUN = re.compile(r"^<!-- not run: (?P<why>.+?) -->$")
IMPORT = re.compile(
    r"^(?:from refcheck_callbacks[\w.]* import [^\n(]+|import refcheck_callbacks[\w.]*)$"
)


@dataclass(frozen=True)
class Snippet:
    line: int
    code: str
    not_run: str | None
    """Why the block is only compiled, when it is."""


def snippets(text: str) -> list[Snippet]:
    """The ```python blocks of a Markdown text, with the line each starts on."""
    found, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            start, body = index + 1, []
            index += 1
            while lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            marker = NOT_RUN.match(lines[start - 2].strip()) if start >= 2 else None
            found.append(Snippet(start + 1, "\n".join(body) + "\n", marker and marker["why"]))
        index += 1
    return found


def _chain() -> Any:
    from langchain_chains import CORPUS, KeywordRetriever, rag_chain
    from langchain_core.language_models import FakeListChatModel

    answer = "The Eiffel Tower in Paris is 330 metres tall."
    return rag_chain(KeywordRetriever(documents=CORPUS), FakeListChatModel(responses=[answer]))


def _index() -> Any:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.schema import TextNode

    from refcheck_callbacks.embeddings.llamaindex import SentenceEncoderEmbedding

    Settings.llm = MockLLM()
    Settings.embed_model = SentenceEncoderEmbedding()
    texts = ["The Eiffel Tower is 330 metres tall.", "It was completed in 1889."]
    return VectorStoreIndex([TextNode(text=text, id_=f"doc-{i}") for i, text in enumerate(texts)])


def run_page(path: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    page = snippets(path.read_text(encoding="utf-8"))
    code = "".join(s.code for s in page if s.not_run is None)
    if re.search(r"\bchain\.", code):
        namespace["chain"] = _chain()
    if re.search(r"\bindex\.", code):
        namespace["index"] = _index()
    for snippet in page:
        where = f"{path.name}:{snippet.line}"
        compiled = compile(snippet.code, where, "exec")
        if snippet.not_run is None:
            exec(compiled, namespace)
            print(f"ran {where}", flush=True)
        else:
            exec("\n".join(IMPORT.findall(snippet.code)), {})
            print(f"compiled {where} ({snippet.not_run})", flush=True)


if __name__ == "__main__":
    run_page(Path(sys.argv[1]))
