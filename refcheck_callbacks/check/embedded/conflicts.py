"""Stated-fact conflicts: the claim gives another figure, date or name than its source does.

"The Eiffel Tower is 450 metres tall." against "The tower is 330 metres tall." is a
contradiction, not a claim the reference is silent about: the reference sentence that best
matches the claim says the same thing about the same subject, with a different figure in the
same place. The learned heads see such pairs as close in meaning with one unmatched figure,
which reads as unsupported at best; this module reads them as RefChecker's annotators do.

For each figure, date or name of the claim (`text.mentions`), the words around it say what
it is about (a sentence that says little, "It is 500 metres tall.", borrows the words of the
one before). The reference sentences sharing the most of those words, weighted by rarity, are
its matches. The mention is in conflict with a match when
- no match about as good states an agreeing value (then it is supported there, or at least
  not contradicted), nor does the match itself: a sentence that states the claim's value
  also states its other values about other things;
- the match holds a mention of the same kind that the claim does not state and that
  disagrees with it (`text.agreement`: units are converted, rounding and hedges such as
  "about" or "more than" allowed, bare counts compared only when they count the same thing;
  names share no distinctive word, initials or stem);
- the two stand in the same place: a content word next to one is next to the other (both
  sides for names the references also mention and for names in lists), or, for figures and
  dates, each is the only one of its kind and unit in its sentence;
- a match that also states the claim's value elsewhere reads as supporting it for figures
  and dates, but for a name it may be a swap ("the Greenland and GRACE ice sheets" against
  "the Greenland and Antarctic ice sheets, revealed by GRACE"): the other name then needs
  two of the claim's words next to it and the claim's name well apart from it (not
  "Kiev-based programmer Yevhen Dokukin", one person described);
- the match holds at least `CONTEXT_SHARE` of the words around the claim's mention, and both
  are negated or neither is.
A mention with no counterpart is absent from the source, which is Neutral, not this. The
thresholds were set on planted edits of one half of the shared data's groups and checked on
the other half and on the real labels; `SWAP_GAP` and the swap rule were chosen on all the
planted edits (docs/embedded_checker.md).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from refcheck_callbacks.check.conflict.kinds import of_mention
from refcheck_callbacks.text.agreement import names_agree, values_agree
from refcheck_callbacks.text.lexical import NEGATIONS, STOPWORDS, has_negation
from refcheck_callbacks.text.mention_words import COUNT_NOUNS, GENERIC_NAME_WORDS
from refcheck_callbacks.text.mentions import Mention, Token, mentions, tokenize
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.text.subjects import leading_pronoun, subject
from refcheck_callbacks.types import ConflictKind

CONTEXT_WORDS = 4
"""Content words on each side of a mention that say what it is about."""
CANDIDATES = 3
"""Reference sentences compared with each mention, best matches first."""
MIN_SHARED = 2
"""Context words a reference sentence must share to be a match."""
STATED_RATIO = 0.75
"""A match scoring at least this share of the conflicting one's score that states the claim's
value wins over it: the claim is supported there."""
ANCHOR_WORDS = 2
"""Content words on each side of two mentions searched for one placed next to both."""
CONTEXT_SHARE = 0.5
"""Of the words around the claim's mention, the share its match must hold: the same subject
and relation, not only the same topic."""
SWAP_GAP = 3
"""Tokens that must separate two names of a sentence for them to be a swap: nearer, they
describe one thing (`Kiev-based programmer Yevhen Dokukin`, `Hudson County, New Jersey`)."""
NEGATION_REACH = 6
"""Tokens on each side of a mention where a negation makes it negated (`not in 2019`); a
`not` elsewhere in the sentence is about something else."""
TERM_REACH = 2
"""A term of the reference (`physics`) may stand this many times further from the words it
shares with the claim's term: `Nobel Prizes in two sciences: physics (1903) and chemistry`."""
STATEMENT_TOKENS = 80
"""A reference "sentence" longer than this is a menu, a table or run-on page text, not one
statement: its figures and names are not read against a claim's."""
NEGATED_WORDS = 3
"""Content words a claim sentence needs before a reference sentence holding all of them and
few more, negated on one side only, is read as its denial."""


def _stem(word: str) -> str:
    """Lower-cased, possessive and plural cut, so `tower's` and `towers` meet `tower`."""
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _lower_case(tokens: Sequence[Token]) -> set[str]:
    return {token.lower for token in tokens if token.text.islower()}


def _read(tokens: list[Token], lower_case: AbstractSet[str]) -> list[Mention]:
    """The sentence's mentions, less capitalised words the texts also write in lower case
    (`Head Coach`, `Awards`: headings and menus on web pages, not names); acronyms stay."""
    return [
        m
        for m in mentions(tokens)
        if m.kind != "name" or m.acronym or not all(w in lower_case for w in m.words)
    ]


def _content(tokens: Sequence[Token]) -> list[str]:
    """Content words, stemmed; nouns that count people are one word (`residents`)."""
    return [
        _stem(COUNT_NOUNS.get(t.lower, t.lower))
        for t in tokens
        if t.lower not in STOPWORDS and t.text[0].isalnum()
    ]


def _negated_near(tokens: Sequence[Token], mention: Mention) -> bool:
    low, high = max(0, mention.first - NEGATION_REACH), mention.last + 1 + NEGATION_REACH
    return any(t.lower in NEGATIONS or t.lower.endswith("n't") for t in tokens[low:high])


class _Sentence:
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
        self.content = frozenset(_content(tokens))
        self.lower_case: AbstractSet[str] = _lower_case(tokens)
        """Set to every reference's lower-case words once all are read."""
        self.negated = has_negation(text)
        self.tokens = tokens
        self._mentions: list[Mention] | None = None

    @property
    def mentions(self) -> list[Mention]:
        if self._mentions is None:
            self._mentions = _read(self.tokens, self.lower_case)
        return self._mentions


def _refer_back(sentence: _Sentence, previous: _Sentence) -> None:
    """A sentence led by a pronoun ("It has 2.1 million residents.") is also about the
    previous sentence's subject: its words count for matching."""
    if sentence.text[:1].isupper() and leading_pronoun(sentence.text) is not None:
        named = subject(previous.text)
        if named is not None:
            sentence.content = sentence.content | frozenset(_content(tokenize(named)))


@dataclass(frozen=True, slots=True)
class ParsedReferences:
    """A request's reference sentences, read once for all its claims."""

    sentences: list[_Sentence]
    by_word: dict[str, list[int]]
    """Content word -> the sentences holding it."""
    lower_case: frozenset[str]
    """Words the references write in lower case somewhere."""

    def holding(self, words: Iterable[str]) -> bool:
        """Whether some sentence holds every one of `words` (content words, stemmed)."""
        common: set[int] | None = None
        for word in words:
            holders = set(self.by_word.get(word, ()))
            common = holders if common is None else common & holders
            if not common:
                return False
        return common is not None

    def ranked(self, words: set[str]) -> list[tuple[float, int]]:
        """(score, sentence) of the sentences sharing `MIN_SHARED` or more of `words`, best
        first; a word weighs more the fewer sentences hold it."""
        scores: dict[int, float] = defaultdict(float)
        shared: dict[int, int] = defaultdict(int)
        for word in words:
            holders = self.by_word.get(word, ())
            weight = math.log(1.0 + len(self.sentences) / len(holders)) if holders else 0.0
            for index in holders:
                scores[index] += weight
                shared[index] += 1
        ranked = [(score, index) for index, score in scores.items() if shared[index] >= MIN_SHARED]
        ranked.sort(key=lambda pair: (-pair[0], pair[1]))
        return ranked[:CANDIDATES]


def parse_references(texts: Sequence[str]) -> ParsedReferences:
    sentences = []
    for reference_index, text in enumerate(texts):
        previous: _Sentence | None = None
        for start, end in sentence_spans(text):
            sentence = _Sentence(reference_index, start, end, text[start:end])
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """A claim mention, a disagreeing mention of a matching sentence, and how well they align."""

    mention: Mention
    sentence: _Sentence
    other: Mention
    anchors: int
    """Content words placed next to both mentions."""
    alone: bool
    """Each is the only mention of its kind and unit in its context."""
    context_share: float
    """The share of the words around the claim's mention that the sentence holds."""
    unmentioned: bool
    """A name whose words no reference sentence holds: the references never mention it."""
    swapped: bool | None = None
    """None unless the sentence also states the claim's name, elsewhere; then whether the two
    names swapped places: two content words next to the claim's name are next to the other
    name, and the sentence states the claim's name `SWAP_GAP` tokens or more away from it."""


def _agree(a: Mention, b: Mention) -> bool:
    return names_agree(a, b) if a.kind == b.kind == "name" else bool(values_agree(a, b))


def _disagree(a: Mention, b: Mention) -> bool:
    if a.kind != b.kind:
        return False
    return not names_agree(a, b) if a.kind == "name" else values_agree(a, b) is False


def _near(tokens: Sequence[Token], mention: Mention, words: int) -> tuple[set[str], set[str]]:
    """The nearest `words` content words before and after a mention (within a few tokens)."""
    reach = 3 * words + 2
    before = _content(tokens[max(0, mention.first - reach) : mention.first])[-words:]
    after = _content(tokens[mention.last + 1 : mention.last + 1 + reach])[:words]
    return set(before), set(after)


def _same_sort(a: Mention, b: Mention) -> bool:
    return a.kind == b.kind and a.unit == b.unit


class _Claim:
    """A claim's tokens and mentions. Each mention belongs to a sentence (its negation, the
    other mentions it stands beside), but its context may reach into the sentence before:
    "It is 500 metres tall." after "The tower is in Paris." is about the tower."""

    def __init__(self, text: str, lower_case: AbstractSet[str]) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.mentions = _read(self.tokens, lower_case | _lower_case(self.tokens))
        spans = self.spans = sentence_spans(text) or [(0, len(text))]
        starts = self._starts = [start for start, _ in spans]
        self._sentence = {
            id(m): max(0, bisect_right(starts, self.tokens[m.first].start) - 1)
            for m in self.mentions
        }

    def beside(self, mention: Mention) -> list[Mention]:
        """The mentions of `mention`'s sentence, itself included."""
        sentence = self._sentence[id(mention)]
        return [m for m in self.mentions if self._sentence[id(m)] == sentence]

    def context(self, mention: Mention) -> set[str]:
        """The nearest `CONTEXT_WORDS` content words on each side of `mention` in its sentence;
        a sentence that says little ("It is 500 metres tall.") borrows the nearest words of
        the sentences before it, where its subject usually is."""
        start = self._starts[self._sentence[id(mention)]]
        own = [t for t in self.tokens[: mention.first] if t.start >= start]
        before = _content(own)[-CONTEXT_WORDS:]
        after = _content(self.tokens[mention.last + 1 : mention.last + 1 + 3 * CONTEXT_WORDS])
        words = set(before) | set(after[:CONTEXT_WORDS])
        if len(words) < CONTEXT_WORDS - 1:
            earlier = _content(
                self.tokens[max(0, mention.first - 6 * CONTEXT_WORDS) : mention.first]
            )
            words |= set(earlier[: len(earlier) - len(before)][-(CONTEXT_WORDS - len(words)) :])
        return words

    def candidates(self, mention: Mention, references: ParsedReferences) -> Iterator[Candidate]:
        if mention.kind != "name" and self._stated_anywhere(mention, references):
            return  # the claim may take its figure from there
        context = self.context(mention)
        ranked = references.ranked(context)
        stating = {
            index: score for score, index in ranked if _states(mention, references.sentences[index])
        }
        for score, index in ranked:
            if any(s >= STATED_RATIO * score for i, s in stating.items() if i != index):
                return  # a match about as good states the claim's value
            sentence = references.sentences[index]
            displaced = index in stating
            if len(sentence.tokens) > STATEMENT_TOKENS:
                continue
            if displaced:
                if self._stated_in_place(mention, sentence):
                    return
                if mention.kind != "name":
                    continue  # it states the claim's value: its other values are other facts
                # A name stated elsewhere in the sentence may have swapped with another.
            yield from self._against(mention, sentence, context, references, displaced)

    def _stated_anywhere(self, mention: Mention, references: ParsedReferences) -> bool:
        """Whether some reference sentence states the figure or date (looked for among the
        sentences holding its number, or its first word)."""
        words = self.tokens[mention.first : mention.last + 1]
        key = next((t for t in words if t.text[0].isdigit()), words[0])
        return any(
            _agree(mention, other)
            for index in references.by_word.get(_stem(key.lower), ())
            for other in references.sentences[index].mentions
        )

    def _stated_in_place(self, mention: Mention, sentence: _Sentence) -> bool:
        """The sentence states the value next to the claim's words (or holds an unread name)."""
        if not any(_agree(mention, other) for other in sentence.mentions):
            return True  # the name's words are there, unread as a name: cannot place them
        before, after = _near(self.tokens, mention, ANCHOR_WORDS)
        for other in sentence.mentions:
            if _agree(mention, other):
                other_before, other_after = _near(sentence.tokens, other, ANCHOR_WORDS)
                if before & other_before or after & other_after:
                    return True
        return False

    def _against(
        self,
        mention: Mention,
        sentence: _Sentence,
        context: set[str],
        references: ParsedReferences,
        displaced: bool = False,
    ) -> Iterator[Candidate]:
        unstated = [
            other
            for other in sentence.mentions
            if other.kind == mention.kind and not any(_agree(m, other) for m in self.mentions)
        ]
        before, after = _near(self.tokens, mention, ANCHOR_WORDS)
        alone = (
            sum(_same_sort(m, mention) for m in self.beside(mention)) == 1
            and sum(_same_sort(o, mention) for o in unstated) == 1
        )
        share = len(context & sentence.content) / len(context) if context else 0.0
        absent = mention.kind == "name" and _unmentioned(mention, references)
        negated = _negated_near(self.tokens, mention)
        reach = ANCHOR_WORDS * (TERM_REACH if mention.kind == "term" else 1)
        for other in unstated:
            if _disagree(mention, other) and _negated_near(sentence.tokens, other) == negated:
                other_before, other_after = _near(sentence.tokens, other, reach)
                anchors = len(before & other_before) + len(after & other_after)
                swapped = anchors >= 2 and _apart(mention, other, sentence) if displaced else None
                yield Candidate(mention, sentence, other, anchors, alone, share, absent, swapped)


def _unmentioned(name: Mention, references: ParsedReferences) -> bool:
    """No reference sentence holds a distinctive word of the name: `Neel Mukherjee` is
    mentioned where a page says `Mukherjee`, `Bobby Brown` where it says `Brown`."""
    distinctive = [w for w in name.words if w not in GENERIC_NAME_WORDS] or list(name.words)
    return not any(_stem(word) in references.by_word for word in distinctive)


def _apart(mention: Mention, other: Mention, sentence: _Sentence) -> bool:
    """Every mention of the sentence agreeing with the claim's stands more than `SWAP_GAP`
    tokens from `other`."""
    return all(
        max(same.first - other.last, other.first - same.last) > SWAP_GAP
        for same in sentence.mentions
        if _agree(mention, same)
    )


def _states(mention: Mention, sentence: _Sentence) -> bool:
    return any(_agree(mention, other) for other in sentence.mentions) or (
        mention.kind == "name" and _names_words_in(mention, sentence)
    )


def _names_words_in(mention: Mention, sentence: _Sentence) -> bool:
    """The name's words are in the sentence, unread as a name (a sentence's first word)."""
    return all(_stem(word) in sentence.content for word in mention.words)


def is_conflict(candidate: Candidate) -> bool:
    """Same place and same context: the decision rule (see the module docstring).

    Names the references also mention need both neighbours' words: two names in one
    sentence often play other roles (author and publisher, team and venue), where figures and
    dates of one sort rarely do; so do names in lists. A name the references never mention
    needs one neighbour: it cannot be the other role's name. Figures and dates need one, or
    to be the only one of their sort on both sides. A name the sentence also states
    elsewhere needs a swap (`Candidate.swapped`), never in a list.
    """
    mention, other = candidate.mention, candidate.other
    if candidate.swapped is not None:
        aligned = candidate.swapped and not (mention.listed or other.listed)
    elif mention.listed or other.listed or (mention.kind == "name" and not candidate.unmentioned):
        aligned = candidate.anchors >= 2
    elif mention.kind == "name":
        aligned = candidate.anchors >= 1
    else:
        aligned = candidate.anchors >= 1 or candidate.alone
    return aligned and candidate.context_share >= CONTEXT_SHARE


def candidates(claim: str, references: ParsedReferences) -> Iterator[Candidate]:
    """Every (claim mention, disagreeing reference mention) pair worth deciding, in order."""
    parsed = _Claim(claim, references.lower_case)
    for mention in parsed.mentions:
        yield from parsed.candidates(mention, references)


def find_conflict(claim: str, references: ParsedReferences) -> Conflict | None:
    """The first figure, date or name of `claim` that its best-matching reference sentence
    states differently, in the same place; None when there is none."""
    parsed = _Claim(claim, references.lower_case)
    for mention in parsed.mentions:
        for candidate in parsed.candidates(mention, references):
            if is_conflict(candidate):
                return _conflict(candidate, parsed.tokens, claim)
    return _denial(parsed, references)


def _denial(parsed: _Claim, references: ParsedReferences) -> Conflict | None:
    """A reference sentence saying what a claim sentence says, negated on one side only: it
    holds every content word of the claim sentence (`NEGATED_WORDS` or more) and at most as
    many again, and a negation stands among those words on one side ("No, New York is ..."
    answers a question: its `No` negates nothing the sentence states)."""
    for start, end in parsed.spans:
        tokens = [t for t in parsed.tokens if start <= t.start < end]
        words = {w for w in _content(tokens) if w not in NEGATIONS and not w.endswith("n't")}
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
                    parsed.text[start:end],
                    sentence.text,
                    sentence.reference_index,
                    sentence.start,
                    sentence.end,
                )
    return None


def _negated_among(tokens: Sequence[Token], words: AbstractSet[str]) -> bool:
    """Whether a negation stands between the first and the last of `words` in `tokens`."""
    places = [i for i, t in enumerate(tokens) if any(w in words for w in _content([t]))]
    if not places:
        return False
    return any(
        t.lower in NEGATIONS or t.lower.endswith("n't") for t in tokens[places[0] : places[-1]]
    )


def _words(tokens: Sequence[Token], mention: Mention, text: str | None = None) -> str:
    if text is not None:
        return text[tokens[mention.first].start : tokens[mention.last].end]
    return " ".join(t.text for t in tokens[mention.first : mention.last + 1])


def _conflict(candidate: Candidate, claim_tokens: Sequence[Token], claim_text: str) -> Conflict:
    sentence = candidate.sentence
    return Conflict(
        of_mention(candidate.mention.kind),
        _words(claim_tokens, candidate.mention, claim_text),
        _words(sentence.tokens, candidate.other),
        sentence.reference_index,
        sentence.start,
        sentence.end,
    )
