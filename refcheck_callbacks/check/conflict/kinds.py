"""The kind of a conflict: from the mentions that differ, or the negation one side adds.

The stated-fact finder knows which mention conflicts; a model's Contradiction does not say, so
its claim and evidence are read here: a figure, date or name of the claim that the evidence
states otherwise, else a negation on one side only, else a relation that rules the claim out.
"""

from __future__ import annotations

from refcheck_callbacks.text.agreement import names_agree, values_agree
from refcheck_callbacks.text.lexical import content_tokens, has_negation
from refcheck_callbacks.text.mentions import Mention, mentions
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.text.tokens import tokenize
from refcheck_callbacks.types import ConflictKind

_BY_MENTION = {
    "number": ConflictKind.VALUE,
    "ordinal": ConflictKind.VALUE,
    "year": ConflictKind.DATE,
    "month": ConflictKind.DATE,
    "weekday": ConflictKind.DATE,
    "day": ConflictKind.DATE,
    "name": ConflictKind.ENTITY,
    "term": ConflictKind.EXCLUSIVE,
}


def of_mention(kind: str) -> ConflictKind:
    """The conflict kind of two mentions of `kind` (`text.mentions.Mention.kind`) that differ."""
    return _BY_MENTION.get(kind, ConflictKind.EXCLUSIVE)


def _agree(a: Mention, b: Mention) -> bool:
    return names_agree(a, b) if a.kind == b.kind == "name" else values_agree(a, b) is True


def _differ(a: Mention, b: Mention) -> bool:
    """Comparable and different: two names, or figures of one unit and sort."""
    if a.kind != b.kind:
        return False
    return not names_agree(a, b) if a.kind == "name" else values_agree(a, b) is False


def classify(claim: str, evidence: str) -> ConflictKind:
    """What `evidence`, said to contradict `claim`, states differently (module docstring)."""
    claim_mentions = mentions(tokenize(claim))
    evidence_mentions = mentions(tokenize(evidence))
    for mention in claim_mentions:
        if any(_agree(mention, other) for other in evidence_mentions):
            continue
        if any(_differ(mention, other) for other in evidence_mentions):
            return of_mention(mention.kind)
    if has_negation(claim) != has_negation(evidence):
        return ConflictKind.NEGATION
    return ConflictKind.EXCLUSIVE


def closest_sentence(claim: str, text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence of `text[start:end]` sharing the most content words with `claim`: a
    judge cites whole documents, and a Contradiction should cite the statement."""
    wanted = set(content_tokens(claim))
    best, best_shared = (start, end), -1
    for first, last in sentence_spans(text[start:end]):
        shared = len(wanted & set(content_tokens(text[start + first : start + last])))
        if shared > best_shared:
            best, best_shared = (start + first, start + last), shared
    return best
