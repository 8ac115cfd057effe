"""The user's text among the named fields of a run's input (a chain's input dict, a LlamaIndex
workflow's start event, a traced graph's state), and the answer's among its output's, for
every integration.

The question is the user's input wherever it arrives. Apps start runs with several fields:
the corrective-RAG workflow of LlamaIndex's docs runs `workflow.run(query_str=...,
tavily_ai_apikey=..., index=...)`. Of several text fields the question is the one under a
conventional key (`CONVENTIONAL_KEYS`), else the one whose name says it is a query
(`query_str`, `user_question`, `inputText`: a word of `QUERY_WORDS`), else the one whose value
reached the run's first retrieval or query before any rewrite (`reached`, where the caller
knows it). A field whose name says it is a secret or a setting (`api_key`, `token`,
`prompt_template`) is never the question, even alone: a key must not become the question a
result carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ANSWER_KEYS = ("answer", "generation", "output", "response", "result", "final_answer", "text")
"""What apps and tutorials call the answer field, where an output has several."""
CONVENTIONAL_KEYS = ("question", "input", "query")
"""What apps and framework recipes call the user's text, when the input has several."""
QUERY_WORDS = frozenset({"question", "query", "input", "msg", "message", "prompt", "q", "ask"})
"""Words of a field name that say it holds the user's text."""
NOT_USER_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "credential",
        "credentials",
        "auth",
        "template",
        "system",
        "instruction",
        "instructions",
        "url",
        "id",
        "model",
    }
)
"""Words of a field name that say it is not the user's text: a secret, a setting."""
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_words(name: str) -> frozenset[str]:
    """The words of a field name, lower-cased: `query_str` and `queryStr` give query, str."""
    return frozenset(word.lower() for word in _NAME_WORD.findall(name[:128]))


def _may_be_user(name: Any) -> bool:
    return not (isinstance(name, str) and name_words(name) & NOT_USER_WORDS)


def query_like(name: Any) -> bool:
    """Whether a field's name says it holds the user's text (`QUERY_WORDS`, no secret)."""
    return isinstance(name, str) and bool(name_words(name) & QUERY_WORDS) and _may_be_user(name)


def _texts(fields: Mapping[str, Any]) -> dict[Any, str]:
    return {k: v for k, v in fields.items() if isinstance(v, str) and v and _may_be_user(k)}


def named_text(fields: Mapping[str, Any]) -> str | None:
    """The text under a conventional key (the first), else the one under a query-like name;
    None when no name says which text is the user's."""
    texts = _texts(fields)
    for key in CONVENTIONAL_KEYS:
        value = texts.get(key)
        if value is not None:
            return value
    named = [v for k, v in texts.items() if query_like(k)]
    return named[0] if len(named) == 1 else None


def text_field(fields: Mapping[str, Any], reached: str | None = None) -> str | None:
    """The user's text among `fields` (see the module): the one non-empty text value (not
    under a secret's or a setting's name); with several, the first under a conventional key,
    else the one under a query-like name, else the one equal to `reached` (the text the run's
    first retrieval or query was given); else None."""
    texts = _texts(fields)
    if len(texts) == 1:
        return next(iter(texts.values()))
    named = named_text(fields)
    if named is not None:
        return named
    if reached is not None:
        return next((v for v in texts.values() if v == reached), None)
    return None


def _is_prose(value: Any) -> bool:
    return isinstance(value, str) and len(value.split(None, 1)) > 1


def answer_field(fields: Mapping[str, Any], question: str | None = None) -> str | None:
    """The key of the answer field among `fields` (a structured answer, a chain's output
    dict, a graph's final state): the one holding prose; with several, the first under a
    conventional key (`ANSWER_KEYS`), else the longest; with none, a one-word text under a
    conventional key. None when there is none: a label alone under another key
    (`{"binary_score": "yes"}`) is a decision. A value equal to the user's `question` is not
    the answer."""
    prose = [k for k, v in fields.items() if _is_prose(v) and v != question]
    if len(prose) == 1:
        return prose[0]
    for key in ANSWER_KEYS:
        value = fields.get(key)
        if (key in prose or not prose) and isinstance(value, str) and value and value != question:
            return key
    return max(prose, key=lambda k: len(fields[k])) if prose else None
