"""Whether two mentions say the same: figures and dates by value, unit, range and hedge;
names by their distinctive words, initials and stems.

"Agree" is permissive on purpose: a conflict is only called where two mentions cannot be the
same thing, so rounding, conversions, abbreviations and partial names all agree.
"""

from __future__ import annotations

from refcheck_callbacks.text.mention_words import COUNT_NOUNS, GENERIC_NAME_WORDS
from refcheck_callbacks.text.mentions import Mention

_CONVERSION_SLACK = 0.05
"""Figures in different units of one dimension agree within 5%: conversions get rounded."""


def names_agree(a: Mention, b: Mention) -> bool:
    """Whether two names may name the same thing: one's distinctive words within the other's
    (`Obama`, `President Barack Obama`), an acronym (`US`, `United States`), or a shared stem
    or abbreviation (`Germany`, `German`; `Cas`, `Castleford`). `Prophets of Rage` and
    `Prophets of TV` each have a word the other lacks: different names."""
    if _initials(a, b) or _initials(b, a):
        return True
    distinctive_a = [w for w in a.words if w not in GENERIC_NAME_WORDS]
    distinctive_b = [w for w in b.words if w not in GENERIC_NAME_WORDS]
    if not distinctive_a or not distinctive_b:  # `United States`: only generic words
        return bool(set(a.words) & set(b.words))
    if _different_people(distinctive_a, distinctive_b):
        return False
    set_a, set_b = set(distinctive_a), set(distinctive_b)
    if set_a <= set_b or set_b <= set_a:
        return True
    if set_a & set_b:
        # `NY Penal Law`, `New York Penal Law`: what differs may abbreviate the other's words.
        return _abbreviates(set_a - set_b, b.words) or _abbreviates(set_b - set_a, a.words)
    return any(_same_word(x, y) for x in set_a for y in set_b)


def _initials(short: Mention, long: Mention) -> bool:
    """`US` and `United States`: a name in capitals spells the other's initials."""
    return bool(short.acronym) and short.acronym == "".join(w[0] for w in long.words)


def _abbreviates(extra: set[str], words: tuple[str, ...]) -> bool:
    """Some extra word is the initials of consecutive `words` (`ny`: `new york`)."""
    initials = "".join(word[0] for word in words)
    return any(len(word) > 1 and word in initials for word in extra)


def _same_word(x: str, y: str) -> bool:
    """A shared stem (`France`, `French`), an abbreviation (`Cas`, `Castleford`) or a part of
    a compound (`Caribbean`, `Indo-Caribbean`; `Kiev`, `Kiev-based`)."""
    short, long = sorted((x, y), key=len)
    return (
        (len(short) >= 5 and x[:4] == y[:4])
        or (len(short) >= 3 and long.startswith(short))
        or short in long.split("-")
    )


def _different_people(a: list[str], b: list[str]) -> bool:
    """`Scott Johnson` and `Steve Johnson`: one family name, other first names."""
    return len(a) == len(b) == 2 and a[1] == b[1] and not _same_word(a[0], b[0])


def values_agree(a: Mention, b: Mention) -> bool | None:
    """Whether two figures or dates agree; None when they cannot be compared (different
    kinds, dimensions or currencies, one with a unit and one without, or bare counts not
    followed by the same word: `190 countries`, `200 territories`)."""
    if a.kind != b.kind or a.kind == "name" or a.unit != b.unit:
        return None
    if a.kind == "term":
        return a.words == b.words if a.low == b.low else None
    if a.kind == "number" and a.unit is None and not _same_count(a, b):
        return None  # bare counts compare only when they count the same thing
    slack = max(a.tolerance, b.tolerance) + 1e-9 * max(1.0, abs(a.low), abs(b.low))
    if a.unit_size != b.unit_size:
        slack = max(slack, _CONVERSION_SLACK * max(abs(a.low), abs(b.low)))
    return a.low - slack <= b.high and b.low - slack <= a.high


def _same_count(a: Mention, b: Mention) -> bool:
    """Two bare counts of one thing: the same noun after them or nouns of one kind (`people`,
    `residents`); or two scaled quantities (`3 million`), one of which names nothing."""
    counted_a = {COUNT_NOUNS.get(word, word) for word in a.words}
    counted_b = {COUNT_NOUNS.get(word, word) for word in b.words}
    if counted_a & counted_b:
        return True
    return a.scaled and b.scaled and not (a.words and b.words)
