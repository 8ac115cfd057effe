"""An answer's formatting, told apart from what it states: citation markers and markdown.

RAG answers carry citation markers (`[1]`, `[1][2]`, `[^3]`, `【4】`, `(Source: doc-2)`,
superscript digits) and markdown (emphasis, bullets, headings, links, code). A checker reads a
`[5]` as a figure the references do not state (ExpertQA: 60% of supported claims were labelled
Contradiction until the markers were cut), and a `**` or a bullet number as part of the claim.

`Markup.plain` is the answer with all of that blanked: the same length, so any span found in
it is a span of the answer; markers become spaces, a bullet or a table row starts a paragraph,
and a fenced code block or a heading is blank (it states nothing). `Markup.clean(start, end)`
is a claim's text without the formatting, its span unchanged.

Linear in the text: one pass per line with patterns whose repetitions are bounded or stop at
a character they exclude.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CITATIONS = re.compile(
    r"\[\d{1,3}(?:\s{0,3}[,;–-]\s{0,3}\d{1,3}){0,20}\]"  # [1], [1, 2], [1-3]
    r"|\[\^[^\]\s]{1,20}\]"  # [^3]
    r"|【[^】\n]{1,40}】"  # 【4】, 【4†source】
    r"|\[(?:doc(?:ument)?|source|ref)[\s#_-]{0,3}\w{1,12}\]"  # [doc1], [source 2]
    r"|\((?:sources?|refs?|references?|citations?|doc(?:ument)?s?)\s{0,3}[:#]\s{0,3}[^()\n]{1,80}\)"
    r"|\((?:doc(?:ument)?|source|ref)[\s#_-]{0,3}\d{1,3}\)",  # (doc 2), (source-3)
    re.IGNORECASE,
)
_SUPERSCRIPTS = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_LINK = re.compile(r"!?\[([^\[\]\n]{0,300})\]\(([^()\s]{0,2000})\)")
_EMPHASIS = re.compile(r"\*{1,3}|_{1,3}|~~")
_INLINE_CODE = re.compile(r"`+")
_HTML_TAG = re.compile(
    r"</?(?:a|b|i|u|s|em|strong|br|p|span|div|sup|sub|code|pre|ul|ol|li|h[1-6]|table|tr|td|th"
    r"|small|mark|del|ins|blockquote|hr|img)(?:\s[^<>\n]{0,200})?/?>",
    re.IGNORECASE,
)
"""Formatting tags only: `<city>`, `<PERSON>` are a redaction's placeholders, words."""
_FENCE = re.compile(r"[ \t]{0,3}(?:```|~~~)")
_HEADING = re.compile(r"[ \t]{0,3}(?:#{1,6}(?:[ \t]|$)|(?:=+|-{3,}|\*{3,}|_{3,})[ \t]*$)")
_BULLET = re.compile(r"[ \t]{0,12}(?:[-*+•]|\d{1,3}[.)])[ \t]+|[ \t]{0,3}>[ \t]?")
_TABLE_RULE_CHARS = frozenset("|-: \t")
_UNIT_BEFORE = 3
"""A superscript after a word this short is an exponent (`km²`, `x²`), not a citation."""


@dataclass(frozen=True)
class Markup:
    """An answer and the same text with its formatting blanked (see the module docstring)."""

    text: str
    plain: str
    blanked: bytes
    """One byte per character: 1 where the character is formatting."""

    def clean(self, start: int = 0, end: int | None = None) -> str:
        """`text[start:end]` without its formatting, spaces tidied; verbatim (stripped) when
        the range holds none, so plain claims reach the checker unchanged."""
        end = len(self.text) if end is None else end
        if 1 not in self.blanked[start:end]:
            return self.text[start:end].strip()
        kept = "".join(" " if self.blanked[i] else self.text[i] for i in range(start, end)).split()
        return _tidy(" ".join(kept))


_SPACE_BEFORE_MARK = re.compile(r" (?=[.,;:!?)\]](?:\s|$))")
_SPACE_AFTER_OPENER = re.compile(r"(?<=[(\[]) ")


def _tidy(text: str) -> str:
    """A space left where a marker was, before punctuation or after an opening bracket."""
    return _SPACE_AFTER_OPENER.sub("", _SPACE_BEFORE_MARK.sub("", text))


class _Blanker:
    def __init__(self, text: str) -> None:
        self.text = text
        self.chars = list(text)
        self.mask = bytearray(len(text))

    def blank(self, start: int, end: int, first: str = " ") -> None:
        """Formatting over `[start, end)`; newlines stay (they bound sentences), and `first`
        replaces the first character (a newline there opens a paragraph)."""
        for i in range(start, end):
            self.mask[i] = 1
            if self.chars[i] != "\n":
                self.chars[i] = " "
        if first != " " and start < end and self.chars[start] != "\n":
            self.chars[start] = first

    def done(self) -> Markup:
        return Markup(self.text, "".join(self.chars), bytes(self.mask))


def markup(text: str) -> Markup:
    """The formatting of `text` (see the module docstring)."""
    blanker = _Blanker(text)
    in_fence = False
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if _FENCE.match(text, start, end):
            blanker.blank(start, end)
            in_fence = not in_fence
        elif in_fence:
            blanker.blank(start, end)
        else:
            _line(blanker, start, end)
        start = end + 1
    return blanker.done()


def _line(blanker: _Blanker, start: int, end: int) -> None:
    text = blanker.text
    if _HEADING.match(text, start, end) or _table_rule(text[start:end]):
        blanker.blank(start, end)
        return
    bullet = _BULLET.match(text, start, end)
    if bullet:
        blanker.blank(bullet.start(), bullet.end(), "\n")
    elif text.startswith("|", start):
        blanker.blank(start, start + 1, "\n")  # a table row is a statement of its own
    for match in _CITATIONS.finditer(text, start, end):
        blanker.blank(*match.span())
    for match in _LINK.finditer(text, start, end):
        blanker.blank(match.start(), match.start(1))
        blanker.blank(match.end(1), match.end())
    for match in _HTML_TAG.finditer(text, start, end):
        blanker.blank(*match.span())
    for match in _INLINE_CODE.finditer(text, start, end):
        blanker.blank(*match.span())
    for match in _EMPHASIS.finditer(text, start, end):
        if _delimits(text, match.start(), match.end(), start, end):
            blanker.blank(*match.span())
    for match in _SUPERSCRIPTS.finditer(text, start, end):
        if _cites(text, match.start(), start):
            blanker.blank(*match.span())
    if "|" in text[start:end]:
        for index in range(start, end):
            if text[index] == "|":
                blanker.blank(index, index + 1)


def _table_rule(line: str) -> bool:
    """`|---|:--:|`: the line under a table's header."""
    return "---" in line and set(line) <= _TABLE_RULE_CHARS


def _delimits(text: str, first: int, last: int, start: int, end: int) -> bool:
    """Emphasis opens before a word or closes after one, never inside `snake_case` or around
    a spaced operator (`5 * 3`)."""
    before = text[first - 1] if first > start else " "
    after = text[last] if last < end else " "
    opens = not after.isspace() and (before.isspace() or not before.isalnum())
    closes = not before.isspace() and (after.isspace() or not after.isalnum())
    if text[first] == "_" and before.isalnum() and after.isalnum():
        return False
    return opens or closes or (text[first] == "*" and before.isalnum() and after.isalnum())


def _cites(text: str, index: int, line_start: int) -> bool:
    """A superscript after punctuation or a word of `_UNIT_BEFORE` letters or more is a
    citation; after a digit or a short unit it is an exponent."""
    if index == line_start:
        return True
    before = text[index - 1]
    if before.isdigit():
        return False
    if not before.isalpha():
        return True
    letters = 0
    cursor = index - 1
    while cursor >= line_start and text[cursor].isalpha() and letters < _UNIT_BEFORE:
        letters += 1
        cursor -= 1
    return letters >= _UNIT_BEFORE
