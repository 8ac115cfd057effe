"""Reading what LangChain hands to callbacks: documents, generations, messages, run errors.

Duck-typed on purpose: providers fill these objects unevenly (ids in `Document.id` or in
metadata, scores under several keys, model names in start metadata or response metadata).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, ToolMessage

from refcheck_callbacks.contract.reasons import SkipReason
from refcheck_callbacks.integrations.shared.user_input import text_field

SCORE_KEYS = ("score", "relevance_score", "similarity_score", "_score")
ID_KEYS = ("id", "doc_id", "document_id")
CANCELLED = ("GeneratorExit", "CancelledError")
"""Errors a run ends with when its consumer stopped iterating or its task was cancelled."""


def document_of(found: Any) -> Any:
    """A search result's document: the item itself, or the first of a (document, score) pair
    (`similarity_search_with_score`)."""
    if type(found) is tuple and len(found) == 2 and isinstance(found[0], Document):
        return found[0]
    return found


def as_reference(document: Any) -> dict[str, Any]:
    """A reference as `intake` reads it (a document, or a (document, score) pair); the worker
    turns it into a `Reference`."""
    score = None
    if type(document) is tuple and len(document) == 2 and isinstance(document[0], Document):
        document, score = document
    metadata = getattr(document, "metadata", None)
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    doc_id = getattr(document, "id", None)
    if doc_id is None:
        doc_id = _first(metadata, ID_KEYS, object)
    return {
        "text": getattr(document, "page_content", document),
        "id": None if doc_id is None else str(doc_id),
        "score": _first(metadata, SCORE_KEYS, (int, float)) if score is None else score,
        "metadata": metadata,
    }


def _first(metadata: Mapping[str, Any], keys: tuple[str, ...], kind: Any) -> Any:
    """The first value under `keys` that is an instance of `kind` (plain loop: hot path)."""
    for key in keys:
        value = metadata.get(key)
        if value is not None and isinstance(value, kind):
            return value
    return None


def references_of(documents: Iterable[Any]) -> list[dict[str, Any]]:
    """The union of all retrievers' documents as references: one found twice is kept once."""
    seen: set[Any] = set()
    unique = []
    for reference in map(as_reference, documents):
        key = reference["id"] if reference["id"] is not None else reference["text"]
        if key not in seen:
            seen.add(key)
            unique.append(reference)
    return unique


def value_at(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


SCAN_ITEMS = 256
"""Values looked at per run output or input when looking for documents (on the app's thread:
bounded, whatever the output holds: a text costs one too, so a mapping of a million texts
costs what 256 do)."""
SCAN_DEPTH = 3
"""Containers nested in containers looked into (a graph state's list of lists)."""


def document_groups(value: Any) -> Sequence[Any]:
    """The documents a run's output (or a root's input) holds: lists (or tuples) of
    `Document`s, and single `Document`s, found in nested lists, tuples and dicts (a graph
    state, a parallel step's output) and tool messages' artifacts; in the order found. A list
    is recognised by its first item. Bounded (`SCAN_ITEMS`, `SCAN_DEPTH`) and type-tested
    first on purpose: it runs at chain ends, on the app's thread."""
    if type(value) is str or value is None:
        return ()  # most runs start and end with text
    found: list[Any] = []
    _scan(value, SCAN_DEPTH, found, [SCAN_ITEMS])
    return found


_SKIP, _DOCUMENT, _SEQUENCE, _MAPPING, _TOOL, _MESSAGE = range(6)
_KINDS: dict[type, int] = {
    str: _SKIP,
    list: _SEQUENCE,
    tuple: _SEQUENCE,
    dict: _MAPPING,
    ToolMessage: _TOOL,
    Document: _DOCUMENT,
}
"""What a type is to the scan, by type: `isinstance` against pydantic and abstract classes is
slow, and a chain's outputs are of few types. Bounded by `_MAX_KINDS`."""
_MAX_KINDS = 1024


def _kind(kind: type) -> int:
    found = _KINDS.get(kind)
    if found is None:
        if issubclass(kind, Document):
            found = _DOCUMENT
        elif issubclass(kind, ToolMessage):
            found = _TOOL
        elif issubclass(kind, BaseMessage):
            found = _MESSAGE
        elif issubclass(kind, Mapping):
            found = _MAPPING
        elif issubclass(kind, list | tuple):
            found = _SEQUENCE
        else:
            found = _SKIP
        if len(_KINDS) < _MAX_KINDS:
            _KINDS[kind] = found
    return found


def _scan(value: Any, depth: int, found: list[Any], budget: list[int]) -> None:
    kind = _kind(type(value))
    if kind == _SEQUENCE:
        if not value:
            return
        first = _kind(type(value[0]))
        if first == _DOCUMENT:
            found.append(value)
            return
        if first in (_MESSAGE, _TOOL):
            return  # a conversation: its tool results are read from the prompt, in the worker
        if type(value[0]) is str:
            return  # a list of texts
        items: Iterable[Any] = value
    elif kind == _MAPPING:
        items = value.values()
    elif kind == _DOCUMENT:
        found.append(value)
        return
    elif kind == _TOOL:
        items = (value.artifact,)
    else:
        return
    if depth == 0:
        return
    for item in items:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if type(item) is not str:  # most values are: no call
            _scan(item, depth - 1, found, budget)


def documents_in(value: Any, limit: int = sys.maxsize) -> list[Any]:
    """The first `limit` documents of `document_groups(value)`, in one list."""
    documents: list[Any] = []
    for group in document_groups(value):
        if len(documents) >= limit:
            break
        if isinstance(group, Document):
            documents.append(group)
        else:
            documents.extend(group[: limit - len(documents)])
    return documents


def is_documents(value: Any) -> bool:
    """Whether a run's output is documents and nothing else (a `Document`, or a list or tuple
    of them or of such lists): a retrieval, not an answer. Shallow: the first item of each
    level."""
    for _ in range(SCAN_DEPTH + 1):
        kind = _kind(type(value))
        if kind != _SEQUENCE or not value:
            return kind == _DOCUMENT
        value = value[0]
    return False


def role_of(message: Any) -> str | None:
    """ "human", "ai", "tool", "system" for a message, a ("user", text) tuple or a role dict."""
    if isinstance(message, BaseMessage):
        return message.type
    if isinstance(message, str):
        return "human"
    role = None
    if isinstance(message, tuple | list) and len(message) == 2:
        role = message[0]
    elif isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
    return {"user": "human", "assistant": "ai"}.get(role, role) if isinstance(role, str) else None


def content_of(message: Any) -> str | None:
    if isinstance(message, BaseMessage):
        return message_text(message.content)
    if isinstance(message, str):
        return message
    if isinstance(message, tuple | list) and len(message) == 2:
        return message_text(message[1])
    if isinstance(message, Mapping):
        return message_text(message.get("content", ""))
    return None


def is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and role_of(value[-1]) is not None


def last_message_text(messages: list[Any], role: str) -> str | None:
    """The text of the last message of `role` (an AI message asking for tools is skipped)."""
    for message in reversed(messages):
        if role_of(message) == role and not getattr(message, "tool_calls", None):
            return content_of(message)
    return None


def messages_in(value: Any) -> list[Any] | None:
    """A message list: the value itself, or a dict's `messages` (LangGraph's message state)."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    return value if is_messages(value) else None


def question_in(value: Any, reached: str | None = None) -> str | None:
    """The user's question in a run input: the text itself, the last human message of a
    message list (the turn being answered), or a dict's user text (`text_field`; `reached`:
    the query the run's first retriever was given)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, BaseMessage):
        return message_text(value.content) or None
    messages = messages_in(value)
    if messages is not None:
        return last_message_text(messages, "human")
    return text_field(value, reached) if isinstance(value, Mapping) else None


def message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def error_reason(error: BaseException) -> SkipReason:
    """Why a root run that ended with `error` is not checked."""
    return SkipReason.RUN_CANCELLED if type(error).__name__ in CANCELLED else SkipReason.RUN_ERROR


def first_generation(response: Any) -> Any:
    generations = getattr(response, "generations", None)
    if generations and generations[0]:
        return generations[0][0]
    return None


def requests_tools(generation: Any) -> bool:
    """An agent step asking for tools is not an answer, whatever text comes with it."""
    message = getattr(generation, "message", None)
    return bool(getattr(message, "tool_calls", None))


def model_name(kwargs: Mapping[str, Any]) -> str | None:
    metadata = kwargs.get("metadata") or {}
    params = kwargs.get("invocation_params") or {}
    name = metadata.get("ls_model_name") or params.get("model") or params.get("model_name")
    return name if isinstance(name, str) else None


def response_model(generation: Any) -> str | None:
    metadata = getattr(getattr(generation, "message", None), "response_metadata", None) or {}
    name = metadata.get("model_name") or metadata.get("model")
    return name if isinstance(name, str) else None


def response_id(generation: Any, response: Any) -> str | None:
    """The provider's id of the generation (`gen_ai.response.id`), never LangChain's run id."""
    message = getattr(generation, "message", None)
    metadata = getattr(message, "response_metadata", None) or {}
    llm_output = getattr(response, "llm_output", None) or {}
    for candidate in (metadata.get("id"), llm_output.get("id"), getattr(message, "id", None)):
        if isinstance(candidate, str) and not candidate.startswith(("lc_", "run-")):
            return candidate
    return None
