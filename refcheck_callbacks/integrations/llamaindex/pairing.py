"""The rules that pair a LlamaIndex query root's question, answer and references.

**The references are what the generating model saw, the answer is what the user got, the
question is the user's input.**

- References: the nodes the answering model was shown, as the responses under the root
  report them (`source_nodes` of every query, chat and synthesizer response: the nodes handed
  to the synthesizer after postprocessing, or a chat engine's context after its
  postprocessors), keeping those that were retrieved under the root (a sub-question engine's
  final synthesizer is shown its sub-answers, not documents); where none were retrieved, the
  nodes shown; where no response reports nodes, every retrieved node. One per node id, with
  its best score; `ref_doc_id` joins the metadata. A node inside another reference is left
  out and counted (`shared.overlap`).
- Answer: the root's own result: a query or chat engine's response (streamed answers once
  read), a workflow's `StopEvent` result (an agent's final message).
- Question: the chat message, the query engine's first query, or a workflow's start event
  (`user_msg`, else the last user message of its chat messages, else its user text field:
  `shared.user_input`, where of several the one the first retrieval or query was given
  decides, when no name does); never the query a tool or a sub-engine was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.base.response.schema import Response
from llama_index.core.schema import BaseNode

from refcheck_callbacks.contract.answers import Paired, Pairing
from refcheck_callbacks.integrations.shared import overlap
from refcheck_callbacks.integrations.shared.user_input import named_text, text_field


def question_of(query: Any) -> Any:
    """A `QueryBundle`'s text, or the query as given."""
    return getattr(query, "query_str", query)


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, ChatMessage):
        return value.content
    return None


def start_fields(start_event: Any) -> dict[str, Any]:
    """A workflow start event's fields: those a custom start event declares, and those the
    app passed (`run(**kwargs)` builds the event from its keyword arguments)."""
    items = getattr(start_event, "items", None)
    if not callable(items):
        return {}
    declared = getattr(type(start_event), "model_fields", None) or {}
    return {**{name: getattr(start_event, name, None) for name in declared}, **dict(items())}


def _last_user_message(value: Any) -> str | None:
    """The text of the last user message of a list of chat messages (a chat history)."""
    if not isinstance(value, list):
        return None
    for message in reversed(value):
        if isinstance(message, ChatMessage) and message.role == MessageRole.USER:
            return message.content
    return None


def question_of_start(fields: Mapping[str, Any], reached: str | None = None) -> str | None:
    """The user's input in a workflow's start event: `user_msg`, else a text field named as
    the user's (`named_text`: `query`, `query_str`), else the last user message of a
    chat-message field (before a lone text field of another name, such as a session id),
    else its user text field (`text_field`: the one text field, else the one whose value
    `reached` the workflow's first retrieval or query)."""
    question = _text(fields.get("user_msg")) or named_text(fields)
    if question:
        return question
    for value in fields.values():
        if (question := _last_user_message(value)) is not None:
            return question
    return text_field(fields, reached)


def answer_of_result(result: Any) -> str | None:
    """The answer a workflow returned: its `StopEvent`'s result as text (an agent's output
    message, a synthesizer's response, a string); None when it holds no text."""
    value = getattr(result, "result", result)
    for _ in range(3):  # AgentOutput -> ChatMessage -> text
        text = _text(value)
        if text is not None:
            return text
        if isinstance(value, Response):
            return value.response
        value = getattr(value, "response", None)
        if value is None:
            return None
    return None


def shown_nodes(result: Any) -> Sequence[Any]:
    """The nodes a response says its model was shown."""
    nodes = getattr(result, "source_nodes", None)
    return nodes if isinstance(nodes, list) else ()


def references(retrieved: list[Any], shown: list[Any]) -> list[dict[str, Any]]:
    """One reference per node the model saw (see the module), in order, best score.

    Called in the monitor's worker, off the app's thread, which also turns the dicts into
    `Reference`s.
    """
    retrieved_ids = {scored.node.node_id for scored in retrieved}
    seen = [n for n in shown if n.node.node_id in retrieved_ids] or shown or retrieved
    by_id: dict[str, dict[str, Any]] = {}
    for scored in seen:
        node = scored.node
        known = by_id.get(node.node_id)
        if known is None:
            metadata = dict(node.metadata)
            if node.ref_doc_id is not None:
                metadata.setdefault("ref_doc_id", node.ref_doc_id)
            by_id[node.node_id] = {
                "text": node.get_content(),
                "id": node.node_id,
                "score": scored.score,
                "metadata": metadata,
            }
        elif scored.score is not None and (known["score"] is None or scored.score > known["score"]):
            known["score"] = scored.score
    return list(by_id.values())


def given_references(given: list[Any]) -> list[Any]:
    """References the app gave `override_pairing`: nodes become references like retrieved
    ones; texts, mappings and `Reference`s pass as they are."""
    nodes = [g for g in given if isinstance(getattr(g, "node", None), BaseNode)]
    others = [g for g in given if not isinstance(getattr(g, "node", None), BaseNode)]
    return [*references(nodes, nodes), *others]


@dataclass(slots=True)
class CapturedQuery(Pairing):
    """One query root's answer as the handler captured it; `pair`, in the monitor's worker,
    turns its nodes into references (the app's own choice, `chosen`, when it made one)."""

    answer: Any
    retrieved: list[Any]
    shown: list[Any]
    chosen: list[Any] | None
    model: str | None

    def pair(self) -> Paired:
        if self.chosen is not None:
            return Paired(self.answer, given_references(self.chosen), self.model)
        # A node whose text lies inside another reference is the same evidence (`overlap`).
        kept, contained = overlap.distinct(references(self.retrieved, self.shown))
        return Paired(self.answer, kept, self.model, metadata=overlap.left_out(contained) or None)
