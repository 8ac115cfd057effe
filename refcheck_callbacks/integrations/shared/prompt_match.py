"""Which documents reached a model's prompt: their content, found in the prompt however the
app printed it.

RefChecker's Noisy Context setting defines the references as the passages in the prompt. An
app may retrieve more than it shows the model (a compression filter, a reranker, a grader
drops some), or show documents no retriever callback reported (a vector store called
directly). Matching each candidate's content against the prompt tells them apart whatever the
app's shape.

Apps print documents in many ways: the plain text; `str` or `repr` of a `Document` or of a
list of them (the tutorials pass `{"context": docs}` straight into a prompt template), where
line breaks are the two characters `\\n`, quotes are escaped and odd characters are `\\x..` or
`\\u....` escapes; JSON (escaped again, non-ASCII as `\\u....`); numbered, or behind
"Source: ..." prefixes; truncated; with whitespace collapsed. So both sides are compared in a
*canonical* form that none of these printings changes: escape sequences decoded (a run of
backslashes counts as one, so an escape escaped twice reads the same), then only the words
(`\\w+` runs) kept, one space apart. A document is shown when its *head* (its first
`PROBE_CHARS` canonical characters, so a prompt that truncates documents still shows them) is
in the prompt, or when most of its *anchors* are: `ANCHORS` runs of `ANCHOR_WORDS` words
spread across a long document, so that a document whose start the app changed is still
found by what follows.

Linear time: the prompt is made canonical once, a slice at a time (so that the worker, sharing
the app's GIL in the thread placement, never holds it for long in one call), with two
non-backtracking regular expressions; a document is read only around its head and anchors
(not in full, however long), and each of its at most `1 + ANCHORS` needles, each of bounded
length, is looked for with `str.__contains__` (CPython switches to its two-way search on long
texts: linear in the prompt). Runs in the monitor's worker, never on the app's thread.

Public API (framework-free; the LangChain pairing and a trace receiver use it):
`Prompt(text)` reads a prompt once; `Prompt.shown(document_texts)` tells which of the
candidates it shows (a document seen only by its head, inside another shown in full, is that
one's overlapping end, not shown); `Prompt.shows(document_text)` and `Prompt.extent(...)`
ask about one document; `in_prompt(text, prompt)` and `any_in_prompt(texts, prompt)` take a
`Prompt` or a prompt's text; `probe(text)` is a document's head; `canonical(text)` the form
compared; `normalize(text)` collapses whitespace only (for keys and display).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

PROBE_CHARS = 160
"""Canonical characters of a document's start (its head) that show it when in the prompt."""
MIN_PROBE_CHARS = 12
"""A shorter document matches never: "Yes" is in every prompt."""
ANCHORS = 8
"""Anchors spread across a long document (one per `PROBE_CHARS` of its text, at most)."""
ANCHOR_WORDS = 8
"""Words in one anchor: a run this long is rarely shared by chance."""
NOT_SHOWN, IN_PART, IN_FULL = 0, 1, 2
"""How much of a document a prompt shows (`Prompt.extent`)."""
SLICE_CHARS = 1 << 16
"""Characters made canonical (or normalised) in one call (a slice ends at whitespace)."""
_WHITESPACE = re.compile(r"\s")
"""What `str.split()` splits on (both use Python's Unicode whitespace)."""
_NON_WORD = re.compile(r"\W+")
_ESCAPE = re.compile(
    r"\\+(?:"
    r"u([dD][89abAB][0-9a-fA-F]{2})\\+u([dD][c-fC-F][0-9a-fA-F]{2})"  # a surrogate pair
    r"|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})"
    r"|([nrtfvab0])"  # a control character: a word break
    r"|(.))"  # an escaped quote, backslash or other character: itself
)
"""A backslash escape of Python's `repr` or of JSON; a run of backslashes counts as one, so
that text escaped twice (a `repr` inside JSON) decodes as once."""


def _decoded(match: re.Match[str]) -> str:
    high, low, four, eight, two, control, other = match.groups()
    if other is not None:
        return other
    if control is not None:
        return " "
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    code = int(four or eight or two, 16)
    return chr(code) if code <= 0x10FFFF else " "


def _canonical_piece(text: str) -> str:
    if "\\" in text:
        text = _ESCAPE.sub(_decoded, text)
    return _NON_WORD.sub(" ", text).strip()


def _slices(text: str) -> Iterable[str]:
    """`text` in pieces of about `SLICE_CHARS`, each ending at whitespace (never inside a word
    or an escape sequence)."""
    if len(text) <= SLICE_CHARS:
        yield text
        return
    start = 0
    while start < len(text):
        end = start + SLICE_CHARS
        if end < len(text):
            space = _WHITESPACE.search(text, end)
            end = len(text) if space is None else space.start()
        yield text[start:end]
        start = end


def canonical(text: str) -> str:
    """The words of `text` after decoding escapes, one space apart, none at the ends: what no
    common printing of a document changes."""
    return " ".join(piece for piece in map(_canonical_piece, _slices(text)) if piece)


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, none at the ends."""
    return " ".join(piece for piece in (" ".join(s.split()) for s in _slices(text)) if piece)


def _words_at(text: str, start: int, words: int) -> str | None:
    """`words` whole canonical words of `text` from `start` on (a word cut at either end of
    the window read is dropped); None when there are fewer. Reads a window of `text` that
    grows as needed, not all of it."""
    window = 16 * words
    while True:
        end = start + window
        found = _canonical_piece(text[start:end]).split(" ")
        if start > 0:
            del found[:1]  # perhaps the end of a word (or an escape) cut at `start`
        if end < len(text):
            del found[-1:]  # perhaps cut at `end`
        found = [w for w in found if w]
        if len(found) >= words or end >= len(text):
            return " ".join(found[:words]) if len(found) >= words else None
        window *= 4


def probe(text: str) -> str | None:
    """A document's head: its first `PROBE_CHARS` canonical characters, cut back to a whole
    word (all of a shorter document); None when too short to tell anything. Reads only as
    much of the start as it needs."""
    window = 4 * PROBE_CHARS
    while True:
        head = _canonical_piece(text[:window])
        if window < len(text):
            head = head.rpartition(" ")[0]  # the last word may be cut
        if len(head) > PROBE_CHARS or window >= len(text):
            break
        window *= 4
    if len(head) > PROBE_CHARS:
        head = head[: PROBE_CHARS + 1].rpartition(" ")[0] or head[:PROBE_CHARS]
    return head if len(head) >= MIN_PROBE_CHARS else None


def anchors(text: str) -> list[str]:
    """Runs of `ANCHOR_WORDS` canonical words spread evenly across a document longer than
    twice `PROBE_CHARS`, after its head; none for a shorter one."""
    count = min(ANCHORS, len(text) // PROBE_CHARS - 1)
    found = []
    for index in range(1, count + 1):
        anchor = _words_at(text, index * len(text) // (count + 1), ANCHOR_WORDS)
        if anchor is not None and len(anchor) >= MIN_PROBE_CHARS:
            found.append(anchor)
    return found


class Prompt:
    """A prompt read once for matching: its canonical text."""

    __slots__ = ("canonical",)

    def __init__(self, text: str) -> None:
        self.canonical = f" {canonical(text)} "
        """Spaces at both ends, so that a needle with them matches whole words only."""

    def __bool__(self) -> bool:
        """Whether the prompt has any words to look for documents in."""
        return len(self.canonical) > 2

    def has(self, words: str) -> bool:
        return f" {words} " in self.canonical

    def extent(self, text: str) -> int:
        """How much of the document `text` this prompt shows: `IN_FULL` (most of its anchors,
        or all of a document too short for them), `IN_PART` (its head alone: the app cut it
        short, or another document ends with what this one begins with), or `NOT_SHOWN`."""
        head = probe(text)
        if head is None:
            return NOT_SHOWN
        spread = anchors(text)
        if len(spread) >= 2:
            if 2 * sum(map(self.has, spread)) > len(spread):
                return IN_FULL
            return IN_PART if self.has(head) else NOT_SHOWN
        if not self.has(head):
            return NOT_SHOWN
        return IN_FULL if len(head) == len(text) or self.has(canonical(text)) else IN_PART

    def shows(self, text: str) -> bool:
        """Whether the document `text` is in this prompt: its head, or most of its anchors."""
        return self.extent(text) != NOT_SHOWN

    def shown(self, texts: Sequence[str]) -> list[bool]:
        """Which of the documents `texts` this prompt shows. One shown only in part whose head
        lies inside another one shown in full is that one's end, not a document of its own:
        text splitters repeat the end of a chunk at the start of the next (`chunk_overlap`),
        and a grader may keep the one and reject the other."""
        extents = [self.extent(text) for text in texts]
        if IN_PART not in extents or IN_FULL not in extents:
            return [extent != NOT_SHOWN for extent in extents]
        full = [f" {canonical(t)} " for t, e in zip(texts, extents, strict=True) if e == IN_FULL]
        return [
            extent == IN_FULL
            or (extent == IN_PART and not any(f" {probe(text)} " in other for other in full))
            for text, extent in zip(texts, extents, strict=True)
        ]


def _read(prompt: Prompt | str) -> Prompt:
    return prompt if isinstance(prompt, Prompt) else Prompt(prompt)


def in_prompt(text: str, prompt: Prompt | str) -> bool:
    """Whether `text` (a document) is in `prompt` (a `Prompt`, or a prompt's text)."""
    return _read(prompt).shows(text)


def any_in_prompt(texts: Iterable[str], prompt: Prompt | str) -> bool:
    read = _read(prompt)
    return any(read.shows(text) for text in texts)
