"""A sentence's subject, and the sentences that refer back to it with a pronoun.

"Saturn is known for its rings. It is the largest planet." holds two claims, and the second
says that Saturn is the largest planet: checked alone, "It is the largest planet" matched
"Jupiter is the largest planet" (Entailment 0.92). A sentence led by it, he, she or they (this
and these before a verb) takes the subject of the claim before it.

The subject is read without a parser: a leading phrase ("In 2018,") is skipped, and the
subject runs from the first word to the verb, found as an auxiliary, a past form, or an `-s`
verb before an object. When no verb is found within a few words, no subject is given: a wrong
subject would be worse than the pronoun. Linear in the text.
"""

from __future__ import annotations

import re
from itertools import islice

from refcheck_callbacks.text.lexical import AUXILIARIES, IRREGULAR_PAST, STOPWORDS

PRONOUNS = frozenset({"it", "he", "she", "they", "this", "these"})
_DEMONSTRATIVES = frozenset({"this", "these"})
"""Pronouns only before a verb: "This tower is tall" names its own subject."""
_DETERMINERS = frozenset({"the", "a", "an"})
_LEADING_PREPOSITIONS = frozenset(
    "in on at by for during after before since from with according under over".split()
)
_EXPLETIVE_VERBS = frozenset({"seems", "seemed", "appears", "appeared", "turns", "turned"})
_EXPLETIVE_LINKS = frozenset({"that", "to", "whether", "if", "how", "why", "when", "what"})
_OBJECT_STARTS = frozenset({"the", "a", "an", "in", "on", "at", "of", "to", "for", "about"})
_MAX_SUBJECT_WORDS = 6
_MAX_LEADING_WORDS = 8
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*|[,;:]")


_READ_WORDS = 16
"""Words read from a sentence's start: a subject and its verb, or a pronoun and what follows."""


def _words(text: str) -> list[re.Match[str]]:
    return list(islice(_WORD.finditer(text), _READ_WORDS))


def _is_verb(words: list[re.Match[str]], index: int) -> bool:
    word = words[index].group()
    lower = word.lower()
    if lower in AUXILIARIES or lower in IRREGULAR_PAST:
        return True
    if not word.islower():
        return False
    if lower.endswith("ed") and len(lower) > 4:
        return True
    following = words[index + 1].group().lower() if index + 1 < len(words) else ""
    return (
        lower.endswith("s")
        and not lower.endswith("ss")
        and (following in _OBJECT_STARTS or following[:1].isdigit())
    )


def subject(text: str) -> str | None:
    """The subject of the sentence `text` starts with, as written; None when it cannot be
    told or is itself a pronoun."""
    words = _words(text)
    start = 0
    if words and words[0].group().lower() in _LEADING_PREPOSITIONS:
        comma = next(
            (i for i, w in enumerate(words[:_MAX_LEADING_WORDS]) if w.group() == ","), None
        )
        if comma is None:
            return None
        start = comma + 1
    if start >= len(words):
        return None
    first = words[start].group().lower()
    if first in PRONOUNS or (first in STOPWORDS and first not in _DETERMINERS):
        return None
    for index in range(start + 1, min(len(words), start + _MAX_SUBJECT_WORDS + 1)):
        if words[index].group() in ",;:":
            return None
        if _is_verb(words, index):
            return text[words[start].start() : words[index - 1].end()]
    return None


def leading_pronoun(text: str) -> tuple[int, int] | None:
    """The span of the pronoun `text` opens with, when it stands for an earlier subject (not
    `It seems that`, `It is clear that`, nor `This tower`)."""
    words = _words(text)
    if len(words) < 2:
        return None
    first, second = words[0].group().lower(), words[1].group().lower()
    if first not in PRONOUNS:
        return None
    if first in _DEMONSTRATIVES and second not in AUXILIARIES:
        return None
    if first == "it" and _expletive(words):
        return None
    return words[0].span()


def _expletive(words: list[re.Match[str]]) -> bool:
    """`It seems that ...`, `It is clear that ...`, `It was decided to ...`: no referent."""
    second = words[1].group().lower()
    if second in _EXPLETIVE_VERBS:
        return True
    if second not in AUXILIARIES:
        return False
    return any(w.group().lower() in _EXPLETIVE_LINKS for w in words[2:6])


def with_subject(text: str, pronoun: tuple[int, int], name: str) -> str:
    """`text` with the pronoun at `pronoun` replaced by `name`, capitalised as a sentence's
    first word."""
    start, end = pronoun
    return text[:start] + name[:1].upper() + name[1:] + text[end:]
