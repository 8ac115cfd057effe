"""The terminal labeller behind `refcheck review FILE`: one claim a screen, one key a label.

It shows the question, the claim, what the checker said, the evidence span highlighted in its
reference, the other references and the answer; the keys are on the last lines of the screen.
A label is saved at once (`AuditBook.save`), so quitting at any time, or a killed terminal,
loses nothing, and the next run starts at the first claim with no label. The text is the
app's: control characters (a terminal escape among them) are shown as `?`, never sent to the
terminal. Long texts are cut (`session`) and the screen scrolls; a resized terminal is laid
out again.
"""

from __future__ import annotations

import contextlib
import curses
import os
import re
import unicodedata
from collections.abc import Callable

from refcheck_callbacks.errors import RefCheckError
from refcheck_callbacks.review.audit_book import LABELS
from refcheck_callbacks.review.session import ClaimView, Cut, ReviewSession

KEYS = "e Entailment  n Neutral  c Contradiction  s skip  b back  q quit  Up/Down PgUp/PgDn scroll"
"""The legend on screen."""
LABEL_KEYS = {"e": LABELS[0], "1": LABELS[0], "n": LABELS[1], "2": LABELS[1]}
LABEL_KEYS |= {"c": LABELS[2], "3": LABELS[2]}
MIN_LINES, MIN_COLS = 8, 30

Segment = tuple[str, int]
"""Text and its curses attribute."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_TOKENS = re.compile(r"\S+|\s+")


def printable(text: str) -> str:
    """The text safe for a terminal: tabs as spaces, other control characters as `?`."""
    return _CONTROL.sub("?", text.replace("\t", "    ").replace("\r", ""))


def _width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _text_width(text: str) -> int:
    return sum(_width(char) for char in text)


def wrap(segments: list[Segment], cols: int) -> list[list[Segment]]:
    """Screen rows of at most `cols` cells; newlines start a row, long words are split."""
    rows: list[list[Segment]] = [[]]
    used = 0
    for text, attr in segments:
        for part_number, part in enumerate(printable(text).split("\n")):
            if part_number:
                rows.append([])
                used = 0
            for token in _TOKENS.findall(part):
                size = _text_width(token)
                if used + size > cols and used:
                    rows.append([])
                    used = 0
                    if token.isspace():
                        continue
                while _text_width(token) > cols:  # a word longer than the screen
                    head, token = _split_at(token, cols - used)
                    rows[-1].append((head, attr))
                    rows.append([])
                    used = 0
                rows[-1].append((token, attr))
                used += _text_width(token)
    return rows


def _split_at(token: str, cells: int) -> tuple[str, str]:
    used = 0
    for index, char in enumerate(token):
        used += _width(char)
        if used > cells:
            return token[: max(index, 1)], token[max(index, 1) :]
    return token, ""


def _cut(cut: Cut, highlight: int) -> list[Segment]:
    left = f"  [... {cut.left_out} more characters not shown]" if cut.left_out else ""
    return [(cut.before, 0), (cut.marked, highlight), (cut.after, 0), (left, curses.A_DIM)]


def _label_text(label: object) -> str:
    if label is None:
        return "none yet"
    if isinstance(label, bool):
        return "supported" if label else "not supported"
    return str(label)


def body(view: ClaimView) -> list[Segment]:
    """Everything shown of one claim, before it is wrapped to the screen."""
    bold, highlight = curses.A_BOLD, curses.A_REVERSE | curses.A_BOLD
    out: list[Segment] = []
    if view.question is not None:
        out += [("Question: ", bold), *_cut(view.question, 0), ("\n\n", 0)]
    where = f"Claim {view.claim_number} of {view.claims_in_answer} of answer {view.answer_number}"
    out += [(f"{where}:\n", bold), *_cut(view.claim, bold), ("\n\n", 0)]
    checker = view.predicted or "no label"
    if view.probabilities:
        checker += "  (" + ", ".join(f"{k} {p:.2f}" for k, p in view.probabilities.items()) + ")"
    out += [("Checker: ", bold), (checker + "\n", 0)]
    out += [("Your label: ", bold), (_label_text(view.label) + "\n\n", bold)]
    if view.evidence is not None and view.evidence_reference is not None:
        ref_id, _ = view.references[view.evidence_reference] if view.references else (None, None)
        name = f"[{view.evidence_reference + 1}]" + (f" {ref_id}" if ref_id else "")
        out += [(f"Evidence, in reference {name}:\n", bold), *_cut(view.evidence, highlight)]
        out += [("\n\n", 0)]
    else:
        out += [("Evidence: none given by the checker\n\n", bold)]
    out += [("References:\n", bold)]
    for number, (ref_id, text) in enumerate(view.references, start=1):
        out += [(f"[{number}]" + (f" {ref_id}" if ref_id else "") + ": ", bold)]
        out += [*_cut(text, 0), ("\n", 0)]
    if view.references_left_out:
        out += [(f"[... {view.references_left_out} more references]\n", curses.A_DIM)]
    out += [("\nAnswer:\n", bold), *_cut(view.answer, 0)]
    return out


class Labeller:
    """The screen and its keys (module docstring)."""

    def __init__(self, screen: curses.window, session: ReviewSession, status: str) -> None:
        self.screen = screen
        self.session = session
        self.status = status
        self.scroll = 0

    def loop(self) -> None:
        with contextlib.suppress(curses.error):
            curses.curs_set(0)
        while True:
            rows = self.draw()
            key = self.screen.get_wch()
            if key in ("q", "Q"):
                return
            self.act(key, rows)

    def act(self, key: str | int, rows: int) -> None:
        page = max(1, curses.LINES - 4)
        moves: dict[str | int, Callable[[], None]] = {
            "s": self.session.skip,
            curses.KEY_RIGHT: self.session.skip,
            "b": self.session.back,
            curses.KEY_LEFT: self.session.back,
        }
        scrolls = {curses.KEY_DOWN: 1, "j": 1, curses.KEY_UP: -1, "k": -1}
        scrolls |= {curses.KEY_NPAGE: page, " ": page, curses.KEY_PPAGE: -page}
        if key == curses.KEY_RESIZE:
            curses.update_lines_cols()
        elif isinstance(key, str) and key.lower() in LABEL_KEYS:
            self._label(LABEL_KEYS[key.lower()])
        elif key in moves:
            moves[key]()
            self.scroll, self.status = 0, ""
        elif key in scrolls:
            self.scroll = max(0, min(self.scroll + scrolls[key], rows - page))

    def _label(self, label: str) -> None:
        if self.session.done:
            return
        position = self.session.position
        try:
            self.session.give(label)
        except (OSError, RefCheckError) as exc:
            self.status = f"NOT SAVED: {exc}"
            return
        self.scroll = 0
        self.status = f"claim {position + 1}: {label}, saved"

    def draw(self) -> int:
        """Draw the screen; the number of rows of the claim's text."""
        self.screen.erase()
        lines, cols = self.screen.getmaxyx()
        if lines < MIN_LINES or cols < MIN_COLS:
            message = [(f"Make the terminal at least {MIN_COLS}x{MIN_LINES}.", 0)]
            for y, row in enumerate(wrap(message, max(1, cols - 1))[:lines]):
                self._put(y, row, cols)
            self.screen.refresh()
            return 0
        view = self.session.view()
        rows = wrap(body(view) if view else self._end(), cols - 1)
        visible = lines - 4
        self.scroll = max(0, min(self.scroll, len(rows) - visible))
        self._put(0, [(self._title(), curses.A_REVERSE)], cols)
        for offset, row in enumerate(rows[self.scroll : self.scroll + visible]):
            self._put(2 + offset, row, cols)
        more = len(rows) - self.scroll - visible
        footer = f"-- {more} more lines below --  " if more > 0 else ""
        self._put(lines - 2, [(footer + KEYS, curses.A_REVERSE)], cols)
        self._put(lines - 1, [(self.status, 0)], cols)
        self.screen.refresh()
        return len(rows)

    def _title(self) -> str:
        session = self.session
        place = "end" if session.done else f"claim {session.position + 1} of {session.total}"
        name = os.path.basename(session.book.path)
        return f" refcheck review  {name}  {place}  ({session.book.labelled()} labelled)"

    def _end(self) -> list[Segment]:
        session = self.session
        labelled = session.book.labelled()
        if labelled == session.total:
            head = f"All {session.total} claims are labelled."
        else:
            head = f"End of the file: {labelled} of {session.total} claims are labelled."
        return [(head, curses.A_BOLD), ("\n\nb goes back to the last claim, q quits.", 0)]

    def _put(self, y: int, row: list[Segment], cols: int) -> None:
        x = 0
        for text, attr in row:
            room = cols - 1 - x
            if room <= 0:
                return
            shown, _ = _split_at(printable(text), room)
            with contextlib.suppress(curses.error):
                self.screen.addstr(y, x, shown, attr)
            x += _text_width(shown)


def review_in_terminal(session: ReviewSession, status: str) -> None:
    """Label in the terminal until the reviewer quits."""
    os.environ.setdefault("ESCDELAY", "25")
    for stale in ("LINES", "COLUMNS"):  # curses would take them over the terminal's own size
        os.environ.pop(stale, None)
    curses.wrapper(lambda screen: Labeller(screen, session, status).loop())
