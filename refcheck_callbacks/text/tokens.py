"""Words, numbers and symbols of a text, each with where it stands and what stands before it.

The unit every text reader of the conflict step works on (`text.mentions`, the embedded
checker's reference sentences): a token keeps its offsets, its folded lower case (names
compare without case or diacritics), and whether punctuation, a clause stop or nothing at
all separates it from the token before.

Linear in the text: one pass of a regular expression whose alternatives start with disjoint
character classes (nothing to backtrack into).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_TOKEN = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[^\W\d_]+(?:['’.\-][^\W\d_]+)*|[%$€£¥]")


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    lower: str
    """Lower case, diacritics folded (`fold`)."""
    start: int
    end: int
    glued: bool
    """No space before it: `10km`, `3rd`, `1990s`, `COVID-19`."""
    opens_sentence: bool
    after_break: bool
    """Punctuation before it (`,` `;` `(`): a name does not run on across it."""


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    previous_end, sentence_open = 0, True
    for match in _TOKEN.finditer(text):
        start = match.start()
        gap = text[previous_end:start]
        if tokens and any(c in _CLAUSE_STOPS for c in gap) and tokens[-1].lower not in _TITLES:
            sentence_open = True
        word = match.group()
        glued = bool(tokens) and not gap.strip(_GLUE)
        after_break = bool(gap.strip(" \t\n" + _GLUE))
        tokens.append(
            Token(word, fold(word), start, match.end(), glued, sentence_open, after_break)
        )
        sentence_open = False
        previous_end = match.end()
    return tokens


def fold(word: str) -> str:
    """Lower case without diacritics: `Niño`, `São` and `Müller` are the same names as `Nino`,
    `Sao` and `Muller`, which texts and answers write either way."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_GLUE = "-/"
_CLAUSE_STOPS = ".!?\n:"
"""After these a capitalised word opens a sentence or a clause (`Scheduling: Plan ahead`)."""
_TITLES = frozenset(
    "mr mrs ms dr prof st jr sr gen col lt sgt rev no vs etc inc ltd co u.s u.k e.g i.e".split()
)
