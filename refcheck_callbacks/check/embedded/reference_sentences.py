"""A request's reference sentences, read once for all its claims, and the conflict they state.

The stated-fact conflict step (`conflicts`, `denials`) compares each claim with the reference
sentences that share most of its words. Reading them is the same for every claim of a
request, so it happens once: each sentence's tokens and content words (stemmed, so `tower's`
meets `tower`), an index from word to sentences for ranking matches by rare shared words,
the words the references write in lower case (a capitalised heading word that the text also
writes in lower case is no name), and a sentence led by a pronoun also holding the previous
sentence's subject. A sentence's figures, dates and names are read only when it matches some
claim: most sentences of a long page never do.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from refcheck_callbacks.text.lexical import STOPWORDS, has_negation
from refcheck_callbacks.text.mention_words import COUNT_NOUNS
from refcheck_callbacks.text.mentions import Mention, mentions
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.text.subjects import leading_pronoun, subject
from refcheck_callbacks.text.tokens import Token, tokenize
from refcheck_callbacks.types import ConflictKind

CANDIDATES = 3
"""Reference sentences compared with each mention, best matches first."""
MIN_SHARED = 2
"""Context words a reference sentence must share to be a match (all, when there are fewer)."""


def stem(word: str) -> str:
    """Lower-cased, possessive, plural and verb endings cut, so `tower's` and `towers` meet
    `tower`, and `painted`, `painting` and `paints` meet `paint` ("painted by Michelangelo"
    against "a portrait painting by Leonardo" is one place)."""
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # `create` meets `created`, `creating`
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # `stopped` meets `stop`
    return word


def lower_case_words(tokens: Sequence[Token]) -> set[str]:
    return {token.lower for token in tokens if token.text.islower()}


def read_mentions(tokens: list[Token], lower_case: AbstractSet[str]) -> list[Mention]:
    """The sentence's mentions, less capitalised words the texts also write in lower case
    (`Head Coach`, `Awards`: headings and menus on web pages, not names); acronyms stay."""
    return [
        m
        for m in mentions(tokens)
        if m.kind != "name" or m.acronym or not all(w in lower_case for w in m.words)
    ]


def content_words(tokens: Sequence[Token]) -> list[str]:
    """Content words, stemmed; nouns that count people are one word (`residents`)."""
    return [
        stem(COUNT_NOUNS.get(t.lower, t.lower))
        for t in tokens
        if t.lower not in STOPWORDS and t.text[0].isalnum()
    ]


class ReferenceSentence:
    """A reference sentence: its tokens and words for matching; its mentions, read only when
    it matches some claim (most sentences of a long page never do)."""

    __slots__ = (
        "_mentions",
        "content",
        "end",
        "lower_case",
        "negated",
        "reference_index",
        "start",
        "text",
        "tokens",
    )

    def __init__(self, reference_index: int, start: int, end: int, text: str) -> None:
        self.reference_index, self.start, self.end, self.text = reference_index, start, end, text
        tokens = tokenize(text)
        self.content = frozenset(content_words(tokens))
        self.lower_case: AbstractSet[str] = lower_case_words(tokens)
        """Set to every reference's lower-case words once all are read."""
        self.negated = has_negation(text)
        self.tokens = tokens
        self._mentions: list[Mention] | None = None

    @property
    def mentions(self) -> list[Mention]:
        if self._mentions is None:
            self._mentions = read_mentions(self.tokens, self.lower_case)
        return self._mentions


def _refer_back(sentence: ReferenceSentence, previous: ReferenceSentence) -> None:
    """A sentence led by a pronoun ("It has 2.1 million residents.") is also about the
    previous sentence's subject: its words count for matching."""
    if sentence.text[:1].isupper() and leading_pronoun(sentence.text) is not None:
        named = subject(previous.text)
        if named is not None:
            sentence.content = sentence.content | frozenset(content_words(tokenize(named)))


@dataclass(frozen=True, slots=True)
class ParsedReferences:
    """A request's reference sentences, read once for all its claims."""

    sentences: list[ReferenceSentence]
    by_word: dict[str, list[int]]
    """Content word -> the sentences holding it."""
    lower_case: frozenset[str]
    """Words the references write in lower case somewhere."""

    def ranked(self, words: set[str]) -> list[tuple[float, int]]:
        """(score, sentence) of the sentences sharing `MIN_SHARED` or more of `words`, best
        first; a word weighs more the fewer sentences hold it."""
        scores: dict[int, float] = defaultdict(float)
        shared: dict[int, int] = defaultdict(int)
        for word in sorted(words):  # one order of float sums, whatever the hash seed
            holders = self.by_word.get(word, ())
            weight = math.log(1.0 + len(self.sentences) / len(holders)) if holders else 0.0
            for index in holders:
                scores[index] += weight
                shared[index] += 1
        needed = min(MIN_SHARED, len(words))  # `The vote was on Tuesday.`: one word to share
        ranked = [(score, index) for index, score in scores.items() if shared[index] >= needed]
        ranked.sort(key=lambda pair: (-pair[0], pair[1]))
        return ranked[:CANDIDATES]


def parse_references(texts: Sequence[str]) -> ParsedReferences:
    sentences = []
    for reference_index, text in enumerate(texts):
        previous: ReferenceSentence | None = None
        for start, end in sentence_spans(text):
            sentence = ReferenceSentence(reference_index, start, end, text[start:end])
            if previous is not None:
                _refer_back(sentence, previous)
            sentences.append(sentence)
            previous = sentence
    by_word: dict[str, list[int]] = defaultdict(list)
    lower_case: set[str] = set()
    for index, sentence in enumerate(sentences):
        lower_case |= sentence.lower_case
        for word in sentence.content:
            by_word[word].append(index)
    frozen = frozenset(lower_case)
    for sentence in sentences:
        sentence.lower_case = frozen
    return ParsedReferences(sentences, dict(by_word), frozen)


@dataclass(frozen=True, slots=True)
class Conflict:
    """A claim's figure, date or name against the one the matching reference sentence states."""

    kind: ConflictKind
    claim_text: str
    reference_text: str
    reference_index: int
    start: int
    end: int
    """The matching sentence's offsets in its reference."""
