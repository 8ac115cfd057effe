"""Synthetic training claims made from reference sentences: supported, conflicting, not stated.

The labelled sets rarely show the errors users meet (a changed figure, a swapped name, a
dropped "not"), and never enough of them to learn from. So every reference sentence can
become a claim of a known label:

- supported (Entailment): the sentence itself; its main clause; it and the next sentence
  merged; a modifier dropped (a parenthesis, an -ly adverb);
- conflicting (Contradiction): a figure moved by 5-30% or by 1-3, a year moved by one or a
  month or weekday moved to its neighbour, a name replaced by one from another document, a
  negation added or removed, a word replaced by its antonym, two names swapped (roles), one of
  a set of mutually exclusive values (colours, compass points, ordinals, seasons, medals)
  replaced by another;
- not stated (Neutral): a named detail from another document added ("... in Berlin"); a
  sentence from another document on the same topic that shares few of this one's words.

Apart from `bench/planted_edits.py` on purpose, so planted recall measures reading and not
recall of the generator: no code is shared, and the edits differ where the kinds meet (a
planted figure is scaled by 0.4-0.75 or 1.35-2.5, a year moved by 2-30, a month replaced by any
other; here a figure moves by at most 30%, a year by one, a month to a neighbour). Training can
also hold out whole kinds (`--hold-out-kinds figure,date,name`).

Each edit reads its sentence once with linear-time patterns, and is seeded by the caller's rng.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from refcheck_callbacks.text.lexical import STOPWORDS
from refcheck_callbacks.types import Label

SUPPORTED_KINDS = ("sentence", "clause", "merged", "modifier_dropped")
CONFLICTING_KINDS = (
    "figure", "date", "name", "negation", "antonym", "swapped_roles", "exclusive",
)  # fmt: skip
NOT_STATED_KINDS = ("added_detail", "other_document")
KIND_LABELS: dict[str, Label] = {
    **dict.fromkeys(SUPPORTED_KINDS, Label.ENTAILMENT),
    **dict.fromkeys(CONFLICTING_KINDS, Label.CONTRADICTION),
    **dict.fromkeys(NOT_STATED_KINDS, Label.NEUTRAL),
}
MONTHS = "January February March April May June July August September October November December"
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
_CYCLES = (MONTHS.split(), WEEKDAYS.split())
_ANTONYMS = dict(
    pair
    for a, b in (
        ("increase", "decrease"), ("increased", "decreased"), ("largest", "smallest"),
        ("before", "after"), ("first", "last"), ("more", "less"), ("higher", "lower"),
        ("won", "lost"), ("rose", "fell"), ("older", "younger"), ("earliest", "latest"),
        ("maximum", "minimum"), ("above", "below"), ("majority", "minority"),
        ("inside", "outside"), ("male", "female"), ("open", "closed"), ("early", "late"),
        ("positive", "negative"), ("public", "private"), ("legal", "illegal"),
        ("success", "failure"), ("successful", "unsuccessful"), ("accepted", "rejected"),
        ("larger", "smaller"), ("best", "worst"), ("strong", "weak"), ("high", "low"),
        ("increases", "decreases"), ("allowed", "banned"), ("ancient", "modern"),
        ("entered", "left"), ("gained", "lost"), ("approved", "opposed"), ("wet", "dry"),
    )
    for pair in ((a, b), (b, a))
)  # fmt: skip
_EXCLUSIVE = tuple(
    group.split()
    for group in (
        "red blue green yellow black white orange purple brown",
        "north south east west",
        "northern southern eastern western",
        "second third fourth fifth sixth seventh eighth ninth tenth",
        "spring summer autumn winter",
        "gold silver bronze",
        "Africa Asia Europe Antarctica Australia",
    )
)
_EXCLUSIVE_OF = {word: group for group in _EXCLUSIVE for word in group}
_AUXILIARY = re.compile(
    r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|did|may|might|must)\b"
)
_NEGATION = re.compile(r"\s+(?:not|never|cannot|can't|won't|[a-z]+n't)\b")
_AFFIRMED = {"cannot": "can", "can't": "can", "won't": "will"}
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")
_YEAR = re.compile(r"(?<!\w)(1[0-9]{3}|20[0-9]{2})(?!\w)")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_PARENTHESIS = re.compile(r"\s*\([^()]*\)")
_ADVERB = re.compile(r"\s+[a-z]{3,}ly\b")
_CLAUSE_BREAK = re.compile(r";\s|,\s(?:and|but|while|whereas|although|which)\s")
_DETAIL = re.compile(
    r"\b(?:in|at|near|during|for|with|by) (?:the )?[A-Z][a-z]+(?: [A-Z][a-z]+){0,2}"
)
MIN_WORDS = 5


@dataclass(frozen=True)
class Sentence:
    """A reference sentence to edit, with what an edit needs from around it."""

    text: str
    following: str | None
    """The next sentence of its document, if any."""
    other: str
    """A sentence of another document on the same topic (see `training.reader_data`)."""
    other_names: Sequence[str]
    """Names from other documents, for replacements."""


@dataclass(frozen=True)
class SyntheticClaim:
    claim: str
    kind: str

    @property
    def label(self) -> Label:
        return KIND_LABELS[self.kind]


def _sentence(text: str) -> str:
    text = " ".join(text.split()).rstrip(" ,;:")
    return text if text.endswith((".", "!", "?")) else text + "."


def _body(text: str) -> str:
    return text.rstrip(" .!?")


def _case_like(word: str, original: str) -> str:
    return word.capitalize() if original[:1].isupper() else word


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _names(text: str) -> list[tuple[int, int]]:
    """Spans of capitalised word runs that do not open the sentence and are not stopwords."""
    spans: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None
    for match in _WORD.finditer(text):
        word = match.group()
        name = match.start() > 0 and word[0].isupper() and word.lower() not in STOPWORDS
        adjacent = run is not None and text[run[1] : match.start()] == " "
        if name and adjacent and run is not None:
            run = (run[0], match.end())
        elif name:
            if run is not None:
                spans.append(run)
            run = (match.start(), match.end())
        elif run is not None:
            spans.append(run)
            run = None
    if run is not None:
        spans.append(run)
    return [span for span in spans if text[span[0] : span[1]] not in MONTHS + WEEKDAYS]


def sentence(s: Sentence, rng: random.Random) -> str | None:
    return _sentence(s.text)


def clause(s: Sentence, rng: random.Random) -> str | None:
    match = _CLAUSE_BREAK.search(s.text)
    if match is None or len(s.text[: match.start()].split()) < MIN_WORDS:
        return None
    return _sentence(s.text[: match.start()])


def merged(s: Sentence, rng: random.Random) -> str | None:
    if s.following is None:
        return None
    return f"{_body(s.text)}; {_sentence(s.following)}"


def modifier_dropped(s: Sentence, rng: random.Random) -> str | None:
    for pattern in (_PARENTHESIS, _ADVERB):
        found = list(pattern.finditer(s.text))
        if found:
            match = rng.choice(found)
            return _sentence(_replace(s.text, match.start(), match.end(), ""))
    return None


def _moved_number(text: str, rng: random.Random) -> str | None:
    body = text.replace(",", "")
    decimals = len(body.split(".")[1]) if "." in body else 0
    value = float(body)
    if value < 10 and decimals == 0:
        moved = value + rng.choice([-3, -2, -1, 1, 2, 3])
        if moved < 0:
            moved = value + rng.randint(1, 3)
    else:
        moved = value * (1 + rng.choice([-1, 1]) * rng.uniform(0.05, 0.3))
    formatted = f"{moved:,.{decimals}f}" if "," in text else f"{moved:.{decimals}f}"
    return None if formatted == text else formatted


def figure(s: Sentence, rng: random.Random) -> str | None:
    found = [m for m in _NUMBER.finditer(s.text) if not _YEAR.fullmatch(m.group())]
    if not found:
        return None
    match = rng.choice(found)
    moved = _moved_number(match.group(), rng)
    return None if moved is None else _sentence(_replace(s.text, *match.span(), moved))


def date(s: Sentence, rng: random.Random) -> str | None:
    options: list[tuple[int, int, str]] = [
        (m.start(), m.end(), str(int(m.group()) + rng.choice([-1, 1])))
        for m in _YEAR.finditer(s.text)
    ]
    for match in _WORD.finditer(s.text):
        for cycle in _CYCLES:
            if match.group() in cycle:
                index = cycle.index(match.group()) + rng.choice([-1, 1])
                options.append((match.start(), match.end(), cycle[index % len(cycle)]))
    if not options:
        return None
    start, end, new = rng.choice(options)
    return _sentence(_replace(s.text, start, end, new))


def name(s: Sentence, rng: random.Random) -> str | None:
    spans = _names(s.text)
    lowered = s.text.lower()
    pool = [n for n in s.other_names if n.lower() not in lowered]
    if not spans or not pool:
        return None
    start, end = rng.choice(spans)
    return _sentence(_replace(s.text, start, end, rng.choice(pool)))


def negation(s: Sentence, rng: random.Random) -> str | None:
    found = _NEGATION.search(s.text)
    if found is not None:
        word = found.group().strip().lower()
        kept = _AFFIRMED.get(word, word.removesuffix("n't") if word.endswith("n't") else "")
        text = _replace(s.text, found.start(), found.end(), f" {kept}" if kept else "")
        return _sentence(text)
    auxiliary = _AUXILIARY.search(s.text)
    if auxiliary is None:
        return None
    return _sentence(_replace(s.text, auxiliary.end(), auxiliary.end(), " not"))


def antonym(s: Sentence, rng: random.Random) -> str | None:
    found = [m for m in _WORD.finditer(s.text) if m.group().lower() in _ANTONYMS]
    if not found:
        return None
    match = rng.choice(found)
    new = _case_like(_ANTONYMS[match.group().lower()], match.group())
    return _sentence(_replace(s.text, *match.span(), new))


def swapped_roles(s: Sentence, rng: random.Random) -> str | None:
    spans = _names(s.text)
    distinct = {s.text[a:b] for a, b in spans}
    if len(spans) < 2 or len(distinct) < 2:
        return None
    first = rng.randrange(len(spans) - 1)
    (a, b), (c, d) = spans[first], spans[first + 1]
    if s.text[a:b] == s.text[c:d]:
        return None
    t = s.text
    return _sentence(t[:a] + t[c:d] + t[b:c] + t[a:b] + t[d:])


def exclusive(s: Sentence, rng: random.Random) -> str | None:
    found = [m for m in _WORD.finditer(s.text) if m.group() in _EXCLUSIVE_OF]
    found += [m for m in _WORD.finditer(s.text) if m.group().lower() in _EXCLUSIVE_OF]
    if not found:
        return None
    match = rng.choice(found)
    word = match.group() if match.group() in _EXCLUSIVE_OF else match.group().lower()
    new = rng.choice([w for w in _EXCLUSIVE_OF[word] if w != word])
    return _sentence(_replace(s.text, *match.span(), _case_like(new, match.group())))


def added_detail(s: Sentence, rng: random.Random) -> str | None:
    lowered = s.text.lower()
    details = [m.group() for m in _DETAIL.finditer(s.other) if m.group().lower() not in lowered]
    if not details:
        return None
    return f"{_body(s.text)} {rng.choice(details)}."


def other_document(s: Sentence, rng: random.Random) -> str | None:
    return _sentence(s.other) if len(s.other.split()) >= MIN_WORDS else None


EDITS: dict[str, Callable[[Sentence, random.Random], str | None]] = {
    "sentence": sentence,
    "clause": clause,
    "merged": merged,
    "modifier_dropped": modifier_dropped,
    "figure": figure,
    "date": date,
    "name": name,
    "negation": negation,
    "antonym": antonym,
    "swapped_roles": swapped_roles,
    "exclusive": exclusive,
    "added_detail": added_detail,
    "other_document": other_document,
}
"""Each kind's edit: the claim it makes of a sentence, or None where it does not apply."""


def synthetic_claim(
    s: Sentence, rng: random.Random, kinds: Sequence[str] = tuple(EDITS)
) -> SyntheticClaim | None:
    """One claim of `s`: a label drawn uniformly (so the three stay balanced), then a kind of
    that label that applies to the sentence, in random order."""
    labels = [label for label in Label if any(KIND_LABELS[k] is label for k in kinds)]
    label = rng.choice(labels)
    candidates = [kind for kind in kinds if KIND_LABELS[kind] is label]
    rng.shuffle(candidates)
    for kind in candidates:
        claim = EDITS[kind](s, rng)
        if claim is not None and (kind == "sentence" or claim != _sentence(s.text)):
            return SyntheticClaim(claim, kind)
    return None


def names_in(text: str) -> list[str]:
    """The names an edit may borrow from a document."""
    return [text[a:b] for a, b in _names(text)]
