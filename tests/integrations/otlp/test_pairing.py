"""Pairing a received trace by each convention's attributes: what the answering model saw is
the references, what the user got is the answer; a shape no rule covers is unpaired."""

from __future__ import annotations

import json
import os
from typing import Any

from otlp_export import export, new_trace_id, span
from otlp_export import received as received_spans

from refcheck_callbacks.integrations.otlp.pairing import TraceShape, shape_of
from refcheck_callbacks.integrations.otlp.traces import OpenTrace

EIFFEL = "The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889."
PYTHON = "Python was created by Guido van Rossum and first released in 1991."
QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 450 metres tall."


def trace_of(*spans: tuple[str, str | None, dict[str, Any]]) -> OpenTrace:
    """A decoded trace of (name, parent name, attributes) spans, in start order."""
    trace_id = new_trace_id()
    ids = {name: os.urandom(8) for name, _, _ in spans}
    built = [
        span(trace_id, ids[name], ids[parent] if parent else b"", name, attributes, start=i)
        for i, (name, parent, attributes) in enumerate(spans, start=1)
    ]
    received = received_spans(export(*built))
    trace = OpenTrace(received[0].trace_id, 0.0, 0.0, received)
    trace.root = next(s for s in received if s.parent_id is None)
    return trace


def paired(trace: OpenTrace) -> tuple[TraceShape, Any]:
    shape = shape_of(trace)
    assert shape is not None
    return shape, shape.pairing.pair()


def test_openinference_the_shown_document_of_the_answering_call() -> None:
    shape, result = paired(
        trace_of(
            (
                "chain",
                None,
                {
                    "openinference.span.kind": "CHAIN",
                    "input.value": json.dumps({"question": QUESTION}),
                    "input.mime_type": "application/json",
                    "output.value": ANSWER,
                },
            ),
            (
                "retriever",
                "chain",
                {
                    "openinference.span.kind": "RETRIEVER",
                    "retrieval.documents.0.document.content": EIFFEL,
                    "retrieval.documents.0.document.id": "eiffel",
                    "retrieval.documents.0.document.score": 0.9,
                    "retrieval.documents.1.document.content": PYTHON,
                },
            ),
            (
                "rewrite",
                "chain",
                {  # a query rewrite: a model call that saw no document
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": "Rewrite: " + QUESTION,
                    "llm.output_messages.0.message.content": "Eiffel Tower height",
                },
            ),
            (
                "llm",
                "chain",
                {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-test",
                    "llm.input_messages.0.message.role": "system",
                    "llm.input_messages.0.message.content": f"Context:\n{EIFFEL}",
                    "llm.input_messages.1.message.role": "user",
                    "llm.input_messages.1.message.content": QUESTION,
                    "llm.output_messages.0.message.content": ANSWER,
                },
            ),
        )
    )
    assert shape.question == QUESTION
    assert shape.convention == "openinference"
    assert result.answer == ANSWER
    assert result.references == [{"text": EIFFEL, "id": "eiffel", "score": 0.9}]
    assert result.model == "gpt-test"


def test_openllmetry_entity_input_and_gen_ai_prompt_attributes() -> None:
    shape, result = paired(
        trace_of(
            (
                "workflow",
                None,
                {
                    "traceloop.span.kind": "workflow",
                    "traceloop.entity.input": json.dumps({"inputs": {"question": QUESTION}}),
                    "traceloop.entity.output": json.dumps({"outputs": ANSWER}),
                },
            ),
            (
                "retrieve",
                "workflow",
                {
                    "traceloop.span.kind": "task",
                    "traceloop.entity.output": json.dumps(
                        {
                            "documents": [{"page_content": EIFFEL, "metadata": {"id": "e"}}],
                            "count": 1,
                        }
                    ),
                },
            ),
            (
                "chat",
                "workflow",
                {
                    "llm.request.type": "chat",
                    "gen_ai.request.model": "gpt-test",
                    "gen_ai.prompt.0.role": "system",
                    "gen_ai.prompt.0.content": f"Context:\n{EIFFEL}",
                    "gen_ai.prompt.1.role": "user",
                    "gen_ai.prompt.1.content": QUESTION,
                    "gen_ai.completion.0.content": ANSWER,
                },
            ),
        )
    )
    assert shape.question == QUESTION
    assert result.answer == ANSWER
    assert result.references == [{"text": EIFFEL, "id": "e", "score": None}]


def test_genai_messages_and_retrieval_documents() -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
    ]
    shape, result = paired(
        trace_of(
            (
                "agent",
                None,
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.input.messages": json.dumps(messages),
                },
            ),
            (
                "retrieval",
                "agent",
                {
                    "gen_ai.operation.name": "retrieval",
                    "gen_ai.retrieval.documents": json.dumps(
                        [
                            {"id": "e", "score": 0.8, "content": EIFFEL},
                            {"id": "p", "content": PYTHON},
                        ]
                    ),
                },
            ),
            (
                "chat",
                "agent",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system_instructions": json.dumps(
                        [{"type": "text", "content": f"Answer from: {EIFFEL}"}]
                    ),
                    "gen_ai.input.messages": json.dumps(messages),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
                    ),
                    "gen_ai.response.id": "resp-1",
                },
            ),
        )
    )
    assert shape.question == QUESTION
    assert result.answer == ANSWER
    assert result.references == [{"text": EIFFEL, "id": "e", "score": 0.8}]
    assert result.response_id == "resp-1"


def test_documents_the_prompt_does_not_show_are_no_references() -> None:
    _, result = paired(
        trace_of(
            ("chain", None, {"openinference.span.kind": "CHAIN", "input.value": QUESTION}),
            (
                "retriever",
                "chain",
                {
                    "openinference.span.kind": "RETRIEVER",
                    "retrieval.documents.0.document.content": PYTHON,
                },
            ),
            (
                "llm",
                "chain",
                {
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.content": QUESTION,
                    "llm.output_messages.0.message.content": ANSWER,
                },
            ),
        )
    )
    assert result is None


def test_shapes_no_rule_covers_are_unpaired() -> None:
    http_only = trace_of(("GET /", None, {"http.method": "GET"}), ("db", "GET /", {}))
    no_text = trace_of(
        ("chain", None, {"openinference.span.kind": "CHAIN"}),
        ("llm", "chain", {"openinference.span.kind": "LLM"}),
    )
    assert shape_of(http_only) is None
    assert shape_of(no_text) is None


def test_parent_cycles_of_hostile_ids_are_read_in_linear_time() -> None:
    trace_id = new_trace_id()
    a, b = os.urandom(8), os.urandom(8)
    built = [
        span(trace_id, a, b, "a", {"openinference.span.kind": "LLM", "output.value": ANSWER}),
        span(trace_id, b, a, "b"),
    ]
    received = received_spans(export(*built))
    trace = OpenTrace(received[0].trace_id, 0.0, 0.0, received, root=received[0])
    shape = shape_of(trace)
    assert shape is not None
    assert shape.pairing.pair() is None  # no documents: nothing to check against


def test_openllmetry_model_calls_written_in_the_genai_messages() -> None:
    """OpenLLMetry 0.50+ marks a call `llm.request.type` and writes its messages as
    `gen_ai.input.messages`: the prompt is read from those."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": f"{EIFFEL} {QUESTION}"}]}]
    _, result = paired(
        trace_of(
            (
                "workflow",
                None,
                {
                    "traceloop.span.kind": "workflow",
                    "traceloop.entity.input": json.dumps({"inputs": QUESTION}),
                },
            ),
            (
                "retrieve",
                "workflow",
                {
                    "traceloop.entity.output": json.dumps({"documents": [EIFFEL, PYTHON]}),
                },
            ),
            (
                "chat",
                "workflow",
                {
                    "llm.request.type": "chat",
                    "gen_ai.input.messages": json.dumps(messages),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
                    ),
                },
            ),
        )
    )
    assert result.answer == ANSWER
    assert [r["text"] for r in result.references] == [EIFFEL]
