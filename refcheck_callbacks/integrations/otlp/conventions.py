"""What one received span says, read by the attribute conventions we know.

Each span is read into a `SpanView`: is it a model call (and then its prompt and its output),
a retrieval (and then its documents), and what went in and came out of it. Three conventions:

- OpenInference: `openinference.span.kind`; `input.value` / `output.value` (with
  `input.mime_type`); `llm.input_messages.N.message.role|content` (or
  `.message.contents.M.message_content.text`), `llm.output_messages.N.message.content`,
  `llm.prompts.N(.prompt.text)`, `llm.model_name`; `retrieval.documents.N.document.content|id|
  score`, and a reranker's `reranker.output_documents.N.document...`;
- OpenLLMetry (Traceloop): `traceloop.span.kind`, `traceloop.entity.input|output` (JSON of
  `{"inputs": ...}`, `{"outputs": ...}`, a retriever's `{"documents": [{"page_content"}]}`),
  `gen_ai.prompt.N.role|content`, `gen_ai.completion.N.content`;
- the OpenTelemetry GenAI conventions: `gen_ai.input.messages`, `gen_ai.output.messages`,
  `gen_ai.system_instructions` (JSON, or structured values), `gen_ai.retrieval.documents`,
  `gen_ai.request.model`, `gen_ai.response.id`, and the same attributes on the
  `gen_ai.client.inference.operation.details` event.

Beyond a convention's own fields, what LangChain's instrumentations record of a run is read
too (`serialized`): the documents a chain span's input or output holds (a LangGraph node's
state), a state's `messages` (its last user message, its last answer), a prompt template's
variables (OpenInference's `llm.prompt_template.variables`; an OpenLLMetry task that wrote a
`ChatPromptValue`), and which of a model call's prompt messages are tool results.

Attributes that none of these explain leave the view empty: a span of no known convention
contributes nothing, and a trace of such spans is unpaired. JSON is parsed only from a
convention's own attributes, each at most as long as the span (linear).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from refcheck_callbacks.integrations.otlp import serialized
from refcheck_callbacks.integrations.otlp.decode import ReceivedSpan

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_INDEXED = re.compile(r"^(?P<prefix>[a-z_.]+?)\.(?P<index>\d+)\.(?P<rest>.+)$")
_LLM_KINDS = frozenset({"LLM"})
_MAX_DEPTH = 6
"""Levels of a JSON input read for a prompt's strings."""
_RETRIEVAL_KINDS = frozenset({"RETRIEVER", "RERANKER"})
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_LLM_REQUEST_TYPES = frozenset({"chat", "completion"})
_OPENLLMETRY_KEYS = ("traceloop.", "llm.request.type", "gen_ai.prompt.", "gen_ai.completion.")


@dataclass(frozen=True, slots=True)
class Document:
    text: str
    id: str | None = None
    score: float | None = None


@dataclass(slots=True)
class SpanView:
    """What a span says, in any of the conventions. Texts are None when the span does not
    say them."""

    span: ReceivedSpan
    convention: str | None = None
    """"openinference", "openllmetry" or "genai"; None: no convention we read."""
    is_llm: bool = False
    prompt: list[str] = field(default_factory=list)
    """The model call's prompt: system instructions and messages, in order."""
    generated: str | None = None
    """The model call's output text."""
    documents: list[Document] = field(default_factory=list)
    input: str | None = None
    """The user's text among the span's input (a chain's input, the last user message)."""
    output: str | None = None
    """The span's output, when it is text."""
    output_value: Any = None
    """The span's output as parsed, when it is not text (a chain's output dict, a graph's
    final state): its answer is read once the question is known (`serialized.answer_in`)."""
    tool_results: list[str] = field(default_factory=list)
    """The model call's prompt messages that are tool results."""
    template: dict[str, str] | None = None
    """The text variables of the prompt template this span rendered."""
    model: str | None = None
    response_id: str | None = None


def read(span: ReceivedSpan) -> SpanView:
    attributes = dict(span.attributes)
    for name, event_attributes in span.events:
        if name == DETAILS_EVENT:
            for key, value in event_attributes.items():
                attributes.setdefault(key, value)
    view = SpanView(span)
    if "openinference.span.kind" in attributes:
        _openinference(view, attributes)
    elif any(key.startswith(_OPENLLMETRY_KEYS) for key in attributes):
        _openllmetry(view, attributes)
    if not view.prompt and not view.documents:
        # GenAI attributes on their own, or beside the others (OpenLLMetry 0.50+ writes its
        # model calls as gen_ai.input.messages / gen_ai.output.messages)
        _genai(view, attributes)
    view.model = view.model or _text(
        attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model")
    )
    view.response_id = _text(attributes.get("gen_ai.response.id"))
    return view


# -- OpenInference -----------------------------------------------------------------------------


def _openinference(view: SpanView, attributes: Mapping[str, Any]) -> None:
    view.convention = "openinference"
    kind = str(attributes.get("openinference.span.kind", "")).upper()
    given = _parsed(attributes.get("input.value"), attributes.get("input.mime_type"))
    _set_output(view, _parsed(attributes.get("output.value"), attributes.get("output.mime_type")))
    view.input = serialized.question_in(given)
    indexed = _indexed(attributes)
    variables = _json(attributes.get("llm.prompt_template.variables"))
    if isinstance(variables, Mapping):
        view.template = _text_values(variables)
    if kind not in _LLM_KINDS and kind not in _RETRIEVAL_KINDS:
        view.documents = _state_documents(given, view.output_value)
    if kind in _LLM_KINDS:
        view.is_llm = True
        messages = indexed.get("llm.input_messages", {})
        view.prompt = [t for i in sorted(messages) if (t := _oi_message(messages[i]))]
        view.tool_results = [
            t
            for i in sorted(messages)
            if messages[i].get("message.role") == "tool" and (t := _oi_message(messages[i]))
        ]
        view.prompt = view.prompt or _oi_prompts(attributes, indexed)
        outputs = indexed.get("llm.output_messages", {})
        texts = [t for i in sorted(outputs) if (t := _oi_message(outputs[i]))]
        view.generated = texts[-1] if texts else view.output
        view.model = _text(attributes.get("llm.model_name"))
    if kind in _RETRIEVAL_KINDS:
        prefix = "retrieval.documents" if kind == "RETRIEVER" else "reranker.output_documents"
        documents = indexed.get(prefix, {})
        view.documents = [
            d for i in sorted(documents) if (d := _oi_document(documents[i])) is not None
        ]


def _is_plain_prompt(key: str, prefix: str) -> bool:
    """`llm.prompts.N` with nothing after the index (older OpenInference)."""
    head, _, index = key.rpartition(".")
    return head == prefix and index.isdigit()


def _oi_prompts(
    attributes: Mapping[str, Any], indexed: Mapping[str, dict[int, dict[str, Any]]]
) -> list[str]:
    """A completion call's prompt: `llm.prompts` (an array, or `llm.prompts.N[.prompt.text]`),
    else the prompt template's variables (LlamaIndex's `predict`), else the strings of the
    call's JSON input."""
    prompts = attributes.get("llm.prompts")
    if isinstance(prompts, list):
        return [p for p in prompts if isinstance(p, str) and p]
    numbered = indexed.get("llm.prompts", {})
    texts = [_text(numbered[i].get("prompt.text")) for i in sorted(numbered)]
    texts += [_text(v) for k, v in attributes.items() if _is_plain_prompt(k, "llm.prompts")]
    if found := [t for t in texts if t]:
        return found
    for key in ("llm.prompt_template.variables", "input.value"):
        if found := list(_strings(_json(attributes.get(key)), _MAX_DEPTH)):
            return found
    return []


def _strings(value: Any, depth: int) -> Iterator[str]:
    """The strings in a JSON value, depth first, `depth` levels down at most."""
    if isinstance(value, str):
        if value:
            yield value
    elif depth > 0 and isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth - 1)
    elif depth > 0 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth - 1)


def _oi_message(fields: Mapping[str, Any]) -> str | None:
    content = _text(fields.get("message.content"))
    if content:
        return content
    parts = [
        _text(v)
        for k, v in sorted(fields.items())
        if k.startswith("message.contents.") and k.endswith("message_content.text")
    ]
    return "\n".join(p for p in parts if p) or None


def _oi_document(fields: Mapping[str, Any]) -> Document | None:
    text = _text(fields.get("document.content"))
    if not text:
        return None
    return Document(text, _text(fields.get("document.id")), _number(fields.get("document.score")))


# -- OpenLLMetry -------------------------------------------------------------------------------


def _openllmetry(view: SpanView, attributes: Mapping[str, Any]) -> None:
    view.convention = "openllmetry"
    entity_input = _json(attributes.get("traceloop.entity.input"))
    entity_output = _json(attributes.get("traceloop.entity.output"))
    given = entity_input.get("inputs") if isinstance(entity_input, Mapping) else None
    outputs = entity_output.get("outputs") if isinstance(entity_output, Mapping) else None
    view.input = serialized.question_in(given)
    _set_output(view, outputs)
    if isinstance(entity_output, Mapping):
        view.documents = list(_openllmetry_documents(entity_output.get("documents")))
    view.documents += _state_documents(given, outputs)
    if serialized.is_prompt_value(outputs) and isinstance(given, Mapping):
        view.template = _text_values(given)  # a prompt template's variables
    indexed = _indexed(attributes)
    prompts = indexed.get("gen_ai.prompt", {})
    completions = indexed.get("gen_ai.completion", {})
    request_type = attributes.get("llm.request.type")
    if prompts or completions or request_type in _LLM_REQUEST_TYPES:
        view.is_llm = True
        view.prompt = [t for i in sorted(prompts) if (t := _text(prompts[i].get("content")))]
        view.tool_results = [
            t
            for i in sorted(prompts)
            if prompts[i].get("role") == "tool" and (t := _text(prompts[i].get("content")))
        ]
        texts = [t for i in sorted(completions) if (t := _text(completions[i].get("content")))]
        view.generated = texts[-1] if texts else None


def _openllmetry_documents(documents: Any) -> Iterator[Document]:
    for document in documents if isinstance(documents, list) else ():
        if isinstance(document, str) and document:
            yield Document(document)
        elif isinstance(document, Mapping):
            text = _text(document.get("page_content"))
            metadata = document.get("metadata")
            doc_id = metadata.get("id") if isinstance(metadata, Mapping) else None
            if text:
                yield Document(text, _text(document.get("id") or doc_id))


# -- GenAI conventions ---------------------------------------------------------------------------


def _genai(view: SpanView, attributes: Mapping[str, Any]) -> None:
    inputs = _structured(attributes.get("gen_ai.input.messages"))
    outputs = _structured(attributes.get("gen_ai.output.messages"))
    documents = _structured(attributes.get("gen_ai.retrieval.documents"))
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(documents, list):
        view.documents = list(_genai_documents(documents))
    is_llm = operation in _LLM_OPERATIONS or (
        operation is None and isinstance(inputs, list) and isinstance(outputs, list)
    )
    if isinstance(inputs, list):
        users = [
            _genai_text(m) for m in inputs if isinstance(m, Mapping) and m.get("role") == "user"
        ]
        view.input = view.input or next((t for t in reversed(users) if t), None)
    if isinstance(outputs, list):
        texts = [_genai_text(m) for m in outputs if isinstance(m, Mapping)]
        view.output = view.output or next((t for t in reversed(texts) if t), None)
        if view.output is not None:
            view.output_value = None
    if not is_llm:
        if view.documents or inputs is not None or outputs is not None:
            view.convention = view.convention or "genai"
        return
    view.convention = view.convention or "genai"
    view.is_llm = True
    system = _structured(attributes.get("gen_ai.system_instructions"))
    prompt = [_parts_text(system)] if isinstance(system, list) else []
    for message in inputs if isinstance(inputs, list) else ():
        if isinstance(message, Mapping):
            prompt.append(_genai_text(message))
            if message.get("role") == "tool":
                view.tool_results.append(_genai_text(message))
    view.prompt = [t for t in prompt if t]
    view.tool_results = [t for t in view.tool_results if t]
    view.generated = view.output


def _genai_text(message: Mapping[str, Any]) -> str:
    return _parts_text(message.get("parts"))


def _parts_text(parts: Any) -> str:
    """The text of a GenAI message's parts: text parts' `content`, tool responses' `response`."""
    texts = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text":
            texts.append(_text(part.get("content")))
        elif part.get("type") == "tool_call_response":
            response = part.get("response")
            texts.append(response if isinstance(response, str) else _dumps(response))
    return "\n".join(t for t in texts if t)


def _genai_documents(documents: list[Any]) -> Iterator[Document]:
    for document in documents:
        if isinstance(document, Mapping):
            text = _text(document.get("content") or document.get("text"))
            if text:
                yield Document(text, _text(document.get("id")), _number(document.get("score")))


# -- values ---------------------------------------------------------------------------------------


def _indexed(attributes: Mapping[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """`prefix.N.rest` attributes grouped: {prefix: {N: {rest: value}}}."""
    grouped: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attributes.items():
        match = _INDEXED.match(key)
        if match is not None:
            items = grouped.setdefault(match["prefix"], {})
            items.setdefault(int(match["index"]), {})[match["rest"]] = value
    return grouped


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _structured(value: Any) -> Any:
    """A structured attribute: JSON text, or the array / kvlist value itself."""
    return _json(value) if isinstance(value, str) else value


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return ""


def _parsed(value: Any, mime_type: Any) -> Any:
    """A span's input or output value: its text, or the value its JSON holds."""
    if not isinstance(value, str) or not value:
        return None
    return _json(value) if mime_type == "application/json" else value


def _set_output(view: SpanView, value: Any) -> None:
    if isinstance(value, str):
        view.output = value or None
    elif value is not None:
        view.output_value = value


def _text_values(fields: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): v for k, v in fields.items() if isinstance(v, str) and v}


def _state_documents(*values: Any) -> list[Document]:
    """The documents a chain's (a graph node's) input and output hold, as LangChain's
    instrumentations serialize them (`serialized`): a graph's state keeps its documents."""
    return [
        Document(text, doc_id) for value in values for text, doc_id in serialized.documents(value)
    ]


def views(spans: Iterable[ReceivedSpan]) -> list[SpanView]:
    """The spans' views, in order of their start."""
    return [read(span) for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns))]
