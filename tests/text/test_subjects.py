"""A sentence led by a pronoun takes the subject of the sentence before it."""

from __future__ import annotations

import pytest

from refcheck_callbacks.text.subjects import leading_pronoun, subject, with_subject


@pytest.mark.parametrize(
    ("sentence", "found"),
    [
        ("Saturn is known for its rings.", "Saturn"),
        ("The Eiffel Tower was finished in 1889.", "The Eiffel Tower"),
        ("Marie Curie won two Nobel Prizes.", "Marie Curie"),
        ("In 2018, the film was selected for preservation.", "the film"),
        ("The tower stands 330 metres tall.", "The tower"),
        ("It is the largest planet.", None),  # a pronoun is no subject to give
        ("Cats eat mice.", None),  # no verb found: better no subject than a wrong one
        ("Paris, the capital, is large.", None),
    ],
)
def test_the_subject_runs_to_the_verb(sentence: str, found: str | None) -> None:
    assert subject(sentence) == found


@pytest.mark.parametrize(
    ("sentence", "pronoun"),
    [
        ("It is the largest planet.", "It"),
        ("They were built in 1889.", "They"),
        ("She won two prizes.", "She"),
        ("This is the tallest tower.", "This"),
        ("These are the oldest rings.", "These"),
        ("This tower is tall.", None),  # a determiner, not a pronoun
        ("It is important to note that rings are ice.", None),
        ("It seems that the rings are young.", None),
        ("Its rings are ice.", None),
    ],
)
def test_a_leading_pronoun_is_found_unless_it_stands_for_nothing(
    sentence: str, pronoun: str | None
) -> None:
    span = leading_pronoun(sentence)
    assert (None if span is None else sentence[span[0] : span[1]]) == pronoun


def test_the_pronoun_is_replaced_by_the_subject() -> None:
    sentence = "It is the largest planet."
    span = leading_pronoun(sentence)
    assert span is not None
    assert with_subject(sentence, span, "Saturn") == "Saturn is the largest planet."
    assert with_subject(sentence, span, "the film") == "The film is the largest planet."
