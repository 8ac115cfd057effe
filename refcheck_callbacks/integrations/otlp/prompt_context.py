"""What the answering model saw when no retrieved document reached its prompt: the context
its prompt carries.

The LangGraph RAG tutorial's graph calls `vector_store.similarity_search` in a node; an agent's
tool returns search results as text; a dynamic prompt prints documents into the system
message. No retriever span reports those documents (a graph's state may: `serialized`), so
the only record of them is the answering model's prompt. The references are then the parts of
that prompt that are context, found by the prompt's *structure*, never guessed from its text:

- **tool results**: the prompt's messages of the tool role (OpenInference's
  `llm.input_messages.N.message.role`, OpenLLMetry's `gen_ai.prompt.N.role`, the GenAI
  conventions' `tool_call_response` parts), each a reference;
- **prompt template variables**: where the trace records the template the prompt was
  rendered from (OpenInference's `llm.prompt_template.variables` on a prompt span; the input
  of an OpenLLMetry task span that wrote a LangChain `ChatPromptValue`), its text variables
  that the answering prompt shows, less the question (the variable holding the user's text,
  by value or by a query-like name) and those named for history or instructions. The
  template's own text, the app's instructions, is never a variable.

A prompt recorded without its template (a system message the app formatted itself, a
dynamic prompt, a bare chat-completions call) cannot be split into instructions and context
reliably: nothing is guessed, and the trace is counted `no_references` (docs/collect.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from refcheck_callbacks.integrations.shared.prompt_match import Prompt, canonical
from refcheck_callbacks.integrations.shared.user_input import name_words, query_like

SOURCE_KEY = "refcheck.references_from"
"""Request metadata: "prompt" when the references were read from the answering prompt (no
retrieved document reached it); absent when they are the retrieved documents it shows."""
FROM_PROMPT = "prompt"
FROM_DOCUMENTS = "documents"
NOT_CONTEXT_WORDS = frozenset(
    {"history", "messages", "chat", "system", "instruction", "instructions", "template"}
)
"""Words of a template variable's name that say it is not context: the conversation so far,
the app's instructions."""


def context_of(
    prompt: Prompt,
    tool_results: Sequence[str],
    templates: Sequence[Mapping[str, str]],
    question: str | None,
) -> list[dict[str, Any]]:
    """The context parts of the answering prompt (see the module), each text once."""
    found: dict[str, dict[str, Any]] = {}
    for text in tool_results:
        _add(found, text, {"source": "tool_result"})
    asked = canonical(question) if question else None
    for variables in templates:
        for name, value in variables.items():
            words = name_words(name)
            if query_like(name) or words & NOT_CONTEXT_WORDS:
                continue
            if asked is not None and canonical(value) in (asked, ""):
                continue
            if prompt.shows(value):
                _add(found, value, {"prompt_variable": name})
    return list(found.values())


def _add(found: dict[str, dict[str, Any]], text: str, metadata: dict[str, Any]) -> None:
    key = canonical(text)
    if key and key not in found:
        found[key] = {"text": text, "id": None, "score": None, "metadata": metadata}
