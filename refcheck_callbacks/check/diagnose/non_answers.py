"""Refusals and non-answers ("I could not find that in the documents"), told apart from
hallucinations: such an answer states nothing the references could fail to support.

Fixed phrases matched near the start of the text, with no nested repetition: linear time.
"""

from __future__ import annotations

import re

_REFUSAL = re.compile(
    r"\b(?:"
    r"i\s+(?:could\s*n[o']?t|can\s*n[o']?t|cannot|am\s+(?:not\s+able|unable)|'m\s+(?:not\s+able|unable)"
    r"|do\s+n[o']?t|don't|did\s*n[o']?t|have\s+no|was\s+(?:not\s+able|unable))\s+"
    r"(?:to\s+)?(?:find|answer|know|locate|determine|see|provide|say|tell|help|access|information)"
    r"|(?:there\s+is|there's|i\s+have|i\s+found)\s+no\s+(?:information|mention|data|details|record)"
    r"|(?:the\s+)?(?:provided\s+)?(?:documents?|context|sources?|passages?|references?|text)\s+"
    r"(?:provided\s+)?(?:do|does|did)\s*n[o']?t\s+"
    r"(?:contain|mention|say|include|provide|specify|state|address|cover)"
    r"|(?:is|are|was|were)\s+not\s+(?:mentioned|provided|stated|specified|given|available|covered)"
    r"\s+in\s+the\s+(?:provided\s+)?(?:documents?|context|sources?|passages?|text)"
    r"|not\s+enough\s+information|insufficient\s+information|unable\s+to\s+(?:answer|find|determine)"
    r"|as\s+an\s+ai\b"
    r")",
    re.IGNORECASE,
)
LOOK_CHARS = 300
"""A refusal says so early; a long answer that mentions a missing detail late is an answer."""


def is_non_answer(text: str) -> bool:
    """Whether `text` opens with a refusal or a statement that the answer is not known."""
    return _REFUSAL.search(text[:LOOK_CHARS]) is not None
