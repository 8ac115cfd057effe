"""LangChain's objects as the instrumentations write them into span attributes (JSON), read
back: documents, chat messages, prompt values.

A LangGraph graph keeps its documents in its state (`{"context": [Document, ...]}`), and the
instrumentations record each node's state going in and out, each in its own way:
OpenInference as the objects' fields (`{"page_content": ..., "type": "Document"}`) or as
LangGraph's message dicts (`{"type": "human", "data": {...}}`), OpenLLMetry as LangChain's
own serialization (`{"lc": 1, "type": "constructor", "id": [..., "Document"], "kwargs":
{...}}`); apps and the GenAI conventions write role dicts (`{"role": "user", "content":
...}`). `unwrap` makes each of these one mapping with a `kind`.

Bounded: a scan visits at most `SCAN_NODES` values, `SCAN_DEPTH` levels down (the value is
already parsed: linear in the attribute).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from refcheck_callbacks.integrations.shared.user_input import answer_field, text_field

SCAN_NODES = 4096
"""Values looked at per attribute when looking for documents."""
SCAN_DEPTH = 8
_ROLES = {
    "human": "user",
    "user": "user",
    "humanmessage": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "tool": "tool",
    "toolmessage": "tool",
    "system": "system",
    "systemmessage": "system",
}


def unwrap(value: Any) -> tuple[str | None, Mapping[str, Any]] | None:
    """A serialized LangChain object's kind (its class name or type, lower-cased: "document",
    "humanmessage", "human", "chatpromptvalue") and fields; None for other values."""
    if not isinstance(value, Mapping):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), Mapping):
        path = value.get("id")
        kind = path[-1] if isinstance(path, list) and path and isinstance(path[-1], str) else None
        return (kind.lower() if kind else None), value["kwargs"]
    data = value.get("data")
    kind = value.get("type")
    if isinstance(data, Mapping) and isinstance(kind, str):
        return kind.lower(), data
    if isinstance(kind, str):
        return kind.lower(), value
    role = value.get("role")
    return (role.lower() if isinstance(role, str) else None), value


def document(value: Any) -> tuple[str, str | None] | None:
    """A serialized `Document`'s text and id (its `id`, else its metadata's)."""
    unwrapped = unwrap(value)
    if unwrapped is None:
        return None
    _, fields = unwrapped
    text = fields.get("page_content")
    if not isinstance(text, str) or not text:
        return None
    doc_id = fields.get("id")
    metadata = fields.get("metadata")
    if doc_id is None and isinstance(metadata, Mapping):
        doc_id = metadata.get("id")
    return text, (str(doc_id) if isinstance(doc_id, str | int) else None)


def documents(value: Any) -> Iterator[tuple[str, str | None]]:
    """The serialized documents in a parsed JSON value (a graph state, a node's input or
    output), depth first, bounded."""
    budget = [SCAN_NODES]
    yield from _documents(value, SCAN_DEPTH, budget)


def _documents(value: Any, depth: int, budget: list[int]) -> Iterator[tuple[str, str | None]]:
    budget[0] -= 1
    if budget[0] < 0 or depth < 0:
        return
    if isinstance(value, Mapping):
        found = document(value)
        if found is not None:
            yield found
            return
        for item in value.values():
            if isinstance(item, Mapping | list):
                yield from _documents(item, depth - 1, budget)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping | list):
                yield from _documents(item, depth - 1, budget)


def message(value: Any) -> tuple[str, str, bool] | None:
    """A chat message's role ("user", "assistant", "tool", "system"), its text and whether it
    asks for tools; a `("user", text)` pair too. None for anything else."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        role = _ROLES.get(value[0].lower())
        return None if role is None else (role, value[1], False)
    unwrapped = unwrap(value)
    if unwrapped is None or unwrapped[0] is None:
        return None
    kind, fields = unwrapped
    role = _ROLES.get(kind or "")
    if role is None:
        return None
    return role, content_text(fields.get("content")), bool(fields.get("tool_calls"))


def content_text(content: Any) -> str:
    """A message content's text: the text itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            text = block.get("text")
            parts.append(text if isinstance(text, str) else "")
    return "".join(parts)


def messages_of(value: Any) -> list[Any] | None:
    """A message list: the value itself, a state's `messages`, or a model input's batch of
    one (`{"messages": [[...]]}`); None when the value holds none."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if isinstance(value, list) and value and message(value[-1]) is not None:
        return value
    return None


def last_text(messages: list[Any], role: str) -> str | None:
    """The text of the last message of `role` that asks for no tools."""
    for item in reversed(messages):
        read = message(item)
        if read is not None and read[0] == role and not read[2] and read[1]:
            return read[1]
    return None


def is_prompt_value(value: Any) -> bool:
    """Whether a value is a serialized prompt template's output (`ChatPromptValue`,
    `StringPromptValue`): the span that wrote it rendered a prompt template."""
    unwrapped = unwrap(value)
    return unwrapped is not None and unwrapped[0] in ("chatpromptvalue", "stringpromptvalue")


def question_in(value: Any) -> str | None:
    """The user's text in a span's input: the text itself, the last user message of a message
    list or a state's `messages` (the turn being answered), or a mapping's user text field
    (`text_field`)."""
    if isinstance(value, str):
        return value or None
    messages = messages_of(value)
    if messages is not None:
        return last_text(messages, "user")
    return text_field(value) if isinstance(value, Mapping) else None


def answer_in(value: Any, question: str | None) -> str | None:
    """The answer in a span's output: the text itself, the last assistant message (asking for
    no tools) of a message list or a state's `messages`, or a mapping's answer field
    (`answer_field`: a graph's final state holds the question too)."""
    if isinstance(value, str):
        return value or None
    messages = messages_of(value)
    if messages is not None:
        return last_text(messages, "assistant")
    if isinstance(value, Mapping):
        key = answer_field(value, question)
        return None if key is None else value[key]
    return None
