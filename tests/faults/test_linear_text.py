"""Untrusted text is parsed in linear time: each parser's worst case at the input limits.

Python's regex engine holds the GIL while it runs, so one quadratic pattern on a hostile
document stops every thread of the host app, and no stage timeout can fire. Every function
that reads references, answers, questions, claims, or an LLM's reply is timed here on the
inputs that made some pattern quadratic (runs of one character, brackets and quotes that
never close, lines that almost match), at the size the monitor accepts: 200,000 reference
characters, 20,000 answer characters, and LLM replies of 200,000 characters (a server is not
bound by `max_tokens`). Each is compared with a linear scan of the same text
(`linear_time`), never with a fixed number of seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from linear_time import assert_linear_time

from refcheck_callbacks import InputLimits
from refcheck_callbacks.bench.datasets import _CITATION
from refcheck_callbacks.check.embedded.features import _clauses
from refcheck_callbacks.check.judge.parse import parse_judgements
from refcheck_callbacks.check.judge.prompt import fold_reply_lines
from refcheck_callbacks.check.relevance.llm_prompt import Asked, _fold, read_grades
from refcheck_callbacks.check.segments import segment_references
from refcheck_callbacks.engine.intake import as_text
from refcheck_callbacks.extract.sentences import sentence_claims
from refcheck_callbacks.extract.triplet_prompt import (
    parse_subsentences,
    parse_triplet_line,
    parse_triplets,
)
from refcheck_callbacks.extract.triplets import locate_claims
from refcheck_callbacks.text import lexical
from refcheck_callbacks.text.markup import markup
from refcheck_callbacks.text.questions import claim_from_question, is_short_answer
from refcheck_callbacks.text.spans import sentence_spans
from refcheck_callbacks.text.subjects import leading_pronoun, subject

pytestmark = pytest.mark.timeout(120)

REFERENCE_CHARS = InputLimits().max_reference_chars
ANSWER_CHARS = InputLimits().max_answer_chars
REPLY_CHARS = 200_000


def repeated(unit: str, size: int, before: str = "", after: str = "x") -> str:
    """`unit` repeated to `size` characters, between `before` and `after`; the default last
    character is one that ends no match, which is where backtracking patterns do their worst."""
    body = unit * (size // len(unit) + 1)
    return before + body[: size - len(before) - len(after)] + after


def _embedded_clauses(text: str) -> Any:
    return _clauses([text])


def _ignore_parse_errors(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def run(text: str) -> Any:
        try:
            return parse(text)
        except ValueError:
            return None

    return run


REFERENCE_UNITS = [".", "!?", "。", "a.\n", "(Dr.\n", "1.", "\n\n", "\n ", "\n1", "# x", " ", "'"]
"""Runs of sentence ends with no space after them, abbreviations on lines with no space, list
numbers, blank lines, headings: the shapes the sentence splitter scans."""

CASES: list[tuple[str, Callable[[str], Any], int, list[str]]] = [
    ("sentence_spans", sentence_spans, REFERENCE_CHARS, REFERENCE_UNITS),
    ("segment_references", lambda t: segment_references([t]), REFERENCE_CHARS, REFERENCE_UNITS),
    (
        "sentence_claims",
        sentence_claims,
        ANSWER_CHARS,
        [*REFERENCE_UNITS, "; ", "a b c; ", "- ", "> ", "1) ", "# # ", "i am not sure "],
    ),
    (
        "locate_claims",
        lambda t: locate_claims([f"tower stands {i} zebra" for i in range(64)], t),
        ANSWER_CHARS,
        [".", "a. ", "a.\n", "tower.\n", "tower stands.\n"],
    ),
    ("tokens", lexical.tokens, REFERENCE_CHARS, ["a.", "a'", "a-", "_", "a"]),
    ("numbers", lexical.numbers, REFERENCE_CHARS, ["1,", "1", "-1", "1.", ".1", " "]),
    ("entities", lexical.entities, REFERENCE_CHARS, ["A'", "A", " ", "(", "'A ", "1"]),
    ("has_negation", lexical.has_negation, REFERENCE_CHARS, ["n't", "a'"]),
    ("embedded_clauses", _embedded_clauses, ANSWER_CHARS, [" ", "\t", " an", ", ", " and"]),
    ("citation_markers", lambda t: _CITATION.sub("", t), REFERENCE_CHARS, [" ", " [", "[1"]),
    (
        "markup",
        lambda t: markup(t).clean(),
        ANSWER_CHARS,
        [
            "[1",
            "[1,",
            "[^",
            "【",
            "(Source: ",
            "(doc ",
            "¹",
            "**",
            "_a",
            "`",
            "<b ",
            "](",
            "[a](",
            "- ",
            "1. ",
            "```\n",
            "# ",
            "|",
            "---\n",
            "~~",
            "\n",
        ],
    ),
    (
        "short_answers",
        lambda t: (is_short_answer("Delhi", t), claim_from_question(t, "Delhi")),
        ANSWER_CHARS,
        ["what ", "which a ", ", a or ", "how many ", "is ", "? ", "who, "],
    ),
    (
        "subjects",
        lambda t: (subject(t), leading_pronoun(t)),
        ANSWER_CHARS,
        ["It ", "In a ", "the ", ", ", "it is that "],
    ),
    ("as_text", lambda t: as_text(t, "reference", []), REFERENCE_CHARS, ["\ud800", "a"]),
    ("fold_reply_lines", fold_reply_lines, REFERENCE_CHARS, ["\nLabel: x", "\n\n", "\n "]),
    ("relevance_fold", _fold, REFERENCE_CHARS, ["\nDocument 1: 3", "\nAnswer: ", "\n\n"]),
    (
        "read_grades",
        lambda t: read_grades(t, Asked(3, 3), [[(c, 0.0)] for c in t]),
        REPLY_CHARS,
        ["Document 1: ", "Document 1: 3\n", " ", "**", "Answer:", "claim 1", "\n", "9", "`"],
    ),
    (
        "parse_triplet_line",
        parse_triplet_line,
        REPLY_CHARS,
        ["(", "[", "((", '"', "'", '" ', "(a, ", '"a",', "“", "‘"],
    ),
    (
        "parse_triplets",
        _ignore_parse_errors(parse_triplets),
        REPLY_CHARS,
        ["(", '("', '" ', "(a, b, c)\n", "[", "{", "- "],
    ),
    (
        "parse_subsentences",
        _ignore_parse_errors(parse_subsentences),
        REPLY_CHARS,
        ["- ", "\n", "[", "1. a\n"],
    ),
    (
        "parse_judgements",
        lambda t: parse_judgements(t, 3),
        REPLY_CHARS,
        [
            "claim ",
            " ",
            "Claim 1:\nReasoning: r\n",
            "Claim 9:\nReasoning: r\nLabel: Neutral\n",
            "quoted line\n",
            "Label: Neutral\nquote\n",
            "Reasoning: r\n",
            "\n",
            "#",
            '"',
            '"\n',
            "\u201c\n",
            "```\n",
            "> Label: Entailment\n",
            'Label: Neutral "a" "b"\n',
            "`",
        ],
    ),
]


PARAMETERS = [
    pytest.param(function, unit, size, id=f"{name}-{unit!r}")
    for name, function, size, units in CASES
    for unit in units
]


@pytest.mark.parametrize(("function", "unit", "size"), PARAMETERS)
def test_worst_cases_at_the_input_limits_take_linear_time(
    function: Callable[[str], Any], unit: str, size: int
) -> None:
    assert_linear_time(function, repeated(unit, size))


@pytest.mark.parametrize(
    ("function", "text"),
    [
        pytest.param(
            lambda t: parse_judgements(t, 1),
            repeated(" ", REPLY_CHARS, before="Claim"),
            id="judge-header-with-a-run-of-spaces",
        ),
        pytest.param(
            lambda t: parse_judgements(t, 1),
            repeated("quoted\n", REPLY_CHARS, before="Claim 1:\nReasoning: "),
            id="judge-reasoning-of-many-lines",
        ),
        pytest.param(
            lambda t: parse_judgements(t, 1),
            repeated("9", REPLY_CHARS, before="Claim 1:\nEvidence: ", after="\nLabel: Neutral"),
            id="judge-evidence-of-one-long-number",
        ),
        pytest.param(
            lambda t: read_grades(t, Asked(1, 0)),
            repeated(" ", REPLY_CHARS, before="Document 1"),
            id="grade-line-with-a-run-of-spaces",
        ),
        pytest.param(
            lambda t: read_grades(t, Asked(1, 0)),
            repeated("9", REPLY_CHARS, before="Document ", after=": 3"),
            id="grade-line-of-one-long-number",
        ),
        pytest.param(
            parse_triplet_line,
            repeated('"a", ', REPLY_CHARS, before="(", after=")"),
            id="triplet-line-of-many-quoted-items",
        ),
        pytest.param(
            sentence_spans,
            repeated("a.\n", REFERENCE_CHARS, before="(" * 1000),
            id="sentences-after-a-long-opening-run",
        ),
    ],
)
def test_shaped_worst_cases_take_linear_time(function: Callable[[str], Any], text: str) -> None:
    assert_linear_time(function, text)
