"""Lexical signals between a claim and its evidence: copy rate, numbers, negation, coverage.

RefChecker observes that claims whose n-grams are copied from the context are far more often
entailed; numbers and negations are where small models miss contradictions. These functions
are cheap, pure, and shared by the embedded checker's features.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

_TOKEN = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
NUMBER_PATTERN = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\d])")
NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor without cannot can't won't isn't aren't "
    "wasn't weren't doesn't don't didn't hasn't haven't hadn't shouldn't wouldn't couldn't "
    "n't".split()
)
STOPWORDS = frozenset(
    """a an the and or but if of in on at to for from by with as is are was were be been being
    it its this that these those there their they them he she his her we our you your i me my
    has have had do does did will would can could should may might must shall also which who
    whom whose what when where why how than then so such into onto about over under after
    before between during through up down out off again further once here all any both each
    few more most other some own same too very just only""".split()
)

AUXILIARIES = frozenset(
    """is are was were be been being am 's 're has have had having do does did will would can
    could should shall may might must""".split()
)
"""Auxiliary and copular verbs: a phrase with none of these (or another finite verb) states
no relation of its own ("Delhi", "Arthur's Magazine")."""
IRREGULAR_PAST = frozenset(
    """became began bought brought built came caught chose drew drove fell felt fought flew
    forgot found gave got grew held hid kept knew laid led left lent lost made meant met paid
    put ran rang rose said sang sat saw sent set shot showed sold spent split spoke stood stole
    struck swam took taught told thought threw understood won wore wrote""".split()
)
"""Past forms that end in no `-ed`: where a sentence's subject ends ("Curie won ...")."""


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return [t.lower() for t in _TOKEN.findall(text)]


def content_tokens(text: str) -> list[str]:
    """Tokens that carry meaning: no stopwords, no negations."""
    return [t for t in tokens(text) if t not in STOPWORDS and t not in NEGATIONS]


def numbers(text: str) -> set[str]:
    """Numbers in a text, normalised: thousands separators removed, trailing zeros cut."""
    found = set()
    for raw in NUMBER_PATTERN.findall(text):
        value = raw.replace(",", "").lstrip("+")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        found.add(value)
    return found


def has_negation(text: str) -> bool:
    return any(t in NEGATIONS or t.endswith("n't") for t in tokens(text))


def ngrams(items: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(items[i : i + n]) for i in range(len(items) - n + 1)}


def copy_rate(claim: str, evidence: str, n: int = 2) -> float:
    """Share of the claim's word n-grams that appear verbatim in the evidence."""
    claim_grams = ngrams(tokens(claim), n)
    if not claim_grams:
        return 0.0
    return len(claim_grams & ngrams(tokens(evidence), n)) / len(claim_grams)


def coverage(claim: str, evidence_texts: Iterable[str]) -> float:
    """Share of the claim's content words found anywhere in the evidence."""
    wanted = set(content_tokens(claim))
    if not wanted:
        return 0.0
    seen: set[str] = set()
    for text in evidence_texts:
        seen.update(tokens(text))
    return len(wanted & seen) / len(wanted)


def unmatched_numbers(claim: str, evidence: str) -> set[str]:
    """Numbers the claim states that the evidence does not."""
    return numbers(claim) - numbers(evidence)


_POSSESSIVE = re.compile(r"['’]s$")
_CAPITALISED = re.compile(r"\b[A-Z][\w’'-]*|\b\d{4}\b")
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)


def entities(text: str) -> set[str]:
    """Names in a text: capitalised words not opening a sentence, plus years; lower-cased.

    A crude stand-in for named-entity recognition that needs no model: a claim that names a
    person, place or year its evidence never mentions is rarely supported.
    """
    found = set()
    for match in _CAPITALISED.finditer(text):
        word = _POSSESSIVE.sub("", match.group().lower())
        if word in STOPWORDS or _opens_sentence(text, match.start()):
            continue
        found.add(word)
    return found


def _opens_sentence(text: str, start: int) -> bool:
    """Whether only spaces separate `start` from the text's start or a sentence end."""
    index = start - 1
    while index >= 0 and text[index] in " \t\"“'‘(":
        index -= 1
    return index < 0 or text[index] in ".!?:;\n"


def dates(text: str) -> set[str]:
    """Month names and four-digit years (1000-2099) mentioned in a text."""
    return {t for t in tokens(text) if t in _MONTHS or (len(t) == 4 and t[:2] in _CENTURIES)}


_CENTURIES = frozenset(str(c) for c in range(10, 21))


def unmatched_share(wanted: AbstractSet[str], available: AbstractSet[str]) -> float:
    """The share of `wanted` missing from `available` (0 when nothing is wanted)."""
    if not wanted:
        return 0.0
    return len(wanted - available) / len(wanted)
