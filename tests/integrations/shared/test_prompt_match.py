"""Finding documents in a prompt: long texts are normalised a slice at a time (so the worker
never holds the GIL for long in one call) with the same result as in one call, and a probe
reads only as much of its document's start as it needs."""

from __future__ import annotations

import random

from refcheck_callbacks.integrations.shared import prompt_match
from refcheck_callbacks.integrations.shared.prompt_match import PROBE_CHARS, SLICE_CHARS

WHITESPACE = [" ", "\n", "\t", "   ", "\u00a0", "\u2003", "\x1c", "\r\n"]


def _text(rng: random.Random, size: int) -> str:
    pieces = ["word", "a", "Eiffel", "330", *WHITESPACE]
    text = "".join(rng.choice(pieces) for _ in range(size // 3))
    return text[:size]


def test_slices_normalise_as_one_call_does() -> None:
    rng = random.Random(26)
    for size in (10, SLICE_CHARS - 1, SLICE_CHARS + 1, 3 * SLICE_CHARS + 7):
        for _ in range(5):
            text = _text(rng, size)
            assert prompt_match.normalize(text) == " ".join(text.split())
    no_space = "x" * (2 * SLICE_CHARS) + " tail"
    assert prompt_match.normalize(no_space) == no_space
    spaced = " " * (2 * SLICE_CHARS) + "word" + "\n" * SLICE_CHARS
    assert prompt_match.normalize(spaced) == "word"


def test_a_probe_is_the_start_of_the_whole_normalised_document() -> None:
    rng = random.Random(7)
    for size in (8, 200, 5_000, 2 * SLICE_CHARS):
        text = _text(rng, size)
        whole = " ".join(text.split())[:PROBE_CHARS]
        assert prompt_match.probe(text) == (whole if len(whole) >= 12 else None)
    late = " \n" * 50_000 + "The Eiffel Tower is 330 metres tall."
    assert prompt_match.probe(late) == "The Eiffel Tower is 330 metres tall."
    assert prompt_match.in_prompt(late, "Context: The Eiffel Tower is 330 metres tall. Q?")
