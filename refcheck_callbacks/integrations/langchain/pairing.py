"""The rules that pair a LangChain root run's question, answer and references.

**The references are what the generating model saw, the answer is what the user got, the
question is the user's input.**

- Answer: what the app said with `override_pairing(answer=...)`; else the output of the run
  marked as the answer (`answer_node=` names a run or LangGraph node; the tag
  `refcheck:answer` marks a runnable); else what the root returned, read by `answer`'s rule:
  text, a message, the last AI message of a message list or a graph's `messages` state,
  `output[output_key]`, the values of a dict an LLM of the run wrote, else a dict's or a
  structured object's answer field (pydantic, JSON text, a tool call's arguments; its
  citations point at references, `CITED_KEY`). The field taken is noted (`ANSWER_FIELD_KEY`).
  Where the output holds no text, or with `answer_from="llm"`, the answering generation's
  text. A structured output with no answer in it (a rating), or a run whose models only
  called tools, has no answer (skipped `no_answer`); a root in which no LLM ran has none
  either (its documents wait for a later answer, see `parked`).
- The answering generation: the one that wrote the answer verbatim; else, among the run's
  LLM calls, the last one whose prompt holds a retrieved document or a tool result (the one
  that saw the context), else the last one; never a judge of the answer, told by its role:
  a generation whose prompt shows the answer was given it (a hallucination or answer
  grader), one that wrote a decision (JSON holding no answer: a grading, a route) or called
  tools. Among several generated values of a dict, one another model was given (a rewritten
  question) is not the answer. Where that means reading prompts, it is chosen in the worker.
- Question: `override_pairing(question=...)`; else the root input (or its `question_key`
  value): text, the last human message of a message list or `messages` state (the turn being
  answered), or the one text value of a dict (else its "question", "input" or "query"). Never
  a retriever's or tool's query: the first one, when it differs, goes into the metadata as
  `refcheck.retrieval_query` (a rewritten query stays visible).
- References: what the app said with `override_pairing(references=...)` or the output of a run
  tagged `refcheck:references`; else every candidate document (outermost retrievers first,
  then the root's own input, inner retrievers, chain outputs and graph state values such as
  a graph node's documents or one `Document` it built, vector-store searches made during the
  run (`vector_search`), tool artifacts, documents parked by an earlier run (see `parked`),
  and earlier turns' documents of its conversation (`conversation`, `EARLIER_TURNS_KEY`))
  whose content is in a prompt the answer was built from however the app printed it
  (`prompt_match`): the answering generation's, and those of the generations whose output it
  shows (`built_from`: a RAG chain inside an agent's tool), plus the content of tool results
  there that hold none of them and that no generation wrote (`references`). What a readable
  prompt does not show was left out (a grader rejected it): it never comes back through a
  fallback, and a prompt that shows nothing gives no references (skipped `no_references`).
  Only where no prompt can be read (no generation, or no text in its prompt) are the
  outermost retrievers' documents taken, else all documents seen, and the request's metadata
  says so (`FALLBACK_KEY`). Documents parked by an earlier run count only when the answering
  prompt shows one of them.
- A root whose output is documents (HyDE: an LLM writes the query, a retriever returns the
  documents) is a retrieval: not checked, its documents parked for the answer that follows.

**Nothing here reads a document, a prompt or an output on the app's thread.** When a root run
ends, the handler takes what can be told from the run's shape (`has_sources`) and submits a
`root_end.RootEnd`: references to the run's state, output and inputs. The monitor's worker
calls its `pair` (the `Pairing` interface), which reads the question (`question_of`) and the
answer (`answer_options`) there, then a `CapturedAnswer`'s `pair` chooses the answering
generation, looks for the documents in its prompts and takes parked documents it shows: the
time that grows with the output and the documents is spent there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from refcheck_callbacks.contract.answers import Paired, Pairing
from refcheck_callbacks.integrations.langchain import answer as answers
from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.langchain import references
from refcheck_callbacks.integrations.langchain.answer import NO_ANSWER, Found
from refcheck_callbacks.integrations.langchain.conversation import Turn
from refcheck_callbacks.integrations.langchain.parked import ParkedClaim
from refcheck_callbacks.integrations.langchain.references import FALLBACK_KEY, tool_results
from refcheck_callbacks.integrations.langchain.run import (
    IN_ANSWER,
    IN_RETRIEVER,
    Generation,
    RootRun,
    searched_documents,
)
from refcheck_callbacks.integrations.langchain.sources import (
    SAW_CHECK_DOCUMENTS,
    built_from,
    digests,
    saw_context,
    shows_any,
)
from refcheck_callbacks.integrations.shared import overlap

__all__ = ["FALLBACK_KEY", "AnswerOptions", "CapturedAnswer", "answer_options"]

AnswerSource = Literal["output", "llm"]
OVERRIDE_KEYS = ("question", "answer", "references")
ANSWER_FIELD_KEY = "refcheck.answer_field"
"""Request metadata: the field of the root's output the answer was taken from, when the output
was not the text itself ("generation", "answer.answer", "messages")."""
CITED_KEY = "refcheck.cited_references"
"""Request metadata: the indexes (in the request's references) of the references a
structured answer's citations point at."""
EARLIER_TURNS_KEY = "refcheck.references_from_earlier_turns"
"""Request metadata: how many references came from earlier turns of the conversation."""


# -- answer ----------------------------------------------------------------------------------


def _answering(
    candidates: list[Generation], documents: Sequence[Any], answer: Found | None
) -> Generation | None:
    """The generation that wrote `answer` (its own text when None): among those that may have,
    the last that saw the context, else the last. Not one that asked for tools (unless the
    answer is structured: it came in a tool call), nor one that wrote a decision (a grading
    in JSON), nor a judge: one whose prompt shows the answer was given it."""
    structured = answer is not None and answer.structured
    eligible = [
        g
        for g in candidates
        if (structured or not (g.asks_tools or answers.is_decision(g.text)))
        and (answer is None or len(candidates) == 1 or not g.prompt.shows(answer.text))
    ]
    if not eligible:
        return None if answer is not None else candidates[-1]
    if len(eligible) > 1:
        for generation in reversed(eligible):
            if saw_context(generation, documents):
                return generation
    return eligible[-1]


def _pick(found: list[Found], documents: Sequence[Any]) -> Found:
    """One answer among several generated values of a dict: not one that another of their
    models was given (a rewritten question, a draft that was polished: the answer was built
    from it; decisions such as gradings are no candidates at all, see `answer`), the one
    whose model saw the context (the answer beside, say, suggested follow-up questions)."""
    if len(found) == 1:
        return found[0]
    final = [
        f
        for f in found
        if not any(
            o is not f and o.generation is not None and o.generation.prompt.shows(f.text)
            for o in found
        )
    ] or found
    for candidate in reversed(final):
        if candidate.generation is not None and saw_context(candidate.generation, documents):
            return candidate
    return final[-1]


@dataclass(slots=True)
class AnswerOptions:
    """Where the answer is, as far as a run's shape tells without reading prompts.

    `found`: the answers in the run's output, each with the generation that wrote it when one
    wrote it verbatim; none: the answering generation's own text. `generations`: those that
    may have answered; `everything`: the run's generations (but those in retrievers), whose
    prompts an answer may be built from. `choose` picks by reading prompts (in the worker).
    """

    found: list[Found]
    generations: list[Generation]
    everything: list[Generation] = field(default_factory=list)

    def choose(self, documents: Sequence[Any]) -> tuple[Found, Generation | None]:
        """The answer and the generation that wrote it. Reads the prompts for `documents`."""
        if self.found:
            answer = _pick(self.found, documents)
            generation = answer.generation
            if generation is None and self.generations:
                generation = _answering(self.generations, documents, answer)
            return answer, generation
        generation = _answering(self.generations, documents, None)
        assert generation is not None, "an answer without text comes with generations"
        return Found(generation.text), generation


def _generated(candidates: list[Generation]) -> dict[str, Generation]:
    """Each generation by its stripped text, or by the answer its tool call carries."""
    generated = {}
    for g in candidates:
        text = answers.structured_text(g.message) if g.asks_tools else g.text.strip()
        if text:
            generated[text] = g
    return generated


def answer_options(
    state: RootRun,
    output: Any,
    source: AnswerSource,
    output_key: str | None,
    question: str | None,
) -> AnswerOptions | Found | None:
    """The answer's options (see `AnswerOptions`); None when no generation answered;
    `NO_ANSWER` when the output is a structured object with no answer in it."""
    everything = [g for g in state.generations if not g.flags & IN_RETRIEVER]
    if (
        len(everything) == 1
        and not everything[0].asks_tools
        and isinstance(output, str)
        and source == "output"
        and output_key is None
        and state.answer_output is None
        and not state.override
        and not answers.json_object(output)
    ):
        return AnswerOptions([Found(output, everything[0])], [], everything)  # the common chain
    candidates = everything
    override = state.override.get("answer")
    if override is not None:
        return AnswerOptions([Found(str(override))], candidates, everything)
    if state.answer_output is not None:
        marked = [g for g in candidates if g.flags & IN_ANSWER] or candidates
        found = answers.answers_in(state.answer_output[0], None, _generated(marked), question)
        if found and found[0] is not NO_ANSWER:
            return AnswerOptions(found, marked, everything)
        candidates = marked
    if not candidates:
        return None
    if source == "output":
        found = answers.answers_in(output, output_key, _generated(candidates), question)
        if found == [NO_ANSWER]:
            return NO_ANSWER
        if found:
            return AnswerOptions(found, candidates, everything)
    if all(g.asks_tools for g in candidates):
        return NO_ANSWER  # only tool calls, none of which carried an answer the run returned
    return AnswerOptions([], candidates, everything)


# -- question ----------------------------------------------------------------------------------


def question_of(state: RootRun, question_key: str | None, end_inputs: Any) -> str | None:
    override = state.override.get("question")
    if override is not None:
        return str(override)
    question = read.question_in(state.input_question, state.query)
    if question is None and end_inputs is not None:
        # Streaming runs report their input only when they end.
        if question_key is not None:
            end_inputs = read.value_at(end_inputs, question_key)
        question = read.question_in(end_inputs, state.query)
    return question


def metadata_of(state: RootRun, question: str | None) -> dict[str, Any]:
    metadata = state.metadata()
    if state.query is not None and state.query != question:
        metadata["refcheck.retrieval_query"] = state.query
    return metadata


# -- references ------------------------------------------------------------------------------


def has_sources(state: RootRun, everything: Sequence[Generation]) -> bool:
    """Whether anything of the run's own could be a reference (cheap: decides, on the app's
    thread, whether to look for parked documents or skip); `everything`: the generations an
    answer may be built from, whether a tool result was shown to one of them."""
    return bool(
        state.documents
        or state.extra_documents
        or state.searches
        or state.references_output is not None
        or state.override.get("references") is not None
        or any(tool_results(g.inputs) for g in everything)
    )


@dataclass(slots=True)
class CapturedAnswer(Pairing):
    """One root run's answer as the handler captured it; `pair` decides it in the worker.

    `documents`, `extra_documents` and `searches` are the run's (see `RootRun`); `chosen` the
    references the app chose, if it did; `parked` the retrievals of an earlier run this one
    may answer (only when it has no documents of its own); `earlier` the documents of earlier
    turns of its conversation (see `conversation`), and `turn` the conversation in its memory,
    where what the turn's models wrote into its prompt is remembered for the turns that follow.
    """

    documents: list[Any]
    extra_documents: list[Any]
    chosen: Any
    answer: AnswerOptions
    parked: ParkedClaim | None = None
    searches: list[Any] = field(default_factory=list)
    earlier: Sequence[Any] = ()
    retrieved_groups: Mapping[int, Any] = field(default_factory=dict)
    turn: Turn | None = None

    def pair(self) -> Paired | None:
        searched = searched_documents(self.searches, self.retrieved_groups)
        found, generation = self.answer.choose(self.documents or self.extra_documents or searched)
        parked: list[Any] = []
        if (
            self.parked is not None
            and generation is not None
            and shows_any(generation, self.parked.documents)
        ):
            # Taken only when this answer's prompt shows them: a run in between that did not
            # show them (a query rewrite) leaves them to the answer that does. Another answer
            # may have taken them first.
            parked = self.parked.take()
        own = [*self.documents, *self.extra_documents, *searched, *parked]
        earlier = [*self.earlier, *(self.turn.written() if self.turn is not None else ())]
        sources = [] if generation is None else built_from(generation, self.answer.everything)
        context = [*own[:SAW_CHECK_DOCUMENTS], *earlier[:SAW_CHECK_DOCUMENTS]]
        selected = references.select(
            own,
            earlier,
            self.documents,
            sources,
            self.chosen,
            digests(sources, self.answer.everything, context),
        )
        if not selected.references:
            return None
        if self.turn is not None:
            self.turn.remember(references.generated_documents(selected.references))
        metadata: dict[str, Any] = {}
        if selected.fallback is not None:
            metadata[FALLBACK_KEY] = selected.fallback
        if found.field is not None:
            metadata[ANSWER_FIELD_KEY] = found.field
        if found.citations:
            metadata[CITED_KEY] = references.cited(found.citations, selected.references)
        if selected.earlier:
            metadata[EARLIER_TURNS_KEY] = selected.earlier
        metadata.update(overlap.left_out(selected.contained))
        model = None if generation is None else generation.model
        response_id = None if generation is None else generation.response_id
        return Paired(found.text, selected.references, model, response_id, metadata or None)


def overrides(data: Any) -> Mapping[str, Any]:
    """The known keys of an override event's payload."""
    return {k: data[k] for k in OVERRIDE_KEYS if k in data} if isinstance(data, Mapping) else {}
