"""Citation markers and markdown are formatting: blanked for splitting, cut from claim text,
with every offset kept."""

from __future__ import annotations

import pytest

from refcheck_callbacks.text.markup import markup


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("Paris is the capital [1].", "Paris is the capital."),
        ("Paris is the capital [1][2].", "Paris is the capital."),
        ("Paris is the capital [1, 3].", "Paris is the capital."),
        ("Paris is the capital.[^3]", "Paris is the capital."),
        ("Paris is the capital【4】.", "Paris is the capital."),
        ("Paris is the capital【4†source】.", "Paris is the capital."),
        ("Paris is the capital (Source: doc-2).", "Paris is the capital."),
        ("Paris is the capital [doc1].", "Paris is the capital."),
        ("Paris is the capital.¹²", "Paris is the capital."),
        ("Paris¹ is the capital.", "Paris is the capital."),
    ],
)
def test_citation_markers_are_cut_from_the_claim(text: str, clean: str) -> None:
    prepared = markup(text)
    assert prepared.clean() == clean
    assert len(prepared.plain) == len(text)


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("**Paris** is the *capital* of __France__.", "Paris is the capital of France."),
        ("~~Lyon~~ Paris is the capital.", "Lyon Paris is the capital."),
        ("See [the city](https://paris.fr) for more.", "See the city for more."),
        ("Run `pip install x` first.", "Run pip install x first."),
        ("The <b>tower</b> is tall.", "The tower is tall."),
    ],
)
def test_inline_markdown_is_cut_and_its_words_kept(text: str, clean: str) -> None:
    assert markup(text).clean() == clean


@pytest.mark.parametrize(
    "text",
    [
        "Water covers 71% of the surface.",
        "The area is 5 km² and E = mc².",  # exponents, not citations
        "Use snake_case names and 5 * 3 = 15.",  # no emphasis
        "The compound is [EMIM][TfO], an ionic liquid.",  # chemistry, not a link
    ],
)
def test_text_without_formatting_is_unchanged(text: str) -> None:
    prepared = markup(text)
    assert prepared.plain == text
    assert prepared.clean() == text


def test_bullets_and_headings_bound_sentences_and_code_states_nothing() -> None:
    text = (
        "# Facts about Paris\n"
        "- It is the capital\n"
        "- It has 2.1 million residents\n"
        "```python\nprint('Lyon is the capital')\n```\n"
        "1. The Seine flows through it"
    )
    prepared = markup(text)
    assert len(prepared.plain) == len(text)
    assert "Facts" not in prepared.plain and "Lyon" not in prepared.plain
    assert "\n\n It is the capital\n\n It has" in prepared.plain
    assert "The Seine flows through it" in prepared.plain
    start = text.index("It has")
    assert prepared.clean(start, start + len("It has 2.1 million residents")) == (
        "It has 2.1 million residents"
    )


def test_table_rows_are_statements_of_their_own() -> None:
    prepared = markup("| city | people |\n|---|---|\n| Paris | 2.1 million |")
    assert "---" not in prepared.plain and "|" not in prepared.plain
    assert prepared.clean() == "city people Paris 2.1 million"
