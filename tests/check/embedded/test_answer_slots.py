"""Wrong short answers (`check.embedded.answer_slots`): another name than the reference's in the
slot the question asks about is a Contradiction; the right name, or a name in another slot, is
not. Through the monitor, so the short answer becomes its claim as in production."""

from __future__ import annotations

import pytest

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.types import ConflictKind, Label, Verdict

CAPITAL = "Canberra is the capital city of Australia."
MONA_LISA = "The Mona Lisa is a half-length portrait painted by Italian artist Leonardo da Vinci."
EINSTEIN = "Albert Einstein was born in Ulm, in the Kingdom of Wurttemberg, in 1879."
PENICILLIN = "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital."
PLANETS = "Jupiter is the largest planet in the Solar System."
HAMLET = "Shakespeare wrote Hamlet around 1600."
WALL = "The Berlin Wall fell in 1989, and Germany was reunified a year later."


@pytest.fixture(scope="module")
def monitor(embedded_checker: EmbeddedChecker) -> RefCheckMonitor:
    with RefCheckMonitor(checker=embedded_checker, exporters=[], placement="thread") as monitor:
        yield monitor  # type: ignore[misc]


def verdict_of(monitor: RefCheckMonitor, question: str, answer: str, reference: str) -> Verdict:
    result = monitor.check(question=question, answer=answer, references=[reference])
    [verdict] = result.verdicts
    return verdict


WRONG = [
    # (question, answer, reference, the reference's name in the slot)
    ("What is the capital of Australia?", "Sydney.", CAPITAL, "Canberra"),
    ("Who painted the Mona Lisa?", "Michelangelo.", MONA_LISA, "Leonardo da Vinci"),
    # A sentence: the stated-fact finder's (it cites `Italian`, the name next to `painted by`).
    ("Who painted the Mona Lisa?", "The Mona Lisa was painted by Michelangelo.", MONA_LISA,
     "Michelangelo"),
    # `painted by` meets `painting by`: one verb in another form.
    ("Who painted the Mona Lisa?", "The Mona Lisa was painted by Michelangelo.",
     MONA_LISA.replace("painted", "painting"), "Michelangelo"),
    ("Where was Albert Einstein born?", "Munich.", EINSTEIN, "Ulm"),  # a place
    ("Who discovered penicillin?", "Louis Pasteur.", PENICILLIN, "Alexander Fleming"),  # a person
    ("Which planet is the largest?", "Saturn.", PLANETS, "Jupiter"),
    ("Who wrote Hamlet?", "Christopher Marlowe.", HAMLET, "Shakespeare"),
    ("When did the Berlin Wall fall?", "1991.", WALL, "1989"),  # a year
]  # fmt: skip


@pytest.mark.parametrize(("question", "answer", "reference", "named"), WRONG)
def test_another_name_in_the_asked_slot_is_a_contradiction(
    monitor: RefCheckMonitor, question: str, answer: str, reference: str, named: str
) -> None:
    verdict = verdict_of(monitor, question, answer, reference)
    assert verdict.label is Label.CONTRADICTION, verdict
    assert verdict.conflict in (ConflictKind.ENTITY, ConflictKind.DATE)
    assert f"'{named}'" in (verdict.explanation or ""), verdict.explanation
    assert verdict.probabilities is not None
    assert verdict.probabilities[Label.ENTAILMENT] < 0.5
    assert verdict.confidence == pytest.approx(max(verdict.probabilities.values()), abs=1e-12)


RIGHT = [
    ("What is the capital of Australia?", "Canberra.", CAPITAL),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci.", MONA_LISA),
    ("Where was Albert Einstein born?", "Ulm.", EINSTEIN),
    ("Who discovered penicillin?", "Alexander Fleming.", PENICILLIN),
    ("Which planet is the largest?", "Jupiter.", PLANETS),
]


@pytest.mark.parametrize(("question", "answer", "reference"), RIGHT)
def test_the_references_own_name_is_supported(
    monitor: RefCheckMonitor, question: str, answer: str, reference: str
) -> None:
    assert verdict_of(monitor, question, answer, reference).label is Label.ENTAILMENT


@pytest.mark.parametrize(
    ("question", "answer", "reference"),
    [
        # A name in another slot: where it was painted, not who painted it.
        ("Who painted the Mona Lisa?", "Leonardo.",
         "The Mona Lisa, painted in Florence, now hangs in the Louvre in Paris."),
        # The sentence that restates the question names the answer among others.
        ("Who founded Apple?", "Steve Wozniak.",
         "Apple was founded by Steve Jobs, Steve Wozniak and Ronald Wayne in 1976."),
        # No sentence restates the question: the reference says nothing of the slot.
        ("What is the capital of Australia?", "Sydney.",
         "Sydney is the largest city of Australia, on the coast of New South Wales."),
    ],
)  # fmt: skip
def test_a_name_outside_the_asked_slot_is_no_contradiction(
    monitor: RefCheckMonitor, question: str, answer: str, reference: str
) -> None:
    assert verdict_of(monitor, question, answer, reference).label is not Label.CONTRADICTION
