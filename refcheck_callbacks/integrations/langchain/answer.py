"""Where the answer the user got is in what a LangChain run returned.

The rule, by shape, not by names:

- text is the answer; JSON text holding an object (a model in JSON mode, returned as it wrote
  it) is a structured answer (below);
- a message: its text; one with no text that calls tools asked for them, and holds no answer
  (a structured answer in a tool call reaches the app through a parser, as an object);
- a message list, or a graph's `messages` state: its last AI message that asks for no tool;
- an app's pydantic object or a mapping that is a structured answer (`CitedAnswer`,
  `{"answer": ..., "citations": [...]}`): its *answer field*: the one field holding prose (more
  than one word); with several, the first under a conventional key (`ANSWER_KEYS`), else the
  longest. Its *citations* are the first list field of source ids (integers, or texts, or
  objects holding one: `Citation(source_id=0, quote=...)`). A structured object with no prose
  (a grading `{"binary_score": "yes"}`, a route, a rating) holds no answer. LangChain's own
  pydantic objects (a `Document`, a message) are never structured answers;
- any other mapping (a graph's final state, a chain's output dict): the values an LLM of the
  run wrote verbatim (`Found.generation` says which; the pairing picks among several), else a
  structured answer among its values (`{"answer": CitedAnswer(...)}`, an agent's
  `structured_response` where its last AI message gives no text), else its answer field as
  above, the user's own question left out.

`Found.field` names the field taken ("generation", "answer.answer"), so a result says where
its answer came from. Everything here is read on the app's thread when the root ends: it
looks at the output's top two levels only, and parses JSON text of at most `MAX_JSON_CHARS`
(C code, linear).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.load.serializable import Serializable
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.shared.user_input import answer_field

MAX_JSON_CHARS = 1 << 16
"""JSON text longer than this is not read as a structured answer (parsed on the app's thread)."""
MAX_CITATIONS = 64


@dataclass(frozen=True, slots=True)
class Found:
    """One candidate answer in a run's output."""

    text: str
    generation: Any = None
    """The generation that wrote `text` verbatim, when one did."""
    field: str | None = None
    """The field of the output it was taken from; None when the output was the text."""
    structured: bool = False
    """Taken from a structured answer (pydantic, JSON, a tool call's arguments)."""
    citations: tuple[Any, ...] = ()
    """The structured answer's citations as it gave them (indexes or ids of sources)."""


NO_ANSWER = Found("")
"""The output is a structured object with no answer in it: the user got no text."""


def app_model(value: Any) -> bool:
    """Whether `value` is a pydantic object of the app's (`CitedAnswer`), not one of
    LangChain's own (a `Document`, a message: pydantic too)."""
    return isinstance(value, BaseModel) and not isinstance(value, Serializable)


def fields_of(value: Any) -> Mapping[str, Any] | None:
    """The fields of a structured object: an app's pydantic model's, a mapping's; else None."""
    if app_model(value):
        return {name: getattr(value, name, None) for name in type(value).model_fields}
    if isinstance(value, Mapping):
        return value
    return None


def _citation(item: Any) -> Any:
    """A source id from one citation: an int or a text, or the first one an object holds."""
    if isinstance(item, int | str) and not isinstance(item, bool):
        return item
    fields = fields_of(item)
    if fields:
        for value in fields.values():
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def citations_in(fields: Mapping[str, Any], answer_key: str) -> tuple[Any, ...]:
    """The first list field (other than the answer) whose items are source ids."""
    for key, value in fields.items():
        if key == answer_key or not isinstance(value, list | tuple) or not value:
            continue
        ids = [_citation(item) for item in value[:MAX_CITATIONS]]
        if all(i is not None for i in ids):
            return tuple(ids)
    return ()


def structured(value: Any, prefix: str | None = None) -> Found | None:
    """The answer in a structured object (`NO_ANSWER` where it holds none); None when
    `value` is not one."""
    fields = fields_of(value)
    if fields is None:
        return None
    key = answer_field(fields)
    if key is None:
        return NO_ANSWER
    field = key if prefix is None else f"{prefix}.{key}"
    return Found(fields[key], None, field, True, citations_in(fields, key))


def json_object(text: str) -> Any:
    """The object JSON text holds, when it holds one (bounded; see `MAX_JSON_CHARS`)."""
    if len(text) > MAX_JSON_CHARS:
        return None
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python recurses
        return None
    return parsed if isinstance(parsed, dict) else None


def tool_call_arguments(message: Any) -> Mapping[str, Any] | None:
    """The arguments of a message's first tool call, when it has one."""
    calls = getattr(message, "tool_calls", None)
    if calls and isinstance(calls[0], Mapping):
        args = calls[0].get("args")
        return args if isinstance(args, Mapping) else None
    return None


def in_text(text: str, field: str | None, generated: Mapping[str, Any]) -> Found:
    parsed = json_object(text)
    if parsed is not None:
        found = structured(parsed, field)
        if found is not None:
            return found
    return Found(text, generated.get(text.strip()), field)


def in_message(message: BaseMessage, field: str, generated: Mapping[str, Any]) -> Found:
    """A message's text; one with no text that calls tools asked for them: no answer (a
    structured answer in a tool call reaches the app through a parser, as an object)."""
    text = read.message_text(message.content)
    if not text.strip() and getattr(message, "tool_calls", None):
        return NO_ANSWER
    return in_text(text, field, generated)


def answers_in(
    value: Any, key: str | None, generated: Mapping[str, Any], question: str | None
) -> list[Found]:
    """The candidate answers in a run's output (see the module), in order; `[NO_ANSWER]`
    when the output is a structured object without one, `[]` when it holds no text at all.

    `generated` maps each generation's stripped text (or a tool-call generation's structured
    answer) to the generation."""
    field = key
    if key is not None:
        value = read.value_at(value, key)
    if isinstance(value, str):
        return [in_text(value, field, generated)]
    if isinstance(value, BaseMessage):
        return [in_message(value, field or "content", generated)]
    messages = read.messages_in(value)
    if messages is not None:
        last = read.last_message_text(messages, "ai")
        where = field or ("messages" if isinstance(value, Mapping) else None)
        if last is not None and json_object(last) is None:
            return [in_text(last, where, generated)]
        if isinstance(value, Mapping) and (nested := _nested(value, field)):
            return nested  # an agent's structured response beside its messages
        return [] if last is None else [in_text(last, where, generated)]
    if app_model(value):
        found = structured(value, field)
        return [] if found is None else [found]
    if not isinstance(value, Mapping):
        return []
    return _in_mapping(value, field, generated, question)


def _in_mapping(
    value: Mapping[str, Any], field: str | None, generated: Mapping[str, Any], question: str | None
) -> list[Found]:
    def where(name: str) -> str:
        return name if field is None else f"{field}.{name}"

    written = []
    for name, item in value.items():
        text = read.message_text(item.content) if isinstance(item, AIMessage) else item
        if (
            isinstance(text, str)
            and (generation := generated.get(text.strip())) is not None
            and not is_decision(text)
        ):
            written.append(Found(text, generation, where(name)))
    if written:
        return written
    if nested := _nested(value, field):
        return nested
    key = answer_field(value, question)
    if key is not None:
        return [in_text(value[key], where(key), generated)]
    return [NO_ANSWER] if _only_decisions(value) else []


def _nested(value: Mapping[str, Any], field: str | None) -> list[Found]:
    """A structured answer among a mapping's values (`{"answer": CitedAnswer(...)}`, an
    agent's `structured_response`, `include_raw=True`'s `parsed`)."""
    for name, item in value.items():
        if app_model(item):
            found = structured(item, name if field is None else f"{field}.{name}")
            if found is not None and found is not NO_ANSWER:
                return [found]
    return []


def is_decision(text: str) -> bool:
    """Whether a model's text is JSON holding no answer: a grading or a route it wrote."""
    parsed = json_object(text)
    return parsed is not None and structured(parsed) is NO_ANSWER


def _only_decisions(value: Mapping[str, Any]) -> bool:
    """Whether a mapping holds only scalar decisions (labels, numbers, flags): a grading or a
    rating the app returned, not an answer."""
    return all(isinstance(v, str | int | float | bool) or v is None for v in value.values())


def structured_text(generation_message: Any) -> str | None:
    """The answer a tool-call generation carries in its arguments (a structured answer), to
    tell which generation wrote a structured answer the run returned."""
    args = tool_call_arguments(generation_message)
    if args is None:
        return None
    key = answer_field(args)
    return None if key is None else str(args[key]).strip()
