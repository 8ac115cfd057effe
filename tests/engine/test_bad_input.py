"""Bad input gets a defined outcome and a clear message, never an exception."""

from __future__ import annotations

import threading

import pytest

from refcheck_callbacks import (
    InputLimits,
    Outcome,
    RefCheckMonitor,
    Reference,
    ResponseLabel,
    Tally,
)
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.contract.answers import Paired, Pairing

REFERENCE = "The Eiffel Tower is 330 metres tall. It was completed in 1889 in Paris."


def test_empty_answer(monitor: RefCheckMonitor) -> None:
    for answer in ["", "   \n\t ", None]:
        result = monitor.check(answer=answer, references=[REFERENCE])
        assert result.outcome is Outcome.EMPTY_ANSWER
        assert result.message == "the answer is empty: there is nothing to check"
        assert result.response_label is None and result.verdicts == ()


def test_no_references(monitor: RefCheckMonitor) -> None:
    for references in [None, [], [None, "", "   "]]:
        result = monitor.check(answer="The tower is 330 metres tall.", references=references)
        assert result.outcome is Outcome.NO_REFERENCES
        assert "no references" in (result.message or "")


def test_skipped_references_are_noted(monitor: RefCheckMonitor) -> None:
    result = monitor.check(answer="The tower is 330 metres tall.", references=[None, REFERENCE])
    assert result.outcome is Outcome.CHECKED
    assert "reference 0: None was skipped" in result.request.notes


def test_a_five_megabyte_reference_is_truncated_and_checked(monitor: RefCheckMonitor) -> None:
    huge = REFERENCE + " " + "Filler sentence about nothing in particular. " * 115_000
    assert len(huge) > 5_000_000
    result = monitor.check(answer="The Eiffel Tower is 330 metres tall.", references=[huge])
    assert result.outcome is Outcome.CHECKED
    assert len(result.request.references[0].text) == monitor.limits.max_reference_chars
    assert any(
        "truncated" in note and "max_reference_chars" in note for note in result.request.notes
    )
    assert result.verdicts[0].evidence, "the supporting sentence at the start must still be found"


def test_invalid_utf8_bytes_are_decoded_with_replacement(monitor: RefCheckMonitor) -> None:
    answer = b"The Eiffel Tower is 330 metres tall \xff\xfe."
    result = monitor.check(answer=answer, references=[REFERENCE.encode("utf-8")])
    assert result.outcome is Outcome.CHECKED
    assert "\ufffd" in result.request.answer
    assert "answer: invalid UTF-8 bytes were replaced with U+FFFD" in result.request.notes
    assert result.request.references[0].text == REFERENCE


def test_lone_surrogates_are_repaired(monitor: RefCheckMonitor) -> None:
    result = monitor.check(answer="The tower is 330 metres \udc80 tall.", references=[REFERENCE])
    assert result.outcome is Outcome.CHECKED
    result.request.answer.encode("utf-8")  # now encodable: exporters and JSON won't choke
    assert any("surrogate" in note for note in result.request.notes)


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("The tower 🗼 is 330 metres tall 🎉.", "The tower 🗼 is 330 metres tall."),
        ("מגדל אייפל נמצא בפריז ובנוי מברזל.", "מגדל אייפל הוא מגדל סריג מברזל בפריז."),
        ("برج إيفل يقع في باريس وهو مصنوع من الحديد.", "برج إيفل هو برج من الحديد في باريس."),
    ],
)
def test_emoji_and_right_to_left_text(
    monitor: RefCheckMonitor, answer: str, reference: str
) -> None:
    result = monitor.check(answer=answer, references=[Reference(text=reference, id="r")])
    assert result.outcome is Outcome.CHECKED
    for claim in result.claims:
        assert claim.span is not None and claim.span.of(answer) == claim.text
    evidence = result.verdicts[0].evidence[0]
    assert evidence.reference_id == "r"
    assert evidence.span.of(reference)


def test_non_text_values_are_converted_and_noted(monitor: RefCheckMonitor) -> None:
    result = monitor.check(
        question=42,
        answer="The tower is 330 metres tall.",
        references=[{"text": REFERENCE, "id": 7}],
    )
    assert result.outcome is Outcome.CHECKED
    assert result.request.question == "42"
    assert result.request.references[0].id == "7"
    assert "question: a int was converted to text" in result.request.notes


def test_a_refusal_only_answer_abstains(monitor: RefCheckMonitor) -> None:
    result = monitor.check(answer="I'm sorry, but I cannot answer that.", references=[REFERENCE])
    assert result.outcome is Outcome.ABSTAIN
    assert result.response_label is ResponseLabel.ABSTAIN
    assert result.ratios is None


def test_an_unreadable_trace_context_is_invalid_input(monitor: RefCheckMonitor, sink) -> None:
    result = monitor.check(answer="x y z", references=[REFERENCE], trace_context="not-a-context")
    assert result.outcome is Outcome.INVALID_INPUT
    assert sink.results == [result], "hooks and exporters must see invalid input too"
    assert result.error_type == "ValidationError"
    assert "could not be read" in (result.message or "")


def test_bad_submissions_never_raise_and_all_get_results(monitor, sink) -> None:
    bad = [
        dict(answer=None, references=None),
        dict(answer=b"\xff\xfe\xfd", references=[b"\x80abc def ghi"]),
        dict(answer="ok answer here.", references=12345),
        dict(answer=object(), references=[object()]),
        dict(answer="The tower is tall.", references=[REFERENCE], trace_context="garbage"),
    ]
    for kwargs in bad:
        assert monitor.submit(**kwargs) is True
    assert monitor.flush(timeout=60)
    assert len(sink.results) == len(bad)
    outcomes = {r.outcome for r in sink.results}
    assert Outcome.EMPTY_ANSWER in outcomes and Outcome.INVALID_INPUT in outcomes
    assert monitor.stats.get(Tally.ERRORS) == 0


def test_deferred_references_are_read_in_the_worker(monitor: RefCheckMonitor, sink) -> None:
    """Integrations pass a callable so their documents are converted off the app's thread;
    one that raises fails its own request with a clear message, and the next is checked."""
    worker_threads: list[str] = []

    def references() -> list[str]:
        worker_threads.append(threading.current_thread().name)
        return [REFERENCE]

    def unreadable() -> list[str]:
        raise ValueError("the node store is gone")

    assert monitor.submit(answer="The Eiffel Tower is 330 metres tall.", references=references)
    assert monitor.submit(answer="The Eiffel Tower is 330 metres tall.", references=unreadable)
    assert monitor.flush(timeout=60)
    by_outcome = {result.outcome: result for result in sink.results}
    good, bad = by_outcome[Outcome.CHECKED], by_outcome[Outcome.INVALID_INPUT]
    assert len(sink.results) == 2 and good.request.references[0].text == REFERENCE
    assert worker_threads and worker_threads[0] != threading.current_thread().name
    assert bad.message == "the input could not be read: the node store is gone"


class _ScriptedPairing(Pairing):
    """An integration's capture whose decision the test gives: `Paired`, None, or a raise."""

    def __init__(self, decided: Paired | Exception | None) -> None:
        self.decided = decided
        self.threads: list[str] = []

    def pair(self) -> Paired | None:
        self.threads.append(threading.current_thread().name)
        if isinstance(self.decided, Exception):
            raise self.decided
        return self.decided


def test_a_pairing_is_decided_in_the_worker_skipped_when_it_finds_nothing(
    monitor: RefCheckMonitor, sink
) -> None:
    """An integration's `Pairing` decides answer, references, model and id off the app's
    thread; one that finds nothing its model saw is counted skipped `no_references` (no
    result), and one that raises fails its own request."""
    found = _ScriptedPairing(
        Paired("The Eiffel Tower is 330 metres tall.", [REFERENCE], "gpt-x", "resp-1")
    )
    nothing = _ScriptedPairing(None)
    broken = _ScriptedPairing(ValueError("the run state is gone"))
    for pairing in (found, nothing, broken):
        assert monitor.submit(question="How tall?", pairing=pairing)
    assert monitor.flush(timeout=60)
    checked, failed = sorted(sink.results, key=lambda r: r.outcome is Outcome.INVALID_INPUT)
    assert len(sink.results) == 2
    assert checked.outcome is Outcome.CHECKED
    assert checked.request.answer == "The Eiffel Tower is 330 metres tall."
    assert [r.text for r in checked.request.references] == [REFERENCE]
    assert (checked.request.model, checked.request.response_id) == ("gpt-x", "resp-1")
    assert checked.request.question == "How tall?"
    assert failed.message == "the input could not be read: the run state is gone"
    assert monitor.stats.get(Tally.SKIPPED, "no_references") == 1
    threads = found.threads + nothing.threads + broken.threads
    assert len(threads) == 3 and threading.current_thread().name not in threads
    assert monitor.check(pairing=_ScriptedPairing(None)).outcome is Outcome.NO_REFERENCES


def test_extracted_claims_are_bounded_by_max_claims_and_the_cut_is_noted(
    embedded_checker: EmbeddedChecker,
) -> None:
    sentences = [f"Station {n} recorded {n + 10} millimetres of rain." for n in range(400)]
    answer = " ".join(sentences)[:20_000]
    with RefCheckMonitor(checker=embedded_checker, exporters=[]) as monitor:
        result = monitor.check(answer=answer, references=[REFERENCE])
        [claim_note] = [n for n in result.request.notes if n.startswith("claims:")]
        assert claim_note == (
            "claims: only the first 64 of 400 extracted claims were checked (max_claims=64)"
        )
        assert result.outcome is Outcome.CHECKED and len(result.verdicts) == 64
        assert [c.text for c in result.claims] == sentences[:64]
    limits = InputLimits(max_claims=5)
    with RefCheckMonitor(checker=embedded_checker, exporters=[], limits=limits) as monitor:
        extracted = monitor.check(answer=answer, references=[REFERENCE])
        given = monitor.check(answer=answer, references=[REFERENCE], claims=sentences[:9])
    assert len(extracted.claims) == len(given.claims) == 5
    assert "claims: only the first 5 of 400 extracted claims" in " ".join(extracted.request.notes)
    assert "claims: only the first 5 of 9 given claims" in " ".join(given.request.notes)
