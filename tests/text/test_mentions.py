"""Figures, dates and names read with what makes them comparable; linear on hostile text."""

from __future__ import annotations

import time

import pytest

from refcheck_callbacks.text.agreement import names_agree, values_agree
from refcheck_callbacks.text.mentions import Mention, mentions
from refcheck_callbacks.text.tokens import tokenize


def _only(text: str, kind: str | None = None) -> Mention:
    found = [m for m in mentions(tokenize(text)) if kind is None or m.kind == kind]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("The tower is 450 metres tall.", "The tower is 330 metres tall.", False),
        ("It is 330 metres tall.", "It is 1,083 feet tall.", True),  # a conversion
        ("It is 1,500 feet tall.", "It is 330 metres tall.", False),
        ("It is 330 m tall.", "It is 0.33 km tall.", True),
        ("They raised 1.5 million dollars.", "They raised $1,487,000.", True),  # rounding
        ("It is about 330 metres tall.", "It is 324 metres tall.", True),
        ("It is 330 metres tall.", "It is 324 metres tall.", False),
        ("More than 300 people came.", "330 people came.", True),
        ("More than 400 people came.", "330 people came.", False),
        ("Fewer than 400 people came.", "330 people came.", True),
        ("Turnout was 45 per cent.", "Turnout was 45%.", True),
        ("Profit was $8.2m.", "Profit was 8.2 million dollars.", True),
        ("It lies 5-10 km away.", "It lies 7 kilometres away.", True),
        ("It was built from 1887 to 1889.", "It was built in 1888.", True),
        ("It was built from 1887 to 1889.", "It was built in 1850.", False),
        ("It peaked in the 1990s.", "It peaked in 1995.", True),
        ("It came 3rd in the race.", "It came third in the race.", True),
        ("Venus is the second planet.", "Venus is the seventh planet.", False),
        ("It has five large moons.", "It has 27 large moons.", False),
        ("It opened in March.", "It opened in May.", False),
        ("It opened on Tuesday.", "It opened on Wednesday.", False),
    ],
)
def test_figures_and_dates_compare_by_value_unit_range_and_hedge(
    a: str, b: str, agree: bool
) -> None:
    first = [m for m in mentions(tokenize(a)) if m.kind != "name"]
    second = [m for m in mentions(tokenize(b)) if m.kind != "name"]
    assert len(first) == 1 and len(second) == 1, (first, second)
    assert values_agree(first[0], second[0]) is agree


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("It costs 5 dollars.", "It costs 5 euros."),  # two currencies
        ("It is 5 metres long.", "It weighs 5 kilograms."),  # two dimensions
        ("It is 5 metres long.", "It is 5 long."),  # a unit and none
        ("It spans 190 countries.", "It spans 200 territories."),  # counts of other things
    ],
)
def test_figures_that_cannot_be_compared_are_neither_equal_nor_different(a: str, b: str) -> None:
    assert values_agree(_only(a), _only(b)) is None


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("He met Barack Obama there.", "He met Obama there.", True),
        ("He met President Obama there.", "He met Barack Obama there.", True),
        ("It is in the US now.", "It is in the United States now.", True),
        ("It is a German wine.", "It is a wine from Germany.", True),
        ("It was won by Cas today.", "It was won by Castleford today.", True),
        ("He cited the NY Penal Law today.", "He cited the New York Penal Law today.", True),
        ("He met Scott Johnson there.", "He met Steve Johnson there.", False),
        ("He plays in Prophets of Rage now.", "He plays in Prophets of TV now.", False),
        ("She lives in New York now.", "She lives in New Jersey now.", False),
        ("She lives in Paris now.", "She lives in London now.", False),
        ("He joined the Indo-Pacific fleet.", "He joined the Pacific fleet.", True),
    ],
)
def test_names_agree_on_shared_words_acronyms_and_stems_only(a: str, b: str, agree: bool) -> None:
    assert names_agree(_only(a, "name"), _only(b, "name")) is agree


def test_what_is_not_a_figure_or_a_name() -> None:
    assert mentions(tokenize("COVID-19 spread fast.")) == [
        m for m in mentions(tokenize("COVID-19 spread fast.")) if m.kind == "name"
    ]
    assert mentions(tokenize("Scientists say it is warm.")) == []  # an ordinary first word
    assert [m.words for m in mentions(tokenize("New York is large."))] == [("new", "york")]
    assert mentions(tokenize("One of the towers fell.")) == []
    assert [m.kind for m in mentions(tokenize("It may rain on 5 may."))] == ["number"]
    assert mentions(tokenize("Yes, I'm sure I’ve seen it.")) == []


def test_a_text_in_capitals_has_no_names_but_acronyms_in_a_sentence_stay() -> None:
    assert mentions(tokenize("YES! MAUNA LOA FOR INSTANCE IS THE BIGGEST")) == []
    found = mentions(tokenize("It was launched by NASA and the ESA."))
    assert [m.acronym for m in found] == ["nasa", "esa"]


def test_names_in_a_list_are_marked_as_such() -> None:
    found = mentions(tokenize("They visited India, Korea and Central Asia last year."))
    assert [m.words for m in found] == [("india",), ("korea",), ("central", "asia")]
    assert all(m.listed for m in found)
    assert not _only("They visited India last year.").listed


def test_mention_positions_point_at_their_words() -> None:
    text = "The Eiffel Tower is 450 metres tall."
    tokens = tokenize(text)
    name, height = mentions(tokens)
    assert text[tokens[name.first].start : tokens[name.last].end] == "Eiffel Tower"
    assert text[tokens[height.first].start : tokens[height.last].end] == "450 metres"
    assert height.words == ("tall",)


@pytest.mark.parametrize(
    "unit",
    ["1,", "1.", "1-", "A-", "A.", "Ab ", "1 2 ", "$1m ", "a'", "¹²³ ", "New York ", "and "],
)
def test_reading_is_linear_on_repetitive_hostile_text(unit: str) -> None:
    """Ten times the text takes about ten times as long (a ratio, not a timing goal)."""

    def seconds(repeats: int) -> float:
        text = unit * repeats
        started = time.perf_counter()
        mentions(tokenize(text))
        return time.perf_counter() - started

    # Quadratic work would take 100 times as long; the slack is for a busy shared machine.
    small, large = min(seconds(4_000) for _ in range(5)), min(seconds(40_000) for _ in range(5))
    assert large < 40 * max(small, 1e-4), (small, large)


def test_up_before_a_figure_is_a_change_and_up_to_a_bound() -> None:
    rise = _only("Sales were up 19.4% last year.")
    assert values_agree(rise, _only("Sales were up 12% last year.")) is False
    assert (
        values_agree(_only("Sales rose up to 19.4% last year."), _only("Sales rose 12%.")) is True
    )


@pytest.mark.parametrize(
    ("text", "name", "months"),
    [
        ("Jonny May scored twice for England.", ("jonny", "may"), 0),
        ("The minister, Theresa May, resigned in May 2019.", ("theresa", "may"), 1),
    ],
)
def test_a_months_name_after_a_name_is_a_family_name(
    text: str, name: tuple[str, ...], months: int
) -> None:
    found = mentions(tokenize(text))
    assert found[0].kind == "name" and found[0].words == name
    assert [m.kind for m in found].count("month") == months


def test_a_first_word_before_a_comma_starts_no_name() -> None:
    found = mentions(tokenize("Additionally, Excuse My French was released in 2021."))
    assert all("additionally" not in m.words for m in found)
