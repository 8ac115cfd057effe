"""The files one LangChain answer runs through, from the callback handler to the exporter.

A RAG chain (a retriever, a prompt, a chat model, a parser) answers one question with
`RefCheckCallbackHandler` attached; a monitor with placement="thread" checks it with the
offline extractor and checker, and an `OpenTelemetryExporter` exports it to an in-memory
span exporter. A profile hook on every thread records which of the package's files ran code
between the chain's start and the exported span, in the order they were first entered.

Two numbers describe the path:
- files: distinct package files whose functions ran (module bodies run by an import are not
  the answer's path and are left out), and how many of them are outside the extractor's and
  checker's own modules and the text utilities (the plumbing);
- hops back: calls from one module into another that was entered earlier on the path and that
  is not a floor module (types, errors, the contract, support, text utilities): control going
  back up the data flow, as a callback or a reach into the monitor does. Counted per distinct
  (caller, callee) pair of files.

One warm-up answer runs first, untraced, so that models and caches are loaded; then the
traced answer, from `chain.invoke` until an `on_result` hook (which runs after every exporter)
is called. The hook is installed before anything starts, on every thread, and records only
inside that window.

    python benchmarks/answer_path.py                     # this checkout
    python benchmarks/answer_path.py --checkout /work/main --verbose   # another one, same venv
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGE = "refcheck_callbacks"
FLOOR = ("types.py", "errors.py", "contract/", "support/", "text/")
"""Modules every layer may call down into: entering them again is no hop back."""
COMPONENTS = ("check/", "extract/", "text/")
"""The extractor's and checker's own modules (and the text utilities they use): the second
figure leaves them out, to count the plumbing from the handler to the exporter alone."""

QUESTION = "How tall is the Eiffel Tower?"
DOCUMENTS = [
    "The Eiffel Tower is 330 metres tall and stands in Paris.",
    "It was completed in 1889 for the World's Fair.",
]
ANSWER = "The Eiffel Tower is 330 metres tall. It was completed in 1889."


class PathRecorder:
    """A profile hook: package files entered (in order) and calls between them."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.recording = False
        self.order: list[str] = []
        self.seen: set[str] = set()
        self.edges: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    def _relative(self, filename: str) -> str | None:
        if not filename.startswith(self.root):
            return None
        return filename[len(self.root) :].lstrip(os.sep)

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.recording or event != "call":
            return
        code = frame.f_code
        if code.co_name == "<module>":
            return
        callee = self._relative(code.co_filename)
        if callee is None:
            return
        caller_frame = frame.f_back
        caller = None
        while caller_frame is not None and caller is None:
            caller = self._relative(caller_frame.f_code.co_filename)
            caller_frame = caller_frame.f_back
        with self.lock:
            if callee not in self.seen:
                self.seen.add(callee)
                self.order.append(callee)
            if caller is not None and caller != callee:
                self.edges.add((caller, callee))

    def hops_back(self) -> list[tuple[str, str]]:
        rank = {name: index for index, name in enumerate(self.order)}
        return sorted(
            (caller, callee)
            for caller, callee in self.edges
            if rank.get(callee, 0) < rank.get(caller, 0) and not callee.startswith(FLOOR)
        )


def measure() -> dict[str, Any]:
    import refcheck_callbacks

    root = str(Path(refcheck_callbacks.__file__).parent)
    recorder = PathRecorder(root)
    threading.setprofile(recorder.hook)
    sys.setprofile(recorder.hook)

    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from refcheck_callbacks import RefCheckMonitor
    from refcheck_callbacks.exporters import OpenTelemetryExporter
    from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

    class Documents(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [Document(page_content=text, id=f"doc-{i}") for i, text in enumerate(DOCUMENTS)]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context:\n\n{context}"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=[ANSWER])
    retriever = Documents()
    chain = (
        {
            "context": retriever | (lambda docs: "\n\n".join(d.page_content for d in docs)),
            "question": lambda question: question,
        }
        | prompt
        | model
        | StrOutputParser()
    )
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    exporter = OpenTelemetryExporter(tracer_provider=provider)
    delivered = threading.Event()
    # A hook runs after every exporter: the answer's path ends when it is called.
    monitor = RefCheckMonitor(
        placement="thread", exporters=[exporter], on_result=lambda _: delivered.set()
    )
    handler = RefCheckCallbackHandler(monitor)

    def answer(traced: bool) -> None:
        delivered.clear()
        recorder.recording = traced
        chain.invoke(QUESTION, config={"callbacks": [handler]})
        if not delivered.wait(120):
            raise SystemExit("the answer was not checked within 120 s")
        recorder.recording = False

    answer(traced=False)  # warm-up: models loaded, caches filled, lazy imports done
    warm_spans = len(spans.get_finished_spans())
    answer(traced=True)
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    monitor.flush(timeout=30)
    exported = len(spans.get_finished_spans()) - warm_spans
    monitor.shutdown(timeout=30)
    if not exported:
        raise SystemExit("the traced answer exported no span")
    hops = recorder.hops_back()
    return {
        "package": root,
        "files": len(recorder.order),
        "plumbing": len([f for f in recorder.order if not f.startswith(COMPONENTS)]),
        "hops_back": len(hops),
        "order": recorder.order,
        "hop_edges": [f"{a} -> {b}" for a, b in hops],
        "spans": exported,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", help="measure the package of another checkout")
    parser.add_argument("--verbose", action="store_true", help="list the files and hops")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.checkout:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(options.checkout)}
        out = subprocess.run(
            [sys.executable, __file__, "--json"],
            env=env,
            cwd=options.checkout,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        figures = json.loads(out.strip().splitlines()[-1])
    else:
        figures = measure()
    if options.json:
        print(json.dumps(figures))
        return
    print(f"package: {figures['package']}")
    print(
        f"files on one answer's path: {figures['files']} ({figures['plumbing']} outside the "
        f"extractor, checker and text modules); hops back: {figures['hops_back']}"
    )
    if options.verbose:
        print("files, in the order first entered:")
        for name in figures["order"]:
            print(f"  {name}")
        print("hops back:")
        for edge in figures["hop_edges"]:
            print(f"  {edge}")


if __name__ == "__main__":
    main()
