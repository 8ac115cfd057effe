"""Short answers: a phrase checked as the statement its question makes of it.

"Delhi" states nothing alone; as the answer to "What is the capital of India?" it states "Delhi
is the capital of India", which a reference can support or contradict. A short answer (a
phrase with no verb of its own) becomes the question turned into a statement, the answer in
the place of the question word:

- `What is the capital of India?` + `Delhi` -> `Delhi is the capital of India`;
- `Which magazine was started first, Arthur's Magazine or First for Women?` -> `Arthur's
  Magazine was started first`;
- `What nationality was James Henry Miller's wife?` -> `James Henry Miller's wife was American`;
- `When was the tower built?` -> `the tower built in 1889`; `How many moons does Mars have?`
  -> `Mars have 2 moons` (word order, not grammar: the checker compares words and facts);
- a question word inside the question (`... a head office in what city?`) is replaced in place;
- `Is Paris in France?` + `yes` -> `Paris in France`; + `no` -> `not Paris in France`.

A reply about the conversation is not an answer: a phrase that speaks to or of the people
talking (`Happy to help!`, `Thanks for asking`, `Let me check`: a first- or second-person
word, or a courtesy word first) states nothing of the world and stays a sentence (too short
to be a claim: the answer abstains). A phrase that cannot be what the question asks for is not
its answer either: `How tall / many / old ...?` asks for an amount, so `Paris` is no answer to
it.

A question that fits none of these gives `question: answer`. Linear in the texts.
"""

from __future__ import annotations

import re

from refcheck_callbacks.text.lexical import AUXILIARIES, IRREGULAR_PAST, STOPWORDS, numbers
from refcheck_callbacks.text.mention_words import NUMBER_WORDS, SCALES

MAX_WORDS = 8
"""An answer of more words is a sentence or a list, extracted as it is."""
_WH = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "how", "why"})
_TAKES_NOUN = frozenset({"what", "which", "whose"})
_DO = frozenset({"do", "does", "did"})
_PREPOSITIONS = frozenset("in on at by from since during before after around about".split())
_YES = frozenset({"yes", "yeah", "yep", "correct", "true"})
_NO = frozenset({"no", "nope", "false", "incorrect"})
_WORD = re.compile(r"\S+")
_PERSONAL = frozenset("i me my mine we us our you your yours i'm i'll i've you're let's".split())
"""Words of the people in the conversation: a phrase holding one is about the talk."""
_COURTESY = frozenset(
    "thanks thank please sorry hello hi hey welcome sure okay ok glad happy cheers bye goodbye "
    "absolutely certainly gladly anytime".split()
)
"""Words a reply about the conversation opens with (`Sure, ...`, `Happy to help`)."""
_AMOUNT_WORDS = frozenset(NUMBER_WORDS) | frozenset(SCALES) | {"a", "an", "several", "few"}


def is_short_answer(answer: str, question: str | None) -> bool:
    """Whether `answer` is a phrase to check with its question: a few words, no verb, and
    not a restatement of the question (which is a claim of its own)."""
    if not question:
        return False
    words = [w.strip(".,;:!?\"'()").lower() for w in _WORD.findall(answer)]
    words = [w for w in words if w]
    if not words or len(words) > MAX_WORDS:
        return False
    if words[0] in _YES | _NO and len(words) <= 2:
        return True
    if any(w in AUXILIARIES or w.endswith("n't") for w in words):
        return False
    if words[0] in _COURTESY or any(w in _PERSONAL for w in words):
        return False
    if _asks_for_an_amount(question) and not _states_an_amount(answer, words):
        return False
    asked = {w.strip("?,.\"'").lower() for w in _WORD.findall(question)} - STOPWORDS - _WH
    shared = asked & set(words)
    return not asked or 2 * len(shared) <= len(asked)


def _asks_for_an_amount(question: str) -> bool:
    """`How many / much / tall / old ...`: `how` and a word that is no auxiliary (`How did
    ...` asks for a manner, anything may answer it)."""
    lowered = [w.strip(",\"'").lower() for w in _WORD.findall(question)]
    return any(
        word == "how" and index + 1 < len(lowered) and lowered[index + 1] not in AUXILIARIES
        for index, word in enumerate(lowered)
    )


def _states_an_amount(answer: str, words: list[str]) -> bool:
    return bool(numbers(answer)) or any(w in _AMOUNT_WORDS for w in words)


def claim_from_question(question: str, answer: str) -> str:
    """The statement `answer` makes as the answer to `question` (see the module docstring)."""
    answer = answer.strip().rstrip(".!;,").strip()
    text = question.strip().rstrip("?.!").strip()
    words = _WORD.findall(text)
    if not words:
        return answer
    lowered = [w.strip(",\"'").lower() for w in words]
    short = answer.lower().split()
    if short and short[0] in _YES | _NO and len(short) <= 2:
        statement = " ".join(words[1:]) if lowered[0] in AUXILIARIES else text
        return statement if short[0] in _YES else f"not {statement}"
    wh = _question_word(lowered)
    if wh is None:
        return f"{text}: {answer}"
    if wh > 0:
        return _in_place(words, lowered, wh, answer)
    return _fronted(_without_alternatives(words), answer)


def _question_word(lowered: list[str]) -> int | None:
    """Where the question word is: near the end (`named after who`), else first (`Who
    wrote ...`), else anywhere (`Milhouse, who ...` is a relative pronoun, not the question)."""
    found = [i for i, w in enumerate(lowered) if w in _WH]
    if not found:
        return None
    if found[-1] >= len(lowered) - 3:
        return found[-1]
    return found[0]


def _wh_phrase_end(lowered: list[str], wh: int) -> int:
    """The index after the question phrase: `which magazine`, `how many moons`, `what`."""
    end = wh + 1
    if lowered[wh] == "how" and end < len(lowered) and lowered[end] not in AUXILIARIES:
        end += 1  # how many, how tall (not `how did`: a manner)
        if lowered[end - 1] in ("many", "much") and end < len(lowered):
            end += 1 if lowered[end] not in AUXILIARIES else 0
    elif lowered[wh] in _TAKES_NOUN and end < len(lowered) and lowered[end] not in AUXILIARIES:
        end += 1  # which company, what nationality
        while end < len(lowered) and end - wh <= 3 and not _verb_or_stopword(lowered[end]):
            end += 1
    return end


def _verb_or_stopword(word: str) -> bool:
    """Where a question's noun phrase ends: `which company | makes`, `which planet | is`."""
    return (
        word in AUXILIARIES
        or word in IRREGULAR_PAST
        or word in STOPWORDS
        or (word.endswith("ed") and len(word) > 4)
        or (word.endswith("s") and not word.endswith("ss"))
    )


def _in_place(words: list[str], lowered: list[str], wh: int, answer: str) -> str:
    end = _wh_phrase_end(lowered, wh)
    return " ".join([*words[:wh], answer, *words[end:]]).rstrip(",")


def _without_alternatives(words: list[str]) -> list[str]:
    """`Which magazine was started first, A or B` without `, A or B`."""
    for index in range(len(words) - 1, 0, -1):
        if words[index - 1].endswith(","):
            tail = [w.lower() for w in words[index:]]
            if "or" in tail:
                words = [*words[: index - 1], words[index - 1].rstrip(",")]
            break
    return words


def _fronted(words: list[str], answer: str) -> str:
    lowered = [w.lower() for w in words]
    wh = lowered[0]
    end = _wh_phrase_end(lowered, 0)
    noun = words[1:end]
    rest = words[end:]
    aux = rest[0].lower() if rest else ""
    place = "" if answer.split()[0].lower() in _PREPOSITIONS else "in "
    if wh == "how":
        if lowered[1] in ("many", "much"):
            after = [*rest[1:]] if aux in AUXILIARIES else rest
            counted = " ".join(noun[1:])
            if aux in AUXILIARIES:
                return _join(*after, answer, counted)
            return _join(answer, counted, *rest)
        return _join(*rest[1:], aux if aux not in _DO else "", answer, *noun)
    if wh in ("when", "where"):
        return _join(*(rest[1:] if aux in AUXILIARIES else rest), place + answer)
    if wh == "why":
        return _join(*(rest[1:] if aux in AUXILIARIES else rest), "because", answer)
    if aux in _DO:
        return _join(*rest[1:], answer)
    if aux in AUXILIARIES and noun and rest[1:]:
        if rest[-1].lower() in _PREPOSITIONS:  # what city is X in -> X is in A
            return _join(*rest[1:-1], rest[0], rest[-1], answer)
        if rest[1][:1].isupper():  # what nationality was X's wife -> X's wife was A
            return _join(*rest[1:], rest[0], answer)
    return _join(answer, *rest)


def _join(*parts: str) -> str:
    return " ".join(part for part in parts if part)
