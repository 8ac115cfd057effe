"""Documents that overlap, decided by the share of a document's text found in another: a child
chunk inside its parent is the same evidence, two chunks that share a sentence are not; how
much of a document a prompt shows. Linear in the texts, whatever they hold (they are the
app's, untrusted)."""

from __future__ import annotations

import json
import random

from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter
from linear_time import assert_linear_time
from long_documents import EIFFEL_PARENT, EVEREST_PARENT, PYTHON_PARENT

from refcheck_callbacks.integrations.shared import overlap
from refcheck_callbacks.integrations.shared.prompt_match import Prompt


def test_children_lie_inside_their_parent_and_the_parent_in_none() -> None:
    children = RecursiveCharacterTextSplitter(chunk_size=250, chunk_overlap=20).split_text(
        EIFFEL_PARENT
    )
    texts = [*children, EIFFEL_PARENT, EVEREST_PARENT]
    parent = len(children)
    assert overlap.contained(texts) == [parent] * len(children) + [None, None]


def test_a_document_inside_another_however_either_was_printed() -> None:
    """The canonical words are compared: a `repr` of the parent, a JSON copy, collapsed
    whitespace hold the child as the plain parent does."""
    child = EIFFEL_PARENT[200:500]
    for container in (
        repr(Document(page_content=EIFFEL_PARENT)),
        json.dumps({"context": EIFFEL_PARENT}),
        " ".join(EIFFEL_PARENT.split()),
    ):
        assert overlap.contained([child, container]) == [1, None]


def test_sharing_a_few_words_or_a_sentence_is_not_containment() -> None:
    """Two chunks that share their overlapping sentence, and a document that quotes one
    sentence of another, are each mostly their own text."""
    first, second = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=120).split_text(
        EIFFEL_PARENT
    )[:2]
    quote = f"A guide says: {EIFFEL_PARENT[:90]} Its lifts run every ten minutes in summer."
    assert overlap.contained([first, second]) == [None, None]
    assert overlap.contained([quote, EIFFEL_PARENT]) == [None, None]


def test_of_near_copies_the_first_stays() -> None:
    tidied = EIFFEL_PARENT.replace("The tower is 330 metres tall", "The tower is 330 m tall")
    assert overlap.contained([EIFFEL_PARENT, tidied]) == [None, 0]
    assert overlap.contained([tidied, EIFFEL_PARENT]) == [None, 0]


def test_a_text_too_short_for_shingles_is_never_contained() -> None:
    assert overlap.contained(["Paris, France", EIFFEL_PARENT]) == [None, None]
    assert overlap.shares(["Paris, France"], Prompt(EIFFEL_PARENT).canonical) == [None]


def test_distinct_leaves_out_the_contained_and_counts_them() -> None:
    references = [{"text": EIFFEL_PARENT[:300]}, {"text": EIFFEL_PARENT}, {"text": None}]
    kept, left_out = overlap.distinct(references)
    assert kept == references[1:]
    assert left_out == 1
    assert overlap.left_out(left_out) == {overlap.LEFT_OUT_KEY: {overlap.CONTAINED: 1}}
    assert overlap.left_out(0) == {}


def test_the_share_of_a_document_a_prompt_shows() -> None:
    half = len(EVEREST_PARENT) // 2
    prompt = Prompt(f"Context:\n{EIFFEL_PARENT}\n{EVEREST_PARENT[:half]}\nQuestion: how tall?")
    eiffel, everest, python = overlap.shares(
        [EIFFEL_PARENT, EVEREST_PARENT, PYTHON_PARENT], prompt.canonical
    )
    assert eiffel == 1.0
    assert everest is not None and 0.4 < everest < 0.6
    assert python == 0.0


def test_a_prompt_longer_than_a_slice_is_read_whole() -> None:
    """The prompt is shingled a slice at a time: a document across a slice's end is found."""
    filler = " ".join(f"w{i}" for i in range(40_000))
    prompt = Prompt(f"{filler} {EIFFEL_PARENT} {filler}")
    assert overlap.shares([EIFFEL_PARENT], prompt.canonical) == [1.0]


def test_overlap_stays_linear_on_hostile_texts() -> None:
    """Every text the same few words (every shingle owned by every text), and texts of
    distinct random words: the time grows with the text, not its square."""
    rng = random.Random(7)
    words = [f"w{rng.randrange(10**6)}" for _ in range(20_000)]

    def same_words(text: str) -> None:
        overlap.contained([text] * 20)

    def distinct_words(text: str) -> None:
        overlap.contained([text, text[: len(text) // 2], " ".join(words)])
        overlap.shares([text, " ".join(words)], Prompt(text).canonical)

    assert_linear_time(same_words, "tower arch " * 40_000)
    assert_linear_time(distinct_words, " ".join(reversed(words)) * 4)
