"""What a LangChain root run ended with, kept by reference on the app's thread, paired in the
worker.

The output a root returns can be anything and any size: a 50 MB text, a tool call whose
arguments hold a million keys, a graph's state. Reading it for the answer (`pairing`'s
`answer_options`: the answer field among a mapping's fields, JSON text, which generation wrote
it) and the input for the question (`question_of`) costs time that grows with it, so none of
that runs on the app's thread: the handler keeps references to the run's state, its output
and its end inputs in a `RootEnd`, and the monitor's worker calls `pair`, which decides the
question and the answer there, then pairs the references (`pairing.CapturedAnswer`). A run
that returned a decision, not an answer (a grading, a route, a bare tool call), is skipped
`no_answer` from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from refcheck_callbacks.contract.answers import Paired, Pairing
from refcheck_callbacks.contract.reasons import SkipReason
from refcheck_callbacks.integrations.langchain import pairing
from refcheck_callbacks.integrations.langchain.answer import NO_ANSWER
from refcheck_callbacks.integrations.langchain.conversation import Turn
from refcheck_callbacks.integrations.langchain.parked import ParkedClaim
from refcheck_callbacks.integrations.langchain.run import RootRun


@dataclass(slots=True)
class RootEnd(Pairing):
    """A root run as it ended: its state (no longer changed by callbacks), what it returned,
    the inputs it reported at its end (streaming runs), how the handler reads answers and
    questions, the parked retrievals it may answer, its conversation's earlier documents and the
    conversation itself."""

    state: RootRun
    output: Any
    end_inputs: Any
    answer_from: pairing.AnswerSource
    output_key: str | None
    question_key: str | None
    parked: ParkedClaim | None
    earlier: Sequence[Any]
    turn: Turn | None = None
    """The conversation in its memory (`pairing.CapturedAnswer.turn`)."""

    def pair(self) -> Paired | SkipReason | None:
        state = self.state
        question = pairing.question_of(state, self.question_key, self.end_inputs)
        answer = pairing.answer_options(
            state, self.output, self.answer_from, self.output_key, question
        )
        if answer is NO_ANSWER:
            return SkipReason.NO_ANSWER
        if not isinstance(answer, pairing.AnswerOptions):
            return None  # no model answered: the handler parks such runs, this is defensive
        decided = pairing.CapturedAnswer(
            state.documents,
            state.extra_documents,
            state.override.get("references", state.references_output),
            answer,
            self.parked,
            state.searches,
            self.earlier,
            state.document_lists or {},
            self.turn,
        ).pair()
        if decided is None:
            return None
        metadata = {**pairing.metadata_of(state, question), **(decided.metadata or {})}
        return replace(decided, question=question, metadata=metadata)
