"""Planted contradictions: supported claims with one stated figure, date, name or place changed.

`refcheck bench --dataset planted:wice` (or `planted:all`) turns a set's supported claims into
pairs: the claim with one fact changed, labelled Contradiction, and the unchanged original as
its control, labelled Entailment. Contradiction recall on the edits says whether a checker
reads a changed fact as a contradiction; the share of controls labelled Contradiction says
what that costs on claims that are right.

Only facts the references state are changed (the figure, year, month or capitalised name
appears in them), so every edit contradicts the references rather than adding something they
do not mention. The editor reads words on its own, with no code shared with any checker:
- figure: a number (digits, thousands separators, decimals, a percent sign) scaled by a
  factor in [0.4, 0.75] or [1.35, 2.5], written in the same style; or a number word (two to
  twelve) replaced by another;
- date: a year (1000 to 2099) moved by 2 to 30 years, or a month or weekday name replaced by
  another;
- name: a run of capitalised words not opening a sentence replaced, half the time by a name
  the references mention and the claim does not (a mix-up within the context), else by a name
  from another claim of the same set. A run that follows a capitalised first word
  ("Capital One") is not edited: where the name starts is unclear. A single capitalised word
  that the set's texts also write in lower case ("Department", "House", a page's "AUTHOR")
  is an ordinary word, not a name, and is neither edited nor used as a replacement; nor are
  runs holding a month or weekday.
Edits are seeded by example id, so a set gives the same pairs on every run.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.text.lexical import STOPWORDS
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.types import Label

PREFIX = "planted:"
"""Edits of facts the references state about the same subject and relation (the default)."""
ANY_PREFIX = "planted-any:"
"""Edits of facts the references mention anywhere, related to the claim's words or not."""
CONTEXT_WORDS = 6
KINDS = ("figure", "date", "name")
MONTHS = (
    "January February March April May June July August September October November December"
).split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
NUMBER_WORDS = "two three four five six seven eight nine ten eleven twelve".split()
_EDGE_PUNCTUATION = "\"'“”‘’()[]{},.;:!?"
_NOT_NAMES = frozenset(
    """a an the and or but if of in on at to for from by with as is are was were it its this
    that these those there their they he she his her we our you your i my me not no yes
    however also after before during while when where which who what although because
    """.split()
)


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    text: str
    """The word without the punctuation around it."""
    opens_sentence: bool
    opens_phrase: bool
    """Punctuation precedes it (`(NVDA`): a name does not run on into it."""
    closes_phrase: bool
    """Punctuation follows it: a name does not run on past it."""


def _words(text: str) -> list[_Word]:
    """Whitespace-separated words, edge punctuation cut, with their offsets (linear)."""
    words: list[_Word] = []
    position, after_stop = 0, True
    for raw in text.split():
        position = text.index(raw, position)
        lead = len(raw) - len(raw.lstrip(_EDGE_PUNCTUATION))
        core = raw.strip(_EDGE_PUNCTUATION)
        if core:
            start = position + lead
            closes = len(raw) > lead + len(core)
            words.append(_Word(start, start + len(core), core, after_stop, lead > 0, closes))
        after_stop = raw.rstrip("\"'”’)]").endswith((".", "!", "?", ":"))
        position += len(raw)
    return words


def _number(text: str) -> float | None:
    body = text.removesuffix("%")
    if not body or not body[0].isdigit() or not all(c.isdigit() or c in ",." for c in body):
        return None
    if body.count(".") > 1:
        return None
    try:
        return float(body.replace(",", ""))
    except ValueError:
        return None


def _is_year(text: str) -> bool:
    return len(text) == 4 and text.isdigit() and 1000 <= int(text) <= 2099


def _format_like(value: float, original: str) -> str:
    """`value` written as `original` was: decimals, thousands separators, percent sign."""
    body = original.removesuffix("%")
    decimals = len(body.split(".")[1]) if "." in body else 0
    text = f"{value:,.{decimals}f}" if "," in body else f"{value:.{decimals}f}"
    return text + ("%" if original.endswith("%") else "")


def _name_runs(words: Sequence[_Word], ordinary: AbstractSet[str]) -> list[tuple[int, int]]:
    """(first, last + 1) word indices of the names among `words`: runs of capitalised words
    not opening a sentence nor following a capitalised first word, less one-word runs that
    are `ordinary` words (written in lower case somewhere) and runs with a month or weekday."""
    runs: list[tuple[int, int]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if _is_name_word(word) and not word.opens_sentence:
            end = index + 1
            while (
                end < len(words)
                and not words[end - 1].closes_phrase
                and not words[end].opens_phrase
                and _is_name_word(words[end])
                and not words[end].opens_sentence
            ):
                end += 1
            if _is_name(words, index, end, ordinary):
                runs.append((index, end))
            index = end
        else:
            index += 1
    return runs


def _bare(word: _Word) -> str:
    return word.text.removesuffix("'s").removesuffix("’s")


def _is_name_word(word: _Word) -> bool:
    text = _bare(word)
    return (
        len(text) > 1
        and text[0].isupper()
        and text.replace("-", "").replace(".", "").isalpha()
        and text.lower() not in _NOT_NAMES
    )


def _is_name(words: Sequence[_Word], first: int, end: int, ordinary: AbstractSet[str]) -> bool:
    previous = words[first - 1] if first > 0 else None
    if previous is not None and previous.opens_sentence and _is_name_word(previous):
        return False
    if end - first == 1 and _bare(words[first]).lower() in ordinary:
        return False
    return not any(_bare(w) in MONTHS or _bare(w) in WEEKDAYS for w in words[first:end])


def _ordinary_words(examples: Sequence[LabelledExample]) -> frozenset[str]:
    """Words the set's claims and references write in lower case: a dictionary of the set."""
    texts = [text for e in examples for text in (e.claim, *e.references)]
    return frozenset(w for text in texts for w in (_bare(x) for x in _words(text)) if w.islower())


def _run_text(text: str, words: Sequence[_Word], run: tuple[int, int]) -> str:
    return text[words[run[0]].start : words[run[1] - 1].end].removesuffix("'s").removesuffix("’s")


@dataclass(frozen=True)
class PlantedEdit:
    claim: str
    kind: str
    original: str
    replacement: str


@dataclass(frozen=True)
class _Fact:
    first: int
    last: int
    """Word indices (inclusive)."""
    text: str


class _Editor:
    """Plants one edit in a claim; name replacements come from the set's other claims."""

    def __init__(self, examples: Sequence[LabelledExample], in_context: bool) -> None:
        self._in_context = in_context
        self._ordinary = _ordinary_words(examples)
        self._pool: list[str] = []
        for example in examples:
            words = _words(example.claim)
            runs = _name_runs(words, self._ordinary)
            self._pool += [_run_text(example.claim, words, run) for run in runs]

    def edit(self, example: LabelledExample) -> PlantedEdit | None:
        rng = random.Random(hashlib.sha1(example.example_id.encode()).hexdigest())
        words = _words(example.claim)
        sentences = [
            {w.text.lower() for w in _words(text[start:end])}
            for text in example.references
            for start, end in sentence_spans(text)
        ]
        options = {
            kind: [
                fact
                for fact in _facts(kind, example.claim, words, self._ordinary)
                if self._stated(fact, words, sentences)
            ]
            for kind in KINDS
        }
        kinds = [kind for kind in KINDS if options[kind]]
        if not kinds:
            return None
        kind = rng.choice(kinds)
        fact = rng.choice(options[kind])
        replacement = self._replacement(kind, fact.text, example, rng)
        if replacement is None or replacement.lower() == fact.text.lower():
            return None
        start = words[fact.first].start
        claim = example.claim[:start] + replacement + example.claim[start + len(fact.text) :]
        return PlantedEdit(claim, kind, fact.text, replacement)

    def _stated(self, fact: _Fact, words: list[_Word], sentences: list[set[str]]) -> bool:
        """A reference sentence holds the fact; with `in_context`, also at least half (and at
        least two) of the claim's content words within `CONTEXT_WORDS` words of it: the
        reference states it about the same subject and relation."""
        needed = {part.lower() for part in fact.text.split()}
        around = words[max(0, fact.first - CONTEXT_WORDS) : fact.first]
        around += words[fact.last + 1 : fact.last + 1 + CONTEXT_WORDS]
        context = {w.text.lower() for w in around} - STOPWORDS - needed
        for sentence in sentences:
            if not needed <= sentence:
                continue
            shared = len(context & sentence)
            if not self._in_context or (shared >= 2 and 2 * shared >= len(context)):
                return True
        return False

    def _replacement(
        self, kind: str, original: str, example: LabelledExample, rng: random.Random
    ) -> str | None:
        if kind == "date":
            for names in (MONTHS, WEEKDAYS):
                if original in names:
                    return rng.choice([name for name in names if name != original])
            return str(int(original) + rng.choice([-1, 1]) * rng.randint(2, 30))
        if kind == "figure":
            if original.lower() in NUMBER_WORDS:
                word = rng.choice([w for w in NUMBER_WORDS if w != original.lower()])
                return word.capitalize() if original[0].isupper() else word
            value = _number(original)
            assert value is not None
            factor = rng.uniform(0.4, 0.75) if rng.random() < 0.5 else rng.uniform(1.35, 2.5)
            return _format_like(value * factor, original)
        return self._other_name(original, example, rng)

    def _other_name(
        self, original: str, example: LabelledExample, rng: random.Random
    ) -> str | None:
        in_claim = example.claim.lower()
        in_context = [
            _run_text(text, words, run)
            for text in example.references
            for words in [_words(text)]
            for run in _name_runs(words, self._ordinary)
        ]
        for pool in (in_context, self._pool) if rng.random() < 0.5 else (self._pool,):
            choices = [
                name
                for name in pool
                if name.lower() not in in_claim
                and not set(name.lower().split()) & set(original.lower().split())
            ]
            if choices:
                return rng.choice(choices)
        return None


def _facts(kind: str, claim: str, words: list[_Word], ordinary: AbstractSet[str]) -> list[_Fact]:
    """The claim's figures, dates or names."""
    if kind == "name":
        runs = _name_runs(words, ordinary)
        return [_Fact(a, b - 1, _run_text(claim, words, (a, b))) for a, b in runs]
    found = []
    for index, word in enumerate(words):
        is_date = _is_year(word.text) or word.text in MONTHS or word.text in WEEKDAYS
        is_figure = not is_date and (
            _number(word.text) is not None or word.text.lower() in NUMBER_WORDS
        )
        if (kind == "date" and is_date) or (kind == "figure" and is_figure):
            found.append(_Fact(index, index, word.text))
    return found


def _pair_member(
    source: LabelledExample, prefix: str, role: str, claim: str, source_label: str
) -> LabelledExample:
    """The edited claim (Contradiction) or the control (Entailment) of a pair."""
    example_id = f"{source.example_id}/{role}"
    control = role == "control"
    return LabelledExample(
        dataset=f"{prefix}{source.dataset}",
        example_id=example_id,
        group=source.group,
        claim=claim,
        references=source.references,
        label=Label.ENTAILMENT if control else Label.CONTRADICTION,
        supported=control,
        response_id=example_id,
        source_label=source_label,
    )


def planted_examples(
    examples: Sequence[LabelledExample], in_context: bool = True
) -> list[LabelledExample]:
    """For every supported claim that states an editable fact: the edited claim (Contradiction)
    and its unchanged control (Entailment), edits first in each pair. `in_context`: only facts
    a reference sentence states with the claim's words around them (see `_Editor._stated`)."""
    editor = _Editor([e for e in examples if e.supported], in_context)
    pairs: list[LabelledExample] = []
    for example in examples:
        if not example.supported or example.label not in (None, Label.ENTAILMENT):
            continue
        edit = editor.edit(example)
        if edit is None:
            continue
        prefix = PREFIX if in_context else ANY_PREFIX
        change = f"planted {edit.kind}: {edit.original} -> {edit.replacement}"
        pairs += [
            _pair_member(example, prefix, f"planted-{edit.kind}", edit.claim, change),
            _pair_member(example, prefix, "control", example.claim, "control"),
        ]
    return pairs
