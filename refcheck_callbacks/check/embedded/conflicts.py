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
A mention with no counterpart is absent from the source, which is Neutral, not this. Where
no mention conflicts, a reference sentence restating a claim sentence with a negation on one
side only is a denial (`denials`). The reference sentences are read once per request
(`reference_sentences`). The
thresholds were set on planted edits of one half of the shared data's groups and checked on
the other half and on the real labels; `SWAP_GAP` and the swap rule were chosen on all the
planted edits (docs/embedded_checker.md).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from refcheck_callbacks.check.conflict.kinds import of_mention
from refcheck_callbacks.check.embedded.answer_slots import find_slot_conflict
from refcheck_callbacks.check.embedded.denials import find_denial
from refcheck_callbacks.check.embedded.reference_sentences import (
    Conflict,
    ParsedReferences,
    ReferenceSentence,
    content_words,
    lower_case_words,
    read_mentions,
    stem,
)
from refcheck_callbacks.text.agreement import names_agree, values_agree
from refcheck_callbacks.text.lexical import NEGATIONS
from refcheck_callbacks.text.mention_words import GENERIC_NAME_WORDS
from refcheck_callbacks.text.mentions import Mention
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.text.tokens import Token, tokenize

CONTEXT_WORDS = 4
"""Content words on each side of a mention that say what it is about."""
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


def _negated_near(tokens: Sequence[Token], mention: Mention) -> bool:
    low, high = max(0, mention.first - NEGATION_REACH), mention.last + 1 + NEGATION_REACH
    return any(t.lower in NEGATIONS or t.lower.endswith("n't") for t in tokens[low:high])


@dataclass(frozen=True, slots=True)
class Candidate:
    """A claim mention, a disagreeing mention of a matching sentence, and how well they align."""

    mention: Mention
    sentence: ReferenceSentence
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
    before = content_words(tokens[max(0, mention.first - reach) : mention.first])[-words:]
    after = content_words(tokens[mention.last + 1 : mention.last + 1 + reach])[:words]
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
        self.mentions = read_mentions(self.tokens, lower_case | lower_case_words(self.tokens))
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
        before = content_words(own)[-CONTEXT_WORDS:]
        after = content_words(self.tokens[mention.last + 1 : mention.last + 1 + 3 * CONTEXT_WORDS])
        words = set(before) | set(after[:CONTEXT_WORDS])
        if len(words) < CONTEXT_WORDS - 1:
            earlier = content_words(
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
            for index in references.by_word.get(stem(key.lower), ())
            for other in references.sentences[index].mentions
        )

    def _stated_in_place(self, mention: Mention, sentence: ReferenceSentence) -> bool:
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
        sentence: ReferenceSentence,
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
    return not any(stem(word) in references.by_word for word in distinctive)


def _apart(mention: Mention, other: Mention, sentence: ReferenceSentence) -> bool:
    """Every mention of the sentence agreeing with the claim's stands more than `SWAP_GAP`
    tokens from `other`."""
    return all(
        max(same.first - other.last, other.first - same.last) > SWAP_GAP
        for same in sentence.mentions
        if _agree(mention, same)
    )


def _states(mention: Mention, sentence: ReferenceSentence) -> bool:
    return any(_agree(mention, other) for other in sentence.mentions) or (
        mention.kind == "name" and _names_words_in(mention, sentence)
    )


def _names_words_in(mention: Mention, sentence: ReferenceSentence) -> bool:
    """The name's words are in the sentence, unread as a name (a sentence's first word)."""
    return all(stem(word) in sentence.content for word in mention.words)


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


def find_conflict(
    claim: str, references: ParsedReferences, question: str | None = None
) -> Conflict | None:
    """The first figure, date or name of `claim` that its best-matching reference sentence
    states differently, in the same place; else, for the answer to `question`, another name
    in the slot it asks about (`answer_slots`); else a denial. None when there is none."""
    parsed = _Claim(claim, references.lower_case)
    for mention in parsed.mentions:
        for candidate in parsed.candidates(mention, references):
            if is_conflict(candidate):
                return _conflict(candidate, parsed.tokens, claim)
    if question:
        slot = find_slot_conflict(question, claim, references)
        if slot is not None:
            return slot
    return find_denial(parsed.text, parsed.spans, parsed.tokens, references)


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
