"""Figures, dates and names in a sentence: what each says, in which unit, and where it stands.

A claim contradicts its source when it gives a different figure, date or name for the same
thing, so these are read with what makes two of them comparable: a number's value, scale
("1.5 million"), unit ("330 metres", "1,063 ft", "45%"), range ("1887-1889") and hedge
("about", "more than"); a year or a decade; a month; a run of capitalised words. Each mention
keeps its word positions, so a caller can check that two mentions stand in the same place of
two sentences.

Linear in the text: one pass of a tokenizer whose alternatives start with disjoint character
classes (nothing to backtrack into), then constant work per word.
"""

from __future__ import annotations

from dataclasses import dataclass

from refcheck_callbacks.text.lexical import STOPWORDS
from refcheck_callbacks.text.mention_words import (
    APPROXIMATE,
    AT_LEAST,
    AT_MOST,
    CURRENCIES,
    EXCLUSIVE_TERMS,
    MONEY_SCALES,
    MONTHS,
    NAME_JOINERS,
    NUMBER_WORDS,
    ORDINAL_SUFFIXES,
    ORDINALS,
    RANGE_WORDS,
    SCALES,
    UNIQUE_WORDS,
    UNITS,
    WEEKDAYS,
)
from refcheck_callbacks.text.tokens import Token

_DIGITS = frozenset("0123456789")


@dataclass(frozen=True, slots=True)
class Mention:
    """One figure, date or name; `first` and `last` are its token indices (inclusive)."""

    kind: str
    """number, ordinal, year, month, weekday, day (a month's day: `May 7`), term (a word of an
    exclusive set, `mention_words.EXCLUSIVE_TERMS`) or name."""
    first: int
    last: int
    low: float = 0.0
    high: float = 0.0
    """The value, or the range it states; a bound (`more than 300`) is open on one side."""
    tolerance: float = 0.0
    """How far a value may lie outside [low, high] and still agree (rounding, hedges)."""
    unit: str | None = None
    """The dimension (length, mass, ...; values in its base unit), a currency, or None."""
    unit_size: float = 1.0
    """The size of the unit the text used: two sizes mean a conversion, which gets rounded."""
    words: tuple[str, ...] = ()
    """A name's words, lower-cased, possessive cut; for a figure, the words after it."""
    acronym: str = ""
    """A one-word name in capitals (`US`, `U.S.`), lower-cased without dots."""
    listed: bool = False
    """A name in a list of names: which item the claim means is unclear."""
    scaled: bool = False
    """A figure with a scale word (`3 million`): a quantity, compared whatever it counts."""


def _value(text: str) -> tuple[float, float] | None:
    """(value, half the place of its last written digit) of `1,063`, `4.5`, `330`."""
    if text.count(".") > 1:
        return None
    if "," in text:
        head, *groups = text.split(".")[0].split(",")
        if not 1 <= len(head) <= 3 or any(len(g) != 3 for g in groups):
            return None
    plain = text.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    return float(plain), 0.5 * 10.0**-decimals


@dataclass
class _Quantity:
    """A figure being read: raw value, then scale, unit, range and hedge as they turn up."""

    first: int
    last: int
    value: float
    tolerance: float
    multiplier: float = 1.0
    unit: str | None = None
    unit_size: float = 1.0
    other: float | None = None
    """The far end of a range, raw."""
    scaled: bool = False


class _Reader:
    """One pass over a sentence's tokens, collecting mentions."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.found: list[Mention] = []
        self.shouting = _shouting(tokens)

    def word(self, index: int) -> str:
        return self.tokens[index].lower if 0 <= index < len(self.tokens) else ""

    def is_digits(self, index: int) -> bool:
        return 0 <= index < len(self.tokens) and self.tokens[index].text[0] in _DIGITS

    def read(self) -> list[Mention]:
        index = 0
        while index < len(self.tokens):
            index = self._at(index)
        return self.found

    def _at(self, index: int) -> int:
        token = self.tokens[index]
        if token.text[0] in _DIGITS:
            return self._number(index)
        if all(part in NUMBER_WORDS for part in token.lower.split("-")):
            return self._number_word(index)
        if token.lower in ORDINALS:
            value = float(ORDINALS[token.lower])
            self.found.append(Mention("ordinal", index, index, value, value))
        elif token.lower in MONTHS and (self._dated(index) or _full_month(token)):
            if self._day_at(index + 1):
                return self._day(index, index + 1, MONTHS[token.lower])
            value = float(MONTHS[token.lower])
            self.found.append(Mention("month", index, index, value, value))
        elif token.lower in WEEKDAYS:
            value = float(WEEKDAYS[token.lower])
            self.found.append(Mention("weekday", index, index, value, value))
        elif token.lower in EXCLUSIVE_TERMS and token.text.islower():
            group = float(_TERM_GROUPS[EXCLUSIVE_TERMS[token.lower]])
            self.found.append(Mention("term", index, index, group, group, words=(token.lower,)))
        elif (
            _capitalised(token)
            and not self.shouting
            and (
                not token.opens_sentence
                or self._name_runs_on(index)
                or self._uniquely_described(index)
            )
        ):
            return self._name(index)
        return index + 1

    def _uniquely_described(self, index: int) -> bool:
        """`Saturn is the largest planet`, `Delhi is the capital of India`: a sentence's first
        word is the subject of a description only one thing fits, so a name (`Scientists say`
        is no name)."""
        if self.word(index + 1) not in ("is", "was") or self.word(index + 2) != "the":
            return False
        described = self.word(index + 3)
        if self.word(index + 4) == "of" and self.tokens[index + 3].text.islower():
            return True  # the capital of, the author of: a role one thing holds
        return described in UNIQUE_WORDS or (
            described.endswith("est") and len(described) > 5 and described not in _NOT_SUPERLATIVE
        )

    def _day_at(self, index: int) -> bool:
        """A day of the month: 1 to 31, maybe with `st` / `th` glued on."""
        if not self.is_digits(index) or not self.tokens[index].text.isdigit():
            return False
        return 1 <= int(self.tokens[index].text) <= 31 and not _is_year(self.tokens[index].text)

    def _day(self, first: int, day_index: int, month: int) -> int:
        """`May 7`, `7 May`, `May 7th`: one date, compared with other days, not as figures."""
        last = max(first, day_index)
        if self._glued(last + 1) and self.word(last + 1) in ORDINAL_SUFFIXES:
            last += 1
        value = float(month * 100 + int(self.tokens[day_index].text))
        self.found.append(Mention("day", min(first, day_index), last, value, value))
        return last + 1

    def _dated(self, index: int) -> bool:
        """A month word next to a day or a year (`july 11`, `11 Dec`), but not `may 5`."""
        return self.word(index) not in ("may", "march") and (
            self.is_digits(index + 1) or self.is_digits(index - 1)
        )

    def _number(self, index: int) -> int:
        token = self.tokens[index]
        if index > 0 and token.glued and self.tokens[index - 1].text[0].isalpha():
            return index + 1  # part of an identifier: COVID-19, F-16
        parsed = _value(token.text)
        if parsed is None:
            return index + 1
        value, tolerance = parsed
        month = self.word(index + 1)
        if (
            month in MONTHS
            and self.tokens[index + 1].text[0].isupper()
            and self._day_at(index)
            and not self._glued(index + 1)
        ):
            return self._day(index + 1, index, MONTHS[month])
        suffix = self.word(index + 1) if self._glued(index + 1) else ""
        if suffix in ORDINAL_SUFFIXES:
            self.found.append(Mention("ordinal", index, index + 1, value, value))
            return index + 2
        if suffix == "s" and value.is_integer() and value >= 10:
            span = 10.0 if value % 100 else 100.0  # the 1990s, the 1800s
            self.found.append(Mention("year", index, index + 1, value, value + span - 1))
            return index + 2
        after = self.word(index + 1)
        if _is_year(token.text) and after not in UNITS and after not in SCALES:
            year = _Quantity(index, index, value, 0.0)
            self._range(year)
            return self._finish("year", year)
        return self._quantity(_Quantity(index, index, value, tolerance))

    def _number_word(self, index: int) -> int:
        if self.word(index) == "one" and self.word(index + 1) in ("of", "another", "day"):
            return index + 1  # "one of the", not a count
        value = float(sum(NUMBER_WORDS[part] for part in self.word(index).split("-")))
        return self._quantity(_Quantity(index, index, value, 0.0))

    def _glued(self, index: int) -> bool:
        return index < len(self.tokens) and self.tokens[index].glued

    def _quantity(self, quantity: _Quantity) -> int:
        """A number with what follows it (scale, range, unit) and the currency before it."""
        scale = SCALES.get(self.word(quantity.last + 1))
        if self.word(quantity.first - 1) in CURRENCIES and self._glued(quantity.last + 1):
            scale = MONEY_SCALES.get(self.word(quantity.last + 1), scale)
        if scale is not None:
            quantity.tolerance = max(quantity.tolerance, 0.05)
            quantity.multiplier, quantity.last = scale, quantity.last + 1
            quantity.scaled = scale >= 1e3
        self._range(quantity)
        self._unit(quantity)
        return self._finish("number", quantity)

    def _range(self, quantity: _Quantity) -> None:
        """`5-10`, `5 to 10`, `between 5 and 10`: the second figure of a range."""
        end = quantity.last + 1
        if self.is_digits(end) and self.tokens[end].glued:
            other = end
        elif self.word(end) in RANGE_WORDS and self.is_digits(end + 1):
            if self.word(end) == "and" and self.word(quantity.first - 1) != "between":
                return
            other = end + 1
        else:
            return
        parsed = _value(self.tokens[other].text)
        if parsed is not None:
            quantity.other, quantity.last = parsed[0], other

    def _unit(self, quantity: _Quantity) -> None:
        before, after = self.word(quantity.first - 1), self.word(quantity.last + 1)
        if before in CURRENCIES:
            quantity.unit = CURRENCIES[before]
        elif after == "per" and self.word(quantity.last + 2) == "cent":
            quantity.unit, quantity.last = "percent", quantity.last + 2
        elif after in CURRENCIES and after.isalpha():
            quantity.unit, quantity.last = CURRENCIES[after], quantity.last + 1
        elif after in UNITS:
            quantity.unit, quantity.unit_size = UNITS[after]
            quantity.last += 1

    def _finish(self, kind: str, quantity: _Quantity) -> int:
        factor = quantity.multiplier * quantity.unit_size
        low = quantity.value * factor
        other = low if quantity.other is None else quantity.other * factor
        low, high = min(low, other), max(low, other)
        tolerance = quantity.tolerance * factor
        before = self._hedge(quantity.first)
        if before & APPROXIMATE:
            tolerance = max(tolerance, 0.1 * abs(high))
        elif before & AT_MOST:
            low = float("-inf")
        elif before & AT_LEAST:
            high = float("inf")
        last = quantity.last
        words = tuple(w for w in (self.word(last + 1), self.word(last + 2)) if w not in STOPWORDS)
        self.found.append(
            Mention(
                kind,
                quantity.first,
                last,
                low,
                high,
                tolerance,
                quantity.unit,
                quantity.unit_size,
                tuple(w for w in words if w),
                scaled=quantity.scaled,
            )
        )
        return last + 1

    def _name_runs_on(self, index: int) -> bool:
        """A name's word follows without a break (`New York is`, `Theresa May said`)."""
        following = index + 1
        return (
            following < len(self.tokens)
            and not self.tokens[following].after_break
            and (self._capitalised_at(following) or self._family_name_at(following))
        )

    def _family_name_at(self, index: int) -> bool:
        """A month's name after a name's word and before no figure is a family name
        (`Jonny May`, `Theresa May`), not a date (`May 7`, `in May 2019`)."""
        token = self.tokens[index]
        return (
            token.text[0].isupper()
            and _strip_possessive(token.lower) in MONTHS
            and not self.is_digits(index + 1)
            and not self.is_digits(index - 2)
        )

    def _hedge(self, first: int) -> set[str]:
        """The two words before a figure that may hedge or bound it (`about`, `more than`,
        `up to`); `up` alone is a change (`up 19.4%`), not a bound."""
        before = {self.word(first - 1), self.word(first - 2)}
        if "up" in before and self.word(first - 1) != "to":
            before.discard("up")
        return before

    def _capitalised_at(self, index: int) -> bool:
        return index < len(self.tokens) and _capitalised(self.tokens[index])

    def _name(self, index: int) -> int:
        last = index
        while last + 1 < len(self.tokens) and not self.tokens[last + 1].after_break:
            if self._capitalised_at(last + 1) or self._family_name_at(last + 1):
                last += 1
            elif self.word(last + 1) in NAME_JOINERS and self._capitalised_at(last + 2):
                last += 2
            else:
                break
        words = tuple(
            _strip_possessive(self.tokens[i].lower)
            for i in range(index, last + 1)
            if self.tokens[i].lower not in NAME_JOINERS
        )
        acronym = self.tokens[index].text.replace(".", "") if index == last else ""
        acronym = acronym.lower() if acronym.isupper() and len(acronym) > 1 else ""
        listed = self._listed(index, last)
        self.found.append(Mention("name", index, last, words=words, acronym=acronym, listed=listed))
        return last + 1

    def _listed(self, first: int, last: int) -> bool:
        """One of several names in a row (`India, Korea and Central Asia`)."""
        after = last + 1
        if self.word(after) in ("and", "or"):
            after += 1
        if (
            after < len(self.tokens)
            and (self.tokens[after].after_break or self.word(last + 1) in ("and", "or"))
            and _capitalised(self.tokens[after])
        ):
            return True
        previous = self.found[-1] if self.found else None
        return (
            previous is not None
            and previous.kind == "name"
            and first - previous.last <= 2
            and (self.tokens[first].after_break or self.word(first - 1) in ("and", "or"))
        )


SHOUTING_WORDS = 3
"""Words in capitals, and more than half of the words, that make a text written in capitals
(`KILAUEA FOR EXAMPLE HAS THE MOST ACTIVE`): there capitals mark no name."""


def _shouting(tokens: list[Token]) -> bool:
    words = [t.text for t in tokens if len(t.text) > 1 and t.text[0].isalpha()]
    capitals = sum(word.isupper() for word in words)
    return capitals >= SHOUTING_WORDS and 2 * capitals > len(words)


def _is_year(text: str) -> bool:
    return len(text) == 4 and text.isdigit() and 1000 <= int(text) <= 2099


def _strip_possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word


def _full_month(token: Token) -> bool:
    """A capitalised month name written out (`May`, `December`), not an abbreviation."""
    return token.text[0].isupper() and (
        len(token.lower) > 4 or token.lower in ("may", "june", "july")
    )


_TERM_GROUPS = {group: i for i, group in enumerate(sorted(set(EXCLUSIVE_TERMS.values())))}
_NOT_SUPERLATIVE = frozenset(
    "forest interest request protest harvest contest honest modest arrest manifest".split()
)


def _capitalised(token: Token) -> bool:
    return (
        token.text[0].isupper()
        and token.lower not in STOPWORDS
        and _strip_possessive(token.lower) not in MONTHS
        and token.lower not in WEEKDAYS
        and token.lower not in NUMBER_WORDS
        and token.lower not in ORDINALS
        and token.lower.partition("'")[0].partition("’")[0] != "i"  # `I`, `I'm`, `I’ve`
    )


def mentions(tokens: list[Token]) -> list[Mention]:
    """The figures, dates and names among `tokens` (one sentence), in order. A capitalised
    word opening a sentence is a name only when a name runs on from it (`New York is`): alone
    it is as often an ordinary word (`Scientists say`)."""
    return _Reader(tokens).read()
