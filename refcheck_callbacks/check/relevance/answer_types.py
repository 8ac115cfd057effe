"""The kind of answer a question asks for, and whether a passage holds one.

A sentence on the question's topic that holds no date cannot answer "when"; WikiQA's and
TREC QA's negatives are mostly such topical sentences, which is where similarity alone fails
(the issue's MiniLM baseline). Rules on the question's wh-word, no model: linear in the text.
"""

from __future__ import annotations

import re
from enum import Enum

from refcheck_callbacks.text.lexical import dates, entities, numbers, tokens


class AnswerType(str, Enum):
    DATE = "date"
    NUMBER = "number"
    PERSON = "person"
    PLACE = "place"
    DEFINITION = "definition"
    OTHER = "other"


_QUANTITY = re.compile(
    r"\bhow\s+(?:many|much|long|old|big|far|tall|high|large|fast|deep|wide|heavy)\b|"
    r"\bwhat\s+(?:percentage|percent|number|amount|population|size)\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"\bwhen\b|\bwhat\s+(?:year|date|day|month|century|decade|time)\b|\bwhich\s+year\b",
    re.IGNORECASE,
)
_PERSON = re.compile(r"\bwho(?:m|se)?\b", re.IGNORECASE)
_PLACE = re.compile(
    r"\bwhere\b|\bwhat\s+(?:country|city|state|place|continent|county|town)\b", re.IGNORECASE
)
_DEFINITION = re.compile(r"^\s*(?:what|who)\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?\w+", re.I)

ANSWER_TYPES = tuple(AnswerType)


def expected_type(question: str) -> AnswerType:
    """The answer type a question asks for (the first rule that matches, most specific first)."""
    if _QUANTITY.search(question):
        return AnswerType.NUMBER
    if _DATE.search(question):
        return AnswerType.DATE
    if _PLACE.search(question):
        return AnswerType.PLACE
    if _PERSON.search(question):
        return AnswerType.PERSON
    if _DEFINITION.search(question):
        return AnswerType.DEFINITION
    return AnswerType.OTHER


_DEFINING = re.compile(r"\b(?:is|are|was|were|refers\s+to|means)\s+(?:an?|the|one)\b", re.I)
_PLACE_WORDS = frozenset(
    "in at near city country state province county town village capital located north south "
    "east west island river".split()
)


def defines(passage: str) -> float:
    """1.0 when the passage holds a defining clause ("X is a ..."): an article's lead sentence,
    which answers most questions about its subject."""
    return float(bool(_DEFINING.search(passage)))


def type_present(kind: AnswerType, question: str, passage: str) -> float:
    """1.0 when the passage holds an answer of `kind` the question does not already state
    (a date, a figure, a name, a defining clause), else 0.0; 0.5 when the kind is unknown."""
    asked = set(tokens(question))
    if kind is AnswerType.DATE:
        return float(bool(dates(passage) - asked))
    if kind is AnswerType.NUMBER:
        return float(bool(numbers(passage) - asked))
    if kind is AnswerType.PERSON:
        return float(bool(entities(passage) - asked))
    if kind is AnswerType.PLACE:
        names = bool(entities(passage) - asked)
        return float(names or bool(_PLACE_WORDS & set(tokens(passage))))
    if kind is AnswerType.DEFINITION:
        return float(bool(_DEFINING.search(passage)))
    return 0.5
