"""A short answer is checked as the statement its question makes of it."""

from __future__ import annotations

import pytest

from refcheck_callbacks.text.questions import claim_from_question, is_short_answer


@pytest.mark.parametrize(
    ("question", "answer", "claim"),
    [
        ("What is the capital of India?", "Delhi", "Delhi is the capital of India"),
        (
            "Which magazine was started first, Arthur's Magazine or First for Women?",
            "Arthur's Magazine",
            "Arthur's Magazine was started first",
        ),
        (
            "What nationality was James Henry Miller's wife?",
            "American",
            "James Henry Miller's wife was American",
        ),
        ("Who wrote Hamlet?", "Shakespeare", "Shakespeare wrote Hamlet"),
        ("When was the tower built?", "1889", "the tower built in 1889"),
        ("Where was Obama born?", "in Hawaii", "Obama born in Hawaii"),
        ("How many moons does Mars have?", "2", "Mars have 2 moons"),
        ("How many people live in Paris?", "2.1 million", "2.1 million people live in Paris"),
        ("How tall is the Eiffel Tower?", "330 metres", "the Eiffel Tower is 330 metres tall"),
        ("What city is the Eiffel Tower in?", "Paris", "the Eiffel Tower is in Paris"),
        (
            "The Oberoi family is part of a hotel company that has a head office in what city?",
            "Delhi",
            "The Oberoi family is part of a hotel company that has a head office in Delhi",
        ),
        (
            "Which tennis player won more Grand Slam titles, Henri Leconte or Jonathan Stark?",
            "Jonathan Stark",
            "Jonathan Stark won more Grand Slam titles",
        ),
        ("Is Paris in France?", "Yes.", "Paris in France"),
        ("Is Paris in France?", "no", "not Paris in France"),
        ("Name the largest planet.", "Jupiter", "Name the largest planet: Jupiter"),
        ("How many moons does Mars have?", "two", "Mars have two moons"),
        ("Which country is London in?", "Great Britain", "London is in Great Britain"),
        ("How did the war end?", "with a treaty", "the war end with a treaty"),
    ],
)
def test_the_question_turned_into_a_statement_holds_the_answer(
    question: str, answer: str, claim: str
) -> None:
    assert is_short_answer(answer, question)
    assert claim_from_question(question, answer) == claim


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        ("Delhi is the capital of India.", "What is the capital of India?"),  # a sentence
        ("Cats eat mice", "What do cats eat?"),  # restates the question: a claim itself
        ("Delhi", None),  # no question to build from
        ("", "What is the capital of India?"),
        ("one two three four five six seven eight nine", "What are the numbers?"),
        # replies about the conversation state nothing of the world
        ("Happy to help!", "How tall is the Eiffel Tower?"),
        ("Sure, happy to help.", "What is the capital of India?"),
        ("Thanks for asking!", "Who wrote Hamlet?"),
        ("Let me check that for you", "Where was Obama born?"),
        ("Anytime!", "What city is the Eiffel Tower in?"),
        # an amount is asked for and none is given
        ("Paris", "How tall is the Eiffel Tower?"),
        ("Mars", "How many moons does Mars have?"),
    ],
)
def test_sentences_and_answers_without_a_question_are_left_alone(
    answer: str, question: str | None
) -> None:
    assert not is_short_answer(answer, question)
