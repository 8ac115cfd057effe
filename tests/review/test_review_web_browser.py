"""`refcheck review FILE --web` in a real headless Chromium, as a person uses it, on an audit
file a real monitor wrote: the page's script shows the claim, labels it with keys, goes back,
skips, resumes at the first unlabelled claim, and shows the app's text as text."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cdp import Chromium
from review_server import review_server

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker

pytestmark = pytest.mark.slow

REFERENCES = [
    {"id": "eiffel", "text": "The Eiffel Tower is 330 metres tall. It was completed in 1889."},
]
ANSWERS = [
    ("How tall is the Eiffel Tower?", "The Eiffel Tower is 330 metres tall."),
    ("What colour is the tower?", "The Eiffel Tower is <b>red</b>."),
    ("When was the Eiffel Tower completed?", "The Eiffel Tower was completed in 1925."),
]
TEXT = r'document.body.innerText.replace(/\n+/g, "\n")'
"""The page's visible text, one line a block (the blank lines between paragraphs dropped)."""


def _write_audit(
    checker: EmbeddedChecker, path: Path, references: list[dict[str, str]], answers: int
) -> None:
    """An app's monitor drawing each of the first `answers` answers for the audit file."""
    with RefCheckMonitor(
        checker=checker, placement="thread", exporters=[], audit_rate=1.0, audit_file=path
    ) as monitor:
        for question, answer in ANSWERS[:answers]:
            monitor.submit(question=question, answer=answer, references=references)
        assert monitor.flush(60)
        assert monitor.stats.snapshot()["audited"] == {"written": answers}


@pytest.fixture(scope="module")
def monitored_audit(
    embedded_checker: EmbeddedChecker, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The audit file of an app whose monitor drew every answer (three answers, one claim each)."""
    path = tmp_path_factory.mktemp("app") / "audit.jsonl"
    _write_audit(embedded_checker, path, REFERENCES, len(ANSWERS))
    assert [len(r["claims"]) for r in _records(path)] == [1, 1, 1]
    return path


@pytest.fixture
def audit(monitored_audit: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "audit.jsonl"
    shutil.copyfile(monitored_audit, copy)
    return copy


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Chromium]:
    chromium = Chromium(tmp_path / "profile")
    try:
        yield chromium
        assert chromium.exceptions() == []  # the page's script never threw
    finally:
        chromium.close()


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _labels(path: Path) -> list[object]:
    return [label for record in _records(path) for label in record["labels"]]


def _unlabelled(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("labels", "labelled_at")}


def _open(browser: Chromium, address: str, token: str) -> None:
    browser.navigate(f"{address}?token={token}")


def _shows(browser: Chromium, text: str) -> str:
    """The page's visible text once it shows `text`."""
    found: str = browser.wait_for(f"{TEXT}.includes({json.dumps(text)}) && {TEXT}")
    return found


def test_label_go_back_skip_and_resume(
    monitored_audit: Path, audit: Path, browser: Chromium
) -> None:
    first_record = _records(audit)[0]
    with review_server(audit) as (address, token):
        _open(browser, address, token)
        first = _shows(browser, "claim 1 of 3 (0 labelled)")
        assert "Question\nHow tall is the Eiffel Tower?" in first
        assert "Claim 1 of 1 of answer 1\nThe Eiffel Tower is 330 metres tall." in first
        assert f"Checker: {first_record['predicted'][0]}" in first
        assert "Your label: none yet" in first
        assert "e Entailment · n Neutral · c Contradiction · s skip · b back" in first
        span = first_record["evidence"][0]
        marked = REFERENCES[span["reference_index"]]["text"][span["start"] : span["end"]]
        assert browser.evaluate("document.querySelector('#evidence mark').textContent") == marked

        browser.press("e")
        _shows(browser, "claim 2 of 3 (1 labelled)")
        assert _labels(audit) == ["Entailment", None, None]  # saved at once, in place
        browser.press("s")
        _shows(browser, "claim 3 of 3 (1 labelled)")
        browser.press("b")
        _shows(browser, "claim 2 of 3 (1 labelled)")
        browser.press("3")  # the digit keys label as the letters do
        third = _shows(browser, "claim 3 of 3 (2 labelled)")
        assert "claim 2: Contradiction, saved" in third
        browser.press("b")
        again = _shows(browser, "claim 2 of 3 (2 labelled)")
        assert "Your label: Contradiction" in again
        browser.press("n")  # a label given again replaces the first
        _shows(browser, "claim 3 of 3 (2 labelled)")
    assert _labels(audit) == ["Entailment", "Neutral", None]

    with review_server(audit) as (address, token):
        _open(browser, address, token)
        resumed = _shows(browser, "claim 3 of 3 (2 labelled)")
        assert "When was the Eiffel Tower completed?" in resumed
        browser.press("c")
        _shows(browser, "All 3 claims are labelled.")
    assert _labels(audit) == ["Entailment", "Neutral", "Contradiction"]
    assert [_unlabelled(r) for r in _records(audit)] == [
        _unlabelled(r) for r in _records(monitored_audit)
    ]  # the rest of each record is as the monitor wrote it


def test_the_apps_text_is_shown_as_text(audit: Path, browser: Chromium) -> None:
    with review_server(audit) as (address, token):
        _open(browser, address, token)
        _shows(browser, "claim 1 of 3")
        browser.press("s")
        second = _shows(browser, "claim 2 of 3")
        assert "What colour is the tower?" in second
        assert "The Eiffel Tower is <b>red</b>." in second  # in the claim and in the answer
        assert browser.evaluate("document.querySelectorAll('b').length") == 0


def test_keys_typed_quickly_are_taken_in_order(audit: Path, browser: Chromium) -> None:
    """Each key waits for the answer to the one before: in the order typed, the page ends on the
    server's last state."""
    with review_server(audit) as (address, token):
        _open(browser, address, token)
        _shows(browser, "claim 1 of 3")
        for key in "ebncbne":
            browser.press(key)
        _shows(browser, "All 3 claims are labelled.")
    assert _labels(audit) == ["Neutral", "Neutral", "Entailment"]


def test_a_stopped_server_is_said_on_the_page(audit: Path, browser: Chromium) -> None:
    with review_server(audit) as (address, token):
        _open(browser, address, token)
        _shows(browser, "claim 1 of 3")
    browser.press("e")
    gone = _shows(browser, "The review server did not answer")
    assert "claim 1 of 3 (0 labelled)" in gone
    assert _labels(audit) == [None, None, None]


def test_references_past_those_shown_are_counted(
    embedded_checker: EmbeddedChecker, tmp_path: Path, browser: Chromium
) -> None:
    path = tmp_path / "audit.jsonl"
    notes = [{"id": f"note{i}", "text": f"Note {i} is about a bridge."} for i in range(21)]
    _write_audit(embedded_checker, path, REFERENCES + notes, answers=1)
    with review_server(path) as (address, token):
        _open(browser, address, token)
        shown = _shows(browser, "claim 1 of 1")
        assert "[20] note18: Note 18 is about a bridge." in shown and "note19" not in shown
        assert "[... 2 more references]" in shown
