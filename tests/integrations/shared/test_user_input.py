"""The user's text among a run's named input fields, and the answer's among its output's: by
the one text, a conventional key, a query-like name, or the value the first retrieval was
given; never a field named as a secret or a setting."""

from __future__ import annotations

import pytest

from refcheck_callbacks.integrations.shared.user_input import answer_field, name_words, text_field

QUESTION = "How tall is the Eiffel Tower?"


def test_field_names_are_read_as_words() -> None:
    assert name_words("query_str") == {"query", "str"}
    assert name_words("userQuestionText") == {"user", "question", "text"}
    assert name_words("tavily_ai_apikey") == {"tavily", "ai", "apikey"}
    assert name_words("HTTPQuery2") == {"http", "query", "2"}


@pytest.mark.parametrize(
    "fields",
    [
        {"query_str": QUESTION, "tavily_ai_apikey": "tvly-0123456789"},
        {"userQuestion": QUESTION, "language": "English"},
        {"question": QUESTION, "context": "The Eiffel Tower is 330 metres tall."},
        {"input_text": QUESTION, "session": "s-1", "index": object()},
        {"prompt": QUESTION, "prompt_template": "Answer: {prompt}"},
    ],
)
def test_of_several_text_fields_the_query_like_one_is_the_question(fields: dict) -> None:
    assert text_field(fields) == QUESTION


def test_a_secret_or_a_setting_is_never_the_question() -> None:
    assert text_field({"api_key": "sk-0123456789", "index": object()}) is None
    assert text_field({"openai_api_key": "sk-0123", "system_prompt": "Be brief."}) is None
    assert text_field({"auth_token": "t", "topic": QUESTION}) == QUESTION


def test_without_a_name_to_go_by_the_first_retrieval_decides() -> None:
    fields = {"topic": QUESTION, "audience": "engineers"}
    assert text_field(fields) is None
    assert text_field(fields, reached=QUESTION) == QUESTION
    assert text_field(fields, reached="a rewritten query") is None


def test_the_answer_field_leaves_the_question_out() -> None:
    state = {"question": QUESTION, "context": [], "answer": "It is 330 metres tall."}
    assert answer_field(state, QUESTION) == "answer"
    assert answer_field({"summary": "It is tall.", "question": QUESTION}, QUESTION) == "summary"
    assert answer_field({"binary_score": "yes"}) is None
