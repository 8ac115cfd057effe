"""Which documents reached a model's prompt: their text, found in the prompt's text.

RefChecker's Noisy Context setting defines the references as the passages in the prompt. An
app may retrieve more than it shows the model (a compression filter, a reranker, a grader
drops some), or show documents no retriever callback reported (a vector store called
directly). Matching each candidate's text against the prompt tells them apart whatever the
app's shape. Whitespace is normalised on both sides; a long document matches on its first
`PROBE_CHARS` characters, so a prompt that truncates documents still shows them.

Linear in the prompt and the candidates (`str.__contains__` with a bounded needle; a probe
reads only the start of its document), and run in the monitor's worker, never on the app's
thread. Long texts are normalised a slice at a time, so that the worker, sharing the app's
GIL in the thread placement, never holds it for long in one call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PROBE_CHARS = 160
"""Characters of a document's normalised text that must appear in the prompt."""
MIN_PROBE_CHARS = 12
"""Shorter documents match only as a whole word sequence of this length or more: "Yes" is
in every prompt."""
SLICE_CHARS = 1 << 16
"""Characters normalised in one call (a slice ends at whitespace)."""
_WHITESPACE = re.compile(r"\s")
"""What `str.split()` splits on (both use Python's Unicode whitespace)."""


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, none at the ends."""
    if len(text) <= SLICE_CHARS:
        return " ".join(text.split())
    words = []
    start = 0
    while start < len(text):
        end = start + SLICE_CHARS
        if end < len(text):
            space = _WHITESPACE.search(text, end)
            end = len(text) if space is None else space.start()
        if piece := " ".join(text[start:end].split()):
            words.append(piece)
        start = end
    return " ".join(words)


def probe(text: str) -> str | None:
    """The part of a document's text to look for; None when too short to tell anything.
    Normalises only as much of the start as the probe needs (a prefix's normalised text is a
    prefix of the whole one's)."""
    window = 4 * PROBE_CHARS
    head = normalize(text[:window])
    while len(head) < PROBE_CHARS and window < len(text):
        window *= 4
        head = normalize(text[:window])
    needle = head[:PROBE_CHARS]
    return needle if len(needle) >= MIN_PROBE_CHARS else None


def in_prompt(text: str, prompt: str) -> bool:
    """Whether `text` (a document) appears in `prompt` (already normalised)."""
    needle = probe(text)
    return needle is not None and needle in prompt


def any_in_prompt(texts: Iterable[str], prompt: str) -> bool:
    return any(in_prompt(text, prompt) for text in texts)
