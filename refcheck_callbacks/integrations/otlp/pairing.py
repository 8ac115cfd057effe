"""The rules that pair a received trace's question, answer and references: the callbacks' rules,
read from spans.

- Question: the input of the outermost span that has one (the root's, unless the root is, say,
  an HTTP server span that records none): the user's text (a graph state's user field, the
  last user message of its `messages`), never a retriever's query.
- Answer: the outermost span's output that holds one (what the user got): its text, a graph
  state's answer field or last assistant message; else the answering model call's output.
- The answering model call: among the trace's model calls, the last one whose prompt shows a
  candidate document; else the last one.
- References: the candidate documents (retrievers, rerankers, GenAI retrieval spans, and the
  documents chain spans hold: a LangGraph state) whose text is in the answering call's prompt
  (`shared.prompt_match`). Where none is, what the model saw is its prompt: the context it
  carries by its structure, its tool results and its template's variables
  (`prompt_context`), marked so in the request's metadata and counted by the receiver. None
  there either: nothing to check against, counted `no_references`. A reference inside another
  is left out and counted (`shared.overlap`).

A trace with no model call, or none that wrote text and no text output above it, fits no rule:
`shape_of` returns None and the receiver counts it `trace_unpaired`. Reading which documents
reached which prompt is linear in the prompts and documents, and happens in the monitor's
worker (`TracePairing.pair`), after sampling, never on the receiver's request path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from refcheck_callbacks.contract.answers import Paired, Pairing
from refcheck_callbacks.integrations.otlp import serialized
from refcheck_callbacks.integrations.otlp.conventions import Document, SpanView, views
from refcheck_callbacks.integrations.otlp.prompt_context import (
    FROM_DOCUMENTS,
    FROM_PROMPT,
    SOURCE_KEY,
    context_of,
)
from refcheck_callbacks.integrations.otlp.traces import OpenTrace
from refcheck_callbacks.integrations.shared import overlap
from refcheck_callbacks.integrations.shared.prompt_match import Prompt, canonical

_SAW_CHECK_DOCUMENTS = 20
"""Documents tried per model call when telling which one saw the context."""


@dataclass(frozen=True, slots=True)
class TraceShape:
    """What a trace's spans tell without reading prompts, and the pairing left to the worker."""

    question: str | None
    convention: str
    pairing: TracePairing


@dataclass(slots=True)
class TracePairing(Pairing):
    llms: list[SpanView]
    """Model calls, in order of their end."""
    documents: list[Document]
    """The retrieved documents, and those the trace's chain spans hold (a graph's state)."""
    output: str | None
    """The outermost span's answer, if any (its text output, or its state's answer field)."""
    question: str | None = None
    templates: list[dict[str, str]] = field(default_factory=list)
    """The variables of the prompt templates the trace rendered."""
    on_paired: Callable[[str], None] | None = None
    """Told where the references came from (`FROM_DOCUMENTS`, `FROM_PROMPT`), for the
    receiver's counts."""

    def pair(self) -> Paired | None:
        answering, prompt = self._answering()
        references = _shown(self.documents, prompt)
        source = FROM_DOCUMENTS
        if not references:
            # No retrieved document reached a prompt: what the model saw is its prompt.
            answering = next((llm for llm in reversed(self.llms) if llm.generated), answering)
            prompt = Prompt("\n".join(answering.prompt))
            references = context_of(prompt, answering.tool_results, self.templates, self.question)
            source = FROM_PROMPT
        if not references:
            return None
        references, contained = overlap.distinct(references)
        metadata = overlap.left_out(contained)
        if source == FROM_PROMPT:
            metadata[SOURCE_KEY] = FROM_PROMPT
        if self.on_paired is not None:
            self.on_paired(source)
        answer = self.output or answering.generated
        return Paired(answer, references, answering.model, answering.response_id, metadata or None)

    def _answering(self) -> tuple[SpanView, Prompt]:
        probes = [document.text for document in self.documents[:_SAW_CHECK_DOCUMENTS]]
        last = None
        for llm in reversed(self.llms):
            prompt = Prompt("\n".join(llm.prompt))
            if last is None:
                last = (llm, prompt)
            if any(map(prompt.shows, probes)):
                return llm, prompt
        assert last is not None, "a shape has a model call"
        return last


def _shown(documents: Sequence[Document], prompt: Prompt) -> list[dict[str, Any]]:
    """The documents `prompt` shows (with the chunk-overlap rule of `Prompt.shown`), each text
    once (a later copy fills a missing id/score)."""
    if not prompt:
        return []
    unique: dict[str, dict[str, Any]] = {}
    for document in documents:
        key = canonical(document.text)
        seen = unique.get(key)
        if seen is None:
            unique[key] = {
                "text": document.text,
                "id": document.id,
                "score": document.score,
            }
        else:
            seen["id"] = seen["id"] or document.id
            seen["score"] = document.score if seen["score"] is None else seen["score"]
    candidates = list(unique.values())
    flags = prompt.shown([candidate["text"] for candidate in candidates])
    return [candidate for candidate, shown in zip(candidates, flags, strict=True) if shown]


def shape_of(trace: OpenTrace, on_paired: Callable[[str], None] | None = None) -> TraceShape | None:
    """The trace's shape, or None when no rule covers it (unpaired); `on_paired` is told where
    its references came from once it is paired (`TracePairing.on_paired`)."""
    read = views(trace.spans)
    llms = sorted((v for v in read if v.is_llm), key=lambda v: v.span.end_ns)
    if not llms:
        return None
    depth = _depths(read)
    outer = sorted(read, key=lambda v: depth[v.span.span_id])
    question = next((v.input for v in outer if v.input), None)
    output = next(
        (a for v in outer if (a := v.output or serialized.answer_in(v.output_value, question))),
        None,
    )
    if output is None and not any(llm.generated for llm in llms):
        return None
    documents = [d for v in read for d in v.documents]
    templates = [v.template for v in read if v.template]
    conventions = {v.convention for v in [*llms, *outer] if v.convention}
    convention = "+".join(sorted(conventions))
    pairing = TracePairing(llms, documents, output, question, templates, on_paired)
    return TraceShape(question, convention, pairing)


def _depths(read: Sequence[SpanView]) -> dict[str, int]:
    """Each span's distance from the top of its trace (a span whose parent was not received
    counts as a top), in linear time: parents are resolved with memoisation, cycles cut."""
    parent = {v.span.span_id: v.span.parent_id for v in read}
    depth: dict[str, int] = {}
    for start in parent:
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = start
        while node is not None and node in parent and node not in depth and node not in on_path:
            path.append(node)
            on_path.add(node)
            node = parent[node]
        base = depth[node] if node is not None and node in depth else -1
        for offset, member in enumerate(reversed(path), start=1):
            depth[member] = base + offset
    return depth
