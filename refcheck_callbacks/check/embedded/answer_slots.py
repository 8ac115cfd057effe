"""Wrong short answers: another name in the slot the question asks about.

"Sydney." to "What is the capital of Australia?" is checked as "Sydney is the capital of
Australia" (`text.questions`). Against "Canberra is the capital city of Australia" it is a
contradiction: the reference restates the question and puts another name where the answer
goes. The stated-fact finder (`conflicts`) does not see it: a capitalised word opening a
sentence is read as a name only when a name runs on from it, and both names open theirs.

The rule, for a question asking for a name (who, whom, whose, what, which, where):
- the answer is the one name of the claim that the question does not hold: the slot's filler
  (read as a name even where it opens the claim; the question says it fills a slot);
- the reference sentence restating the question holds every content word of the question;
- it does not state the answer (no name agreeing with it, `text.agreement`), and it holds a
  name of its own in the same slot: next to the same content word on the same side as the
  answer in the claim ("Canberra is the capital" / "Sydney is the capital"), or, where the
  answer opens the claim as the one doing the question's verb, the agent of the sentence's
  passive ("painted by Italian artist Leonardo da Vinci"). A name elsewhere (`painted in
  Florence`) is another slot: no conflict.
Linear in the texts: each sentence's tokens are read once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from refcheck_callbacks.check.embedded.reference_sentences import (
    Conflict,
    ParsedReferences,
    ReferenceSentence,
    content_words,
)
from refcheck_callbacks.text.agreement import names_agree
from refcheck_callbacks.text.mentions import Mention, mentions
from refcheck_callbacks.text.tokens import Token, tokenize
from refcheck_callbacks.types import ConflictKind

ASKS_FOR_A_NAME = frozenset({"who", "whom", "whose", "what", "which", "where"})
MIN_ASKED = 2
"""Content words the question needs: fewer do not pick out the sentence that restates it."""
SLOT_WORDS = 2
"""Content words on each side of a name that place it in its sentence."""
AGENT_REACH = 3
"""Tokens after `by` within which a passive's agent name starts (`by Italian artist X`)."""


def find_slot_conflict(question: str, claim: str, references: ParsedReferences) -> Conflict | None:
    """The reference's name in the slot of the claim's answer, when it is another name (module
    docstring); None otherwise."""
    asked_tokens = tokenize(question)
    if not any(token.lower in ASKS_FOR_A_NAME for token in asked_tokens):
        return None
    asked = set(content_words(asked_tokens)) - ASKS_FOR_A_NAME
    if len(asked) < MIN_ASKED:
        return None
    claim_tokens = _readable(tokenize(claim))
    fillers = [name for name in _names(claim_tokens) if not _from(name, asked)]
    if len(fillers) != 1:
        return None
    answer = fillers[0]
    for _, index in references.ranked(asked):
        sentence = references.sentences[index]
        if not asked <= sentence.content:
            break  # ranked best first: no later sentence restates the question either
        found = _other_in_slot(answer, claim_tokens, sentence, asked)
        if found is not None:
            return found
    return None


def _other_in_slot(
    answer: Mention, claim_tokens: Sequence[Token], sentence: ReferenceSentence, asked: set[str]
) -> Conflict | None:
    tokens = _readable(list(sentence.tokens))
    names = [name for name in _names(tokens) if not _from(name, asked)]
    if any(names_agree(answer, name) for name in names):
        return None  # the sentence that restates the question gives this answer
    before, after = _near(claim_tokens, answer)
    placed = [
        name for name in names if before & _near(tokens, name)[0] or after & _near(tokens, name)[1]
    ]
    # The agent of a passive may come with its description (`by Italian artist Leonardo da
    # Vinci`): the longest of the names after `by` is the one named.
    agents = [name for name in names if answer.first == 0 and _passive_agent(tokens, name)]
    if placed:
        other = placed[0]
    elif agents:
        other = max(agents, key=lambda name: name.last - name.first)
    else:
        return None
    return Conflict(
        ConflictKind.ENTITY,
        _text(claim_tokens, answer),
        _text(tokens, other),
        sentence.reference_index,
        sentence.start,
        sentence.end,
    )


def _readable(tokens: list[Token]) -> list[Token]:
    """The tokens with the first one not opening a sentence: a capitalised first word is read
    as a name (`Sydney is`, `Canberra is`), which in the slot of a name it is."""
    if tokens:
        tokens[0] = dataclasses.replace(tokens[0], opens_sentence=False)
    return tokens


def _names(tokens: list[Token]) -> list[Mention]:
    return [mention for mention in mentions(tokens) if mention.kind == "name"]


def _from(name: Mention, asked: set[str]) -> bool:
    """Whether the name is the question's own (`Australia`, `Mona Lisa`)."""
    return any(word in asked for word in content_words(tokenize(" ".join(name.words))))


def _near(tokens: Sequence[Token], name: Mention) -> tuple[set[str], set[str]]:
    reach = 3 * SLOT_WORDS + 2
    before = content_words(tokens[max(0, name.first - reach) : name.first])[-SLOT_WORDS:]
    after = content_words(tokens[name.last + 1 : name.last + 1 + reach])[:SLOT_WORDS]
    return set(before), set(after)


def _passive_agent(tokens: Sequence[Token], name: Mention) -> bool:
    """`by` stands before the name, within `AGENT_REACH` tokens."""
    return any(t.lower == "by" for t in tokens[max(0, name.first - AGENT_REACH) : name.first])


def _text(tokens: Sequence[Token], name: Mention) -> str:
    return " ".join(token.text for token in tokens[name.first : name.last + 1])
