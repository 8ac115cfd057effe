"""Offline claim extraction: an answer's sentences and clauses, with their character spans.

Not every sentence is a claim. Questions back to the user, greetings, sign-offs, headings,
list lead-ins and refusals state nothing about the world that a reference could support, so
they are left out; an answer made only of those abstains, as RefChecker's extractor does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from refcheck_callbacks.contract.components import Extraction
from refcheck_callbacks.extract.base import SyncExtractor
from refcheck_callbacks.text.spans import count_words, sentence_spans
from refcheck_callbacks.types import CharSpan, CheckRequest, Claim

_LIST_MARKER = re.compile(r"(?:[-*•+]\s+|\d{1,3}[.)]\s+|#{1,6}\s+|>\s*)+")
_CLAUSE_BREAK = re.compile(r";\s+")
_GREETING = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|sure|certainly|of course|absolutely|great question|"
    r"good question|happy to help|i hope (?:this|that) helps|hope (?:this|that) helps|"
    r"let me know|feel free|glad to help|you're welcome|here (?:is|are) (?:the|a|an|some))\b",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"\b(?:i (?:do not|don't|cannot|can't|am unable to|'m unable to|am not able to) "
    r"(?:know|answer|help|provide|find|say|determine|tell)|"
    r"i(?: am|'m) (?:sorry|not sure|unable|afraid)|as an ai\b|"
    r"i (?:do not|don't) have (?:enough |any |the )?(?:information|data|context|access)|"
    r"(?:the )?(?:provided |given )?(?:context|documents?|passages?|sources?|information) "
    r"(?:does|do) not (?:contain|mention|say|provide|include|specify)|"
    r"(?:there is|there's) no (?:information|mention|data)|"
    r"not (?:mentioned|provided|specified|stated) in the (?:context|documents?|passages?))",
    re.IGNORECASE,
)
_MIN_WORDS = 3


def _strip_marker(text: str, start: int, end: int) -> int:
    """Move `start` past list bullets, numbering, heading and quote markers."""
    match = _LIST_MARKER.match(text, start, end)
    return match.end() if match else start


def _is_claim(sentence: str) -> bool:
    stripped = sentence.strip().strip("*_").strip()
    if count_words(stripped) < _MIN_WORDS:
        return False
    if stripped.endswith(("?", ":")):
        return False
    if _GREETING.match(stripped) and count_words(stripped) <= 12:
        return False
    return not _REFUSAL.search(stripped)


def _clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split a sentence at semicolons: each side states something on its own."""
    pieces, cursor = [], start
    for match in _CLAUSE_BREAK.finditer(text, start, end):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, end))
    return pieces


def sentence_claims(answer: str) -> list[Claim]:
    """The checkable sentences and clauses of an answer, in order, with spans."""
    claims: list[Claim] = []
    for start, end in sentence_spans(answer):
        if answer.startswith("#", start):
            continue  # a heading names a topic; it states nothing
        start = _strip_marker(answer, start, end)
        for clause_start, clause_end in _clauses(answer, start, end):
            text = answer[clause_start:clause_end].strip()
            if _is_claim(text):
                offset = answer.index(text, clause_start)
                claims.append(Claim(text=text, span=CharSpan(start=offset, end=offset + len(text))))
    return claims


class SentenceExtractor(SyncExtractor):
    """Claims are the answer's sentences and clauses. Offline, no model, microseconds."""

    name = "sentence"

    def extract_batch(self, requests: Sequence[CheckRequest]) -> list[Extraction]:
        return [Extraction(claims=sentence_claims(request.answer)) for request in requests]
