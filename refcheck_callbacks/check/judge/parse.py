"""Strict parsing of judge replies: a label is read or the claim is a judge error, never a guess.

RefChecker turns unreadable judge output into Neutral without a trace; a monitor doing that
would report hallucinations that were really parser failures. Here a claim gets a label only
from its own numbered block, from a `Label:` line whose value is exactly one of the three
labels (markdown and punctuation aside). A missing block, a missing or unknown label, or two
different labels for one claim are errors that name the claim and say what went wrong.

The reply's structure is anchored so that text the judge quotes cannot forge it. A judge
quoting a document that holds "Label: Entailment" or "Claim 2:" on lines of their own writes
those lines into its Reasoning, so:
- claim headers count in order, and only for the prompt's claims; any other header is text,
  unless Reasoning follows it, as the reply format opens every block (then it is a block the
  judge wrote out of order, which ends the block before it and is not read);
- a block's label comes from its closing fields: the fields after its Reasoning, back to where
  a field repeats (a repeat that is not back to back is a quote; back to back, it is two
  answers, which conflict);
- when a claim's header appears twice, the block boundary it sets is read both ways, and a
  claim whose two readings name different labels is an error, not a guess.
- quoted material is never structure: lines in a code fence, a blockquote or a quotation
  that spans lines (opened by `"` or `“` on an earlier line) are text, neither headers nor
  fields nor part of a field's value, and a value's quoted spans (`Label: Contradiction
  "Label: Entailment"`) do not count where the value names a label outside them. The judge's
  verdict is what it stated itself, outside quotes (its last statement, where a label it wrote
  comes back later in its own words); a reply with no structure outside quotes (written wholly
  in a fence or a blockquote) is read as it stands.
Each line is looked at a bounded number of times: a reply of any size parses in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from refcheck_callbacks.check.judge.prompt import (
    FAVA_TYPES,
    REPLY_FIELD,
    REPLY_HEADER,
    SUGGESTION_TYPES,
)
from refcheck_callbacks.types import Label

_DECORATION = "*_`'\"“”.,;:!()[] \t"
_BARE_DECORATION = _DECORATION + "#>-\r\n"
_LABEL_WORDS = frozenset(label.value for label in Label)
_NONE_WORDS = frozenset({"", "none", "n/a", "na", "-", "no", "null"})
_MAX_DIGITS = 6
"""Claim and document numbers longer than this are not numbers a prompt asked about."""
_LONGEST_BARE_LABEL = 40
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_BLOCKQUOTE = re.compile(r"^\s*>")
_QUOTE_MARK = re.compile('["\u201c\u201d]')
_QUOTED_SPAN = re.compile('"[^"\n]*"|\u201c[^\u201d\n]*\u201d|`[^`\n]*`')
"""A quotation within one line; each alternative is one negated class: linear."""
_CLOSES = {'"': '"', "\u201c": "\u201d"}


@dataclass
class Judgement:
    """What one reply says about one claim."""

    label: Label | None
    reasoning: str | None = None
    documents: list[int] = field(default_factory=list)
    """1-based numbers of the documents the judge cites."""
    hallucination_type: str | None = None
    suggestion: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class _Item:
    """A non-blank line of a block: a field (name and value) or a continuation line (quoted
    material among them)."""

    name: str | None
    value: str
    text: str
    quoted: bool = False


@dataclass
class _Block:
    """One claim's block: the lines where it may start (several when its header repeats),
    whether its start opens with Reasoning, and where a header out of order ends it."""

    number: int
    starts: list[int]
    opens_with_reasoning: bool = False
    stop: int | None = None


def _item(line: str, quoted: bool = False) -> _Item:
    if quoted:
        return _Item(None, line.strip(), line.strip(), quoted=True)
    match = REPLY_FIELD.match(line)
    if match:
        return _Item(match.group(1).lower(), match.group(2).strip(), line.strip())
    return _Item(None, line.strip(), line.strip())


def _is_reasoning(line: str) -> bool:
    match = REPLY_FIELD.match(line)
    return match is not None and match.group(1).lower() == "reasoning"


def _header(line: str) -> tuple[int | None, int] | None:
    """(claim number, end of the header) of a header line; the number is None when it is too
    long to be one."""
    header = REPLY_HEADER.match(line)
    if header is None:
        return None
    digits = header.group(1)
    return (int(digits) if len(digits) <= _MAX_DIGITS else None), header.end()


def _quoted(lines: Sequence[str]) -> list[bool]:
    """Which lines are quoted material (see the module): in a code fence (the fence lines
    too), in a blockquote, or begun inside a quotation opened on an earlier line. A fence or a
    quotation mark that nothing closes later in the reply opens nothing (a stray `"`, an
    inch mark). When no line outside quotes holds structure, the reply was written wholly as a
    quote: nothing is quoted then. One pass to find the marks, one to follow them: linear."""
    quoted = [bool(_BLOCKQUOTE.match(line)) for line in lines]
    fences = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    # A last fence that nothing closes is text: `zip` leaves it out.
    for start, end in zip(fences[::2], fences[1::2], strict=False):
        quoted[start : end + 1] = [True] * (end + 1 - start)
    marks = [
        (i, mark.group())
        for i, line in enumerate(lines)
        if not quoted[i]
        for mark in _QUOTE_MARK.finditer(line)
    ]
    straight = [k for k, (_, mark) in enumerate(marks) if mark == '"']
    unclosed = {straight[-1]} if len(straight) % 2 else set()
    last_close = max((k for k, (_, mark) in enumerate(marks) if mark == "\u201d"), default=-1)
    unclosed.update(k for k, (_, mark) in enumerate(marks) if mark == "\u201c" and k > last_close)
    opened: str | None = None  # the quotation open where the line starts
    position = 0
    for i in range(len(lines)):
        if opened is not None:
            quoted[i] = True
        while position < len(marks) and marks[position][0] == i:
            mark = marks[position][1]
            if position in unclosed:
                pass
            elif opened is None:
                opened = mark if mark != "\u201d" else None
            elif _CLOSES[opened] == mark:
                opened = None
            position += 1
    if not any(
        not q and (_header(line) is not None or REPLY_FIELD.match(line))
        for line, q in zip(lines, quoted, strict=True)
    ):
        return [False] * len(lines)
    return quoted


def _blocks(lines: Sequence[str], count: int, quoted: Sequence[bool]) -> list[_Block]:
    """The claims' blocks, in order.

    A header of a later claim of the prompt starts a block. Any other header (beyond the
    prompt's claims, or back at the current or an earlier one) is a quote unless Reasoning
    follows it before the next header, as the reply format opens every block: then it is a
    block the judge wrote itself, either a second start for the current claim's block (the
    only one, if the first had no Reasoning: that one was quoted) or, out of order, the end of
    the current block. A one-claim reply may skip the header: its block then starts at the
    first line.
    """
    headers = [
        (i, h) for i, line in enumerate(lines) if not quoted[i] and (h := _header(line)) is not None
    ]
    blocks = [_Block(1 if count == 1 else 0, [0], opens_with_reasoning=True)]
    for position, (index, (number, end)) in enumerate(headers):
        stop = headers[position + 1][0] if position + 1 < len(headers) else len(lines)
        own = _is_reasoning(lines[index][end:]) or any(
            not quoted[i] and _is_reasoning(lines[i]) for i in range(index + 1, stop)
        )
        block = blocks[-1]
        current = block.number if len(blocks) > 1 else 0
        if number is not None and current < number <= count:
            blocks.append(_Block(number, [index], own))
        elif not own or block.stop is not None:
            continue
        elif number != current or not current:
            block.stop = index
        elif block.opens_with_reasoning:
            block.starts.append(index)
        else:
            block.starts, block.opens_with_reasoning = [index], True
    # Lines before the first header are read only when no header follows in a one-claim reply.
    return blocks if len(blocks) == 1 and count == 1 else blocks[1:]


def _block_items(lines: Sequence[str], quoted: Sequence[bool], start: int, end: int) -> list[_Item]:
    """The non-blank lines of a block; the header line gives the field written after it."""
    items = []
    header = None if quoted[start] else _header(lines[start])
    if header is not None:
        rest = lines[start][header[1] :]
        if REPLY_FIELD.match(rest):
            items.append(_item(rest))
        start += 1
    items.extend(_item(lines[i], quoted[i]) for i in range(start, end) if lines[i].strip())
    return items


def _closing_start(items: Sequence[_Item], begin: int) -> int:
    """Where the block's closing fields start: the longest run at the end with no Reasoning
    and no field given twice, except back to back. Before it, everything is Reasoning."""
    seen: set[str] = set()
    start = len(items)
    previous: str | None = None
    for index in range(len(items) - 1, begin - 1, -1):
        name = items[index].name
        if name is None:
            previous = None
            continue
        if name == "reasoning" or (name in seen and name != previous):
            break
        seen.add(name)
        previous = name
        start = index
    return start


def _collect(items: Sequence[_Item], values: dict[str, list[list[str]]]) -> None:
    """Field name -> one list of parts per time the field is given (continuation lines join
    the field before them)."""
    current: list[str] | None = None
    for item in items:
        if item.name is not None:
            current = [item.value]
            values.setdefault(item.name, []).append(current)
        elif current is not None and not item.quoted:
            current.append(item.value)


def _fields(items: Sequence[_Item]) -> dict[str, list[str]]:
    """Field name -> every value the block's structure gives for it (multi-line values joined).

    Fields before the first Reasoning are read as written (a judge may give its label first);
    after it, only the closing fields are structure and the rest belongs to the Reasoning.
    """
    reasoning = next((i for i, item in enumerate(items) if item.name == "reasoning"), None)
    parts: dict[str, list[list[str]]] = {}
    if reasoning is None:
        _collect(items[_closing_start(items, 0) :], parts)
    else:
        closing = _closing_start(items, reasoning + 1)
        _collect(items[:reasoning], parts)
        quoted = [item.text for item in items[reasoning + 1 : closing]]
        parts.setdefault("reasoning", []).append([items[reasoning].value, *quoted])
        _collect(items[closing:], parts)
    return {
        name: [" ".join(p for p in given if p) for given in lists] for name, lists in parts.items()
    }


def _label(value: str) -> Label | None:
    """The label a value names: it must start with one, and name no other.

    "Contradiction (document 2 says 1889)" is read; "Neutral or Contradiction", "Entail" and
    "Probably true" are not. Quoted spans are left out where words remain outside them
    (`Contradiction "Label: Entailment"` is a Contradiction; `"Entailment"` an Entailment).
    """
    outside = _QUOTED_SPAN.sub(" ", value)
    words = re.findall(r"[a-z]+", outside.lower()) or re.findall(r"[a-z]+", value.lower())
    named = {word for word in words if word in _LABEL_WORDS}
    if not words or words[0] not in _LABEL_WORDS or len(named) > 1:
        return None
    return Label(words[0])


def _bare_label(reply: str) -> Label | None:
    """The label of a reply that is exactly one label word ("Entailment", "**neutral.**")."""
    if len(reply) > _LONGEST_BARE_LABEL:
        return None
    word = reply.strip(_BARE_DECORATION).lower()
    return Label(word) if word in _LABEL_WORDS else None


def _optional(values: list[str] | None) -> str | None:
    if not values:
        return None
    value = values[0].strip().strip("*_`").strip()
    return None if value.lower().strip(".") in _NONE_WORDS else value


def _documents(value: str | None) -> list[int]:
    return [int(d) for d in re.findall(r"\d+", value or "") if len(d) <= _MAX_DIGITS]


def _judgement(items: Sequence[_Item], number: int, truncated: bool) -> Judgement:
    values = _fields(items)
    labels = values.get("label", [])
    if not labels:
        cut = " (the reply was cut off at the token limit)" if truncated else ""
        return Judgement(label=None, error=f"the judge gave no label for claim {number}{cut}")
    parsed = {_label(v) for v in labels}
    if None in parsed:
        bad = next(v for v in labels if _label(v) is None)
        return Judgement(
            label=None,
            error=f"the judge's label for claim {number} is not one of entailment, neutral, "
            f"contradiction: {bad[:80]!r}",
        )
    if len(parsed) > 1:
        return Judgement(label=None, error=f"the judge gave claim {number} conflicting labels")
    label = parsed.pop()
    kind = (_optional(values.get("type")) or "").lower().strip(_DECORATION)
    kind = kind if kind in FAVA_TYPES and label is not Label.ENTAILMENT else ""
    suggestion = _optional(values.get("suggestion")) if kind in SUGGESTION_TYPES else None
    return Judgement(
        label=label,
        reasoning=_optional(values.get("reasoning")),
        documents=_documents(_optional(values.get("evidence"))),
        hallucination_type=kind or None,
        suggestion=suggestion,
    )


def _read_block(
    lines: Sequence[str],
    quoted: Sequence[bool],
    number: int,
    starts: Sequence[int],
    ends: Sequence[int],
    truncated: bool,
) -> Judgement | None:
    """A claim's judgement, read from its first and last start to its first and last end.

    The readings differ only when a header repeats, and must not name different labels; the
    first reading that has a label is kept, trying the block as it begins last and ends last.
    None when the block is empty (a header out of order right at its start).
    """
    readings = [
        _judgement(_block_items(lines, quoted, start, end), number, truncated)
        for start in dict.fromkeys((starts[-1], starts[0]))
        for end in dict.fromkeys((ends[-1], ends[0]))
        if start < end
    ]
    labelled = [reading for reading in readings if reading.label is not None]
    if len({reading.label for reading in labelled}) > 1:
        return Judgement(
            label=None,
            error=f"the judge's reply repeats a claim header at claim {number}'s block, and "
            "read from either header it gives that claim different labels (a document it "
            "quotes may imitate the reply format)",
        )
    return labelled[0] if labelled else readings[0] if readings else None


def _ends(blocks: Sequence[_Block], index: int, line_count: int) -> list[int]:
    """Where block `index` may end: its stop, else wherever the next block may start."""
    block = blocks[index]
    if block.stop is not None:
        return [block.stop]
    return blocks[index + 1].starts if index + 1 < len(blocks) else [line_count]


def parse_judgements(reply: str, count: int, truncated: bool = False) -> list[Judgement]:
    """One `Judgement` per claim 1..count; failures carry `error` and no label."""
    if not reply.strip():
        return [Judgement(label=None, error="the judge returned an empty reply")] * count
    bare = _bare_label(reply) if count == 1 else None
    if bare is not None:
        return [Judgement(label=bare)]
    lines = reply.splitlines()
    quoted = _quoted(lines)
    blocks = _blocks(lines, count, quoted)
    readings = {
        block.number: _read_block(
            lines, quoted, block.number, block.starts, _ends(blocks, index, len(lines)), truncated
        )
        for index, block in enumerate(blocks)
    }
    found = {number: judgement for number, judgement in readings.items() if judgement}
    cut = " (the reply was cut off at the token limit)" if truncated else ""
    return [
        found.get(number)
        or Judgement(
            label=None,
            error=f"the judge's reply has no block for claim {number} "
            f"(it answered {len(found)} of {count} claims){cut}",
        )
        for number in range(1, count + 1)
    ]
