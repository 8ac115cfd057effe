"""The user's text among the named fields of a run's input (a chain's input dict, a LlamaIndex
workflow's start event), for both integrations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONVENTIONAL_KEYS = ("question", "input", "query")
"""What apps and framework recipes call the user's text, when the input has several."""


def text_field(fields: Mapping[str, Any]) -> str | None:
    """The one non-empty text value among `fields`; with several, the first under a
    conventional key; else None."""
    texts = [v for v in fields.values() if isinstance(v, str) and v]
    if len(texts) == 1:
        return texts[0]
    for key in CONVENTIONAL_KEYS:
        value = fields.get(key)
        if isinstance(value, str) and value:
            return value
    return None
