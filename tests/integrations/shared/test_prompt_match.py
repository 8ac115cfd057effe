"""Finding documents in a prompt by their content, however the app printed them: plain, `str`
or `repr` of a `Document` or of a list of them, JSON, numbered, behind "Source:" prefixes,
truncated, whitespace collapsed; by anchors spread across the document where its start was
changed. Long texts are made canonical a slice at a time with the same result as in one call,
a probe reads only as much of its document's start as it needs, and the time stays linear."""

from __future__ import annotations

import json
import random
import time

import pytest
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from refcheck_callbacks.integrations.shared import prompt_match
from refcheck_callbacks.integrations.shared.prompt_match import PROBE_CHARS, SLICE_CHARS, Prompt

WHITESPACE = [" ", "\n", "\t", "   ", "\u00a0", "\u2003", "\x1c", "\r\n"]

# Line breaks early, quotes of both kinds, a backslash, non-ASCII letters, an astral letter,
# a non-printable character: what the printings below escape.
TOUR = Document(
    id="tour",
    metadata={"source": "guide.md", "page": 3},
    page_content=(
        'Eiffel Tower\nHeight: 330 m\n\nThe tower\'s "iron lady" nickname dates from 1889; '
        "Gustave Eiffel's company built it on the Champ de Mars, côté Seine.\n"
        "Its path C:\\tower\\new is an old joke among engineers \U0001d400 of the café.\x0c"
        "\nVisitors climb 674 steps to the second floor, or take one of the lifts."
    ),
)
OTHER = Document(
    id="other",
    page_content="Mount Everest is 8,849 metres high, on the border of Nepal and China.",
)


def printings(documents: list[Document]) -> dict[str, str]:
    """The ways the tutorials and apps print documents into a prompt."""
    contents = [d.page_content for d in documents]
    return {
        "plain": "\n\n".join(contents),
        "str list": str(documents),
        "repr document": "\n".join(repr(d) for d in documents),
        "str document": "\n".join(str(d) for d in documents),
        "f-string dict": f"{ {'context': documents} }",
        "json": json.dumps([d.model_dump() for d in documents]),
        "json unicode": json.dumps(contents, ensure_ascii=False),
        "json of repr": json.dumps({"context": repr(documents)}),
        "numbered": "\n".join(f"[{i}] {c}" for i, c in enumerate(contents, 1)),
        "sources": "\n\n".join(
            f"Source: {d.metadata}\nContent: {d.page_content}" for d in documents
        ),
        "collapsed": " ".join(" ".join(contents).split()),
        "truncated": "\n".join(f"{c[: PROBE_CHARS + 20]}..." for c in contents),
        "markdown": "\n".join(f"- **{c}**" for c in contents),
    }


@pytest.mark.parametrize("printing", sorted(printings([TOUR])))
def test_a_document_is_found_however_it_was_printed(printing: str) -> None:
    text = printings([OTHER, TOUR])[printing]
    prompt = Prompt(f"Answer from this context only:\n{text}\n\nQuestion: how tall is it?")
    assert prompt.shows(TOUR.page_content)
    assert prompt.shows(OTHER.page_content)
    left_out = Prompt(f"Context:\n{printings([OTHER])[printing]}\nQuestion: how tall is it?")
    assert not left_out.shows(TOUR.page_content)


def test_a_document_whose_start_the_app_changed_is_found_by_its_anchors() -> None:
    rng = random.Random(29)
    words = ["tower", "iron", "Paris", "lift", "steps", "1889", "Eiffel", "river", "arch"]
    body = " ".join(rng.choice(words) + str(rng.randrange(100)) for _ in range(300))
    redacted = "[REDACTED] " + body[200:]  # its first sentences replaced
    assert len(prompt_match.anchors(body)) == prompt_match.ANCHORS
    assert Prompt(f"Context: {redacted}").shows(body)
    # A prompt holding only the document's last quarter shows too little of it.
    assert not Prompt(f"Context: {body[3 * len(body) // 4 :]}").shows(body)


def test_short_or_absent_text_never_matches() -> None:
    prompt = Prompt("Yes. Answer from this context: the Eiffel Tower is 330 metres tall.")
    assert not prompt.shows("Yes")  # too short to tell anything
    assert not prompt.shows("The Eiffel Tower is 300 metres tall.")
    assert not prompt.shows("Eiffel Tower is 330 metres tal")  # whole words only
    assert not Prompt("").shows(TOUR.page_content)
    assert not Prompt(" \n\t") and Prompt("a prompt")


def test_public_helpers_take_a_prompt_or_its_text() -> None:
    text = f"Context: {TOUR!r}"
    assert prompt_match.in_prompt(TOUR.page_content, text)
    assert prompt_match.in_prompt(TOUR.page_content, Prompt(text))
    assert prompt_match.any_in_prompt(["absent text of some length", TOUR.page_content], text)
    assert not prompt_match.any_in_prompt([OTHER.page_content], Prompt(text))


def _text(rng: random.Random, size: int) -> str:
    pieces = ["word", "a", "Eiffel", "330", "\\n", "'", "é", *WHITESPACE]
    text = "".join(rng.choice(pieces) for _ in range(size // 3))
    return text[:size]


def test_slices_read_as_one_call_does() -> None:
    rng = random.Random(26)
    for size in (10, SLICE_CHARS - 1, SLICE_CHARS + 1, 3 * SLICE_CHARS + 7):
        for _ in range(5):
            text = _text(rng, size)
            assert prompt_match.normalize(text) == " ".join(text.split())
            assert prompt_match.canonical(text) == prompt_match._canonical_piece(text)
    no_space = "x" * (2 * SLICE_CHARS) + " tail"
    assert prompt_match.normalize(no_space) == no_space
    spaced = " " * (2 * SLICE_CHARS) + "word" + "\n" * SLICE_CHARS
    assert prompt_match.normalize(spaced) == "word"
    assert prompt_match.canonical(spaced) == "word"


def test_a_probe_is_the_start_of_the_whole_canonical_document() -> None:
    rng = random.Random(7)
    for size in (8, 200, 5_000, 2 * SLICE_CHARS):
        text = _text(rng, size)
        whole = prompt_match.canonical(text)
        expected = (
            whole[: PROBE_CHARS + 1].rpartition(" ")[0] if len(whole) > PROBE_CHARS else whole
        )
        assert prompt_match.probe(text) == (expected if len(expected) >= 12 else None)
    late = " \n" * 50_000 + "The Eiffel Tower is 330 metres tall."
    assert prompt_match.probe(late) == "The Eiffel Tower is 330 metres tall"
    assert prompt_match.in_prompt(late, "Context: The Eiffel Tower is 330 metres tall. Q?")


def _seconds(run: object) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def test_matching_a_worst_case_prompt_stays_linear() -> None:
    """A prompt of one repeated word with escapes, and a document that is that word but for
    one word in 80 (every needle almost matches everywhere), at 1x and 8x the size: the time
    grows with the size, not its square (ratio against the same work at 1x)."""
    document = ("tower " * 79 + "arch ") * 20

    def work(size: int) -> None:
        prompt = Prompt(("tower " * 9 + "\\n\\u00e9\\\\' ") * size)
        for _ in range(20):
            prompt.shows(document)

    small, large = _seconds(lambda: work(2_000)), _seconds(lambda: work(16_000))
    assert large / small < 8 * 3


def test_a_chunk_whose_start_is_the_shown_chunks_overlapping_end_is_not_shown() -> None:
    """The tutorials split with `chunk_overlap=200`: the next chunk begins with this one's end.
    Only the chunk shown in full counts; a chunk cut short with nothing to explain it still
    counts (the app truncated it)."""
    rng = random.Random(31)
    words = ["agent", "memory", "planning", "tool", "reflection", "task", "step", "model"]
    sentences = [
        " ".join(rng.choice(words) + str(rng.randrange(50)) for _ in range(12)) + "."
        for _ in range(40)
    ]
    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    first, second = splitter.split_text(" ".join(sentences))[:2]
    assert f" {prompt_match.probe(second)} " in f" {prompt_match.canonical(first)} "  # overlap
    prompt = Prompt(f"Context: {[Document(page_content=first)]}\nQuestion: what is planning?")
    assert prompt.extent(first) == prompt_match.IN_FULL
    assert prompt.extent(second) == prompt_match.IN_PART
    assert prompt.shown([first, second]) == [True, False]
    both = Prompt(f"Context: {[Document(page_content=first), Document(page_content=second)]}")
    assert both.shown([first, second]) == [True, True]
    cut = Prompt(f"Context: {second[:300]}...")
    assert cut.shown([first, second]) == [False, True]
