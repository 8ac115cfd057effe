"""Denials: a reference sentence that says what a claim sentence says, negated on one side.

"The bridge was not closed in 2019." against "The bridge was closed in 2019." holds no
differing figure, date or name for `conflicts` to find; the negation is the conflict. Only a
close restatement counts: the reference sentence holds every content word of the claim
sentence and few more, so a `not` elsewhere in a long sentence about other things does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from refcheck_callbacks.check.embedded.reference_sentences import (
    Conflict,
    ParsedReferences,
    content_words,
)
from refcheck_callbacks.text.lexical import NEGATIONS
from refcheck_callbacks.text.tokens import Token
from refcheck_callbacks.types import ConflictKind

NEGATED_WORDS = 3
"""Content words a claim sentence needs before a reference sentence holding all of them and
few more, negated on one side only, is read as its denial."""


def find_denial(
    text: str,
    spans: Sequence[tuple[int, int]],
    tokens: Sequence[Token],
    references: ParsedReferences,
) -> Conflict | None:
    """A reference sentence saying what a claim sentence says, negated on one side only: it
    holds every content word of the claim sentence (`NEGATED_WORDS` or more) and at most as
    many again, and a negation stands among those words on one side ("No, New York is ..."
    answers a question: its `No` negates nothing the sentence states)."""
    for start, end in spans:
        tokens = [t for t in tokens if start <= t.start < end]
        words = {w for w in content_words(tokens) if w not in NEGATIONS and not w.endswith("n't")}
        if len(words) < NEGATED_WORDS:
            continue
        negated = _negated_among(tokens, words)
        for _, index in references.ranked(words)[:1]:
            sentence = references.sentences[index]
            if (
                words <= sentence.content
                and len(sentence.content) <= 2 * len(words)
                and _negated_among(sentence.tokens, words) != negated
            ):
                return Conflict(
                    ConflictKind.NEGATION,
                    text[start:end],
                    sentence.text,
                    sentence.reference_index,
                    sentence.start,
                    sentence.end,
                )
    return None


def _negated_among(tokens: Sequence[Token], words: AbstractSet[str]) -> bool:
    """Whether a negation stands between the first and the last of `words` in `tokens`."""
    places = [i for i, t in enumerate(tokens) if any(w in words for w in content_words([t]))]
    if not places:
        return False
    return any(
        t.lower in NEGATIONS or t.lower.endswith("n't") for t in tokens[places[0] : places[-1]]
    )
