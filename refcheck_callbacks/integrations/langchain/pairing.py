"""The rules that pair a LangChain root run's question, answer and references.

**The references are what the generating model saw, the answer is what the user got, the
question is the user's input.**

- Answer: what the app said with `override_pairing(answer=...)`; else the output of the run
  marked as the answer (`answer_node=` names a run or LangGraph node; the tag
  `refcheck:answer` marks a runnable); else the root's output when it is text or a message,
  the last AI message of a message list or of a graph's `messages` state, `output[output_key]`,
  or the one value of a dict output that an LLM of the run generated. Where that leaves no
  text, or with `answer_from="llm"`, the answering generation's text. A root in which no LLM
  answered (LLM calls inside retrievers and tool-call requests do not count) has no answer.
- The answering generation: the one that wrote the answer; else, among the run's LLM calls,
  the last one whose prompt holds a retrieved document or a tool result (the one that saw the
  context), else the last one. Where that means reading prompts, it is chosen in the worker.
- Question: `override_pairing(question=...)`; else the root input (or its `question_key`
  value): text, the last human message of a message list or `messages` state (the turn being
  answered), or the one text value of a dict (else its "question", "input" or "query"). Never
  a retriever's or tool's query: the first one, when it differs, goes into the metadata as
  `refcheck.retrieval_query` (a rewritten query stays visible).
- References: what the app said with `override_pairing(references=...)` or the output of a run
  tagged `refcheck:references`; else every candidate document (outermost retrievers first,
  then the root's own input, inner retrievers, chain outputs and graph state values such as
  a graph node's documents or one `Document` it built, tool artifacts, and documents parked by
  an earlier run, see `parked`) whose content is in the answering generation's prompt however
  the app printed it (`prompt_match`), plus the content of tool results in that prompt that
  hold none of them. What a readable prompt does not show was left out (a grader rejected
  it): it never comes back through a fallback, and a prompt that shows nothing gives no
  references (skipped `no_references`). Only where no prompt can be read (no generation, or
  no text in its prompt) are the outermost retrievers' documents taken, else all documents
  seen, and the request's metadata says so (`FALLBACK_KEY`). Documents parked by an earlier
  run count only when the answering prompt shows one of them.
- A root whose output is documents (HyDE: an LLM writes the query, a retriever returns the
  documents) is a retrieval: not checked, its documents parked for the answer that follows.

**Nothing here reads a document or a prompt on the app's thread.** When a root run ends, the
handler takes what can be told from the run's shape (`answer_options`, `question_of`,
`has_sources`) and submits a `CapturedAnswer`: references to the candidates, the generations
that may have answered, and what the app chose. The monitor's worker calls its `pair` (the
`Pairing` interface), which chooses the answering generation, looks for the documents in its
prompt and takes parked documents it shows: the time that grows with the documents is spent
there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import ToolMessage

from refcheck_callbacks.contract.answers import Paired, Pairing
from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.langchain.parked import ParkedClaim
from refcheck_callbacks.integrations.langchain.run import (
    IN_ANSWER,
    IN_RETRIEVER,
    Generation,
    RootRun,
)
from refcheck_callbacks.integrations.shared import prompt_match

AnswerSource = Literal["output", "llm"]
OVERRIDE_KEYS = ("question", "answer", "references")
_SAW_CHECK_DOCUMENTS = 20
"""Documents tried per generation when telling which one saw the context."""


# -- prompts ---------------------------------------------------------------------------------


def _tool_results(inputs: Any) -> list[ToolMessage]:
    """The tool results among a generation's prompt messages."""
    return [m for m in inputs if isinstance(m, ToolMessage)] if isinstance(inputs, list) else []


def _texts(documents: Iterable[Any]) -> Iterable[str]:
    for document in documents:
        text = getattr(document, "page_content", document)
        if isinstance(text, str):
            yield text


def shows_any(generation: Generation, documents: Sequence[Any]) -> bool:
    """Whether a generation's prompt shows one of `documents` (the first few tried)."""
    if not documents:
        return False
    return prompt_match.any_in_prompt(_texts(documents[:_SAW_CHECK_DOCUMENTS]), generation.prompt)


def saw_context(generation: Generation, documents: Sequence[Any]) -> bool:
    """Whether a generation's prompt holds a tool result or one of `documents`."""
    return bool(_tool_results(generation.inputs)) or shows_any(generation, documents)


# -- answer ----------------------------------------------------------------------------------


def _answering(candidates: list[Generation], documents: Sequence[Any]) -> Generation:
    """The generation that saw the context, the last one of those; else the last one."""
    if len(candidates) > 1:
        for generation in reversed(candidates):
            if saw_context(generation, documents):
                return generation
    return candidates[-1]


def _pick(
    found: list[tuple[str | None, Generation | None]], documents: Sequence[Any]
) -> tuple[str | None, Generation | None]:
    """One answer among several generated values of a dict: the one whose model saw the context
    (the answer beside, say, suggested follow-up questions)."""
    if len(found) > 1:
        for text, generation in reversed(found):
            if generation is not None and saw_context(generation, documents):
                return text, generation
    return found[-1]


@dataclass(slots=True)
class AnswerOptions:
    """Where the answer is, as far as a run's shape tells without reading prompts.

    `found`: the answer texts, each with the generation that wrote it (None when none did); a
    text None stands for the answering generation's own text. `generations`: the generations
    that may have answered, for a text no generation wrote. `choose` picks among them by
    which prompt saw the context.
    """

    found: list[tuple[str | None, Generation | None]]
    generations: list[Generation]

    def choose(self, documents: Sequence[Any]) -> tuple[str, Generation | None]:
        """The answer text and the generation that wrote it. Reads the prompts for
        `documents` (with none, only whether a prompt holds a tool result: cheap)."""
        text, generation = _pick(self.found, documents)
        if generation is None and self.generations:
            generation = _answering(self.generations, documents)
        if text is None:
            assert generation is not None, "a text None comes with generations"
            text = generation.text
        return text, generation


def answer_options(
    state: RootRun, output: Any, source: AnswerSource, output_key: str | None
) -> AnswerOptions | None:
    """The answer's options (see `AnswerOptions`); None when no generation answered."""
    candidates = [g for g in state.generations if not g.flags & IN_RETRIEVER]
    if (
        len(candidates) == 1
        and isinstance(output, str)
        and source == "output"
        and output_key is None
        and state.answer_output is None
        and not state.override
    ):
        return AnswerOptions([(output, candidates[0])], [])  # the common chain: one model
    override = state.override.get("answer")
    if override is not None:
        return AnswerOptions([(str(override), None)], candidates)
    if state.answer_output is not None:
        marked = [g for g in candidates if g.flags & IN_ANSWER] or candidates
        generated = {g.text.strip(): g for g in marked}
        found = read.answers_in(state.answer_output[0], None, generated)
        if found:
            return AnswerOptions(list(found), marked)
        candidates = marked
    if not candidates:
        return None
    if source == "output":
        generated = {g.text.strip(): g for g in candidates}
        found = read.answers_in(output, output_key, generated)
        if found:
            return AnswerOptions(list(found), candidates)
    return AnswerOptions([(None, None)], candidates)


# -- question ----------------------------------------------------------------------------------


def question_of(state: RootRun, question_key: str | None, end_inputs: Any) -> str | None:
    override = state.override.get("question")
    if override is not None:
        return str(override)
    question = read.question_in(state.input_question)
    if question is None and end_inputs is not None:
        # Streaming runs report their input only when they end.
        if question_key is not None:
            end_inputs = read.value_at(end_inputs, question_key)
        question = read.question_in(end_inputs)
    return question


def metadata_of(state: RootRun, question: str | None) -> dict[str, Any]:
    metadata = state.metadata()
    if state.query is not None and state.query != question:
        metadata["refcheck.retrieval_query"] = state.query
    return metadata


# -- references ------------------------------------------------------------------------------


def has_sources(state: RootRun, generation: Generation | None) -> bool:
    """Whether anything of the run's own could be a reference (cheap: decides, on the app's
    thread, whether to look for parked documents or skip)."""
    return bool(
        state.documents
        or state.extra_documents
        or state.references_output is not None
        or state.override.get("references") is not None
        or (generation is not None and _tool_results(generation.inputs))
    )


class _Unique:
    """References keyed by normalised text, in order; a later copy fills a missing id or score
    (a compression filter's id-less copy of a document gets the base document's id)."""

    def __init__(self) -> None:
        self.by_text: dict[str, dict[str, Any]] = {}

    def add(self, reference: dict[str, Any]) -> None:
        text = reference["text"]
        key = prompt_match.normalize(text) if isinstance(text, str) else repr(text)
        seen = self.by_text.get(key)
        if seen is None:
            self.by_text[key] = reference
            return
        for field in ("id", "score"):
            if seen[field] is None:
                seen[field] = reference[field]

    def references(self) -> list[dict[str, Any]]:
        return list(self.by_text.values())


def _unique(documents: Iterable[Any]) -> list[dict[str, Any]]:
    unique = _Unique()
    for document in documents:
        unique.add(read.as_reference(document))
    return unique.references()


FALLBACK_KEY = "refcheck.references_fallback"
"""Request metadata set when the answering prompt could not be read, so the references are
not the documents it showed: "retrievers" (the outermost retrievers' documents) or "seen"
(every document of the run)."""


def select_references(
    documents: Sequence[Any],
    extra: Sequence[Any],
    parked: Sequence[Any],
    generation: Generation | None,
    chosen: Sequence[Any] | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """The references of one answer, written by `generation` (see the module docstring), and
    the fallback taken (`FALLBACK_KEY`), if any."""
    if chosen is not None:
        return _unique(chosen if isinstance(chosen, list | tuple) else [chosen]), None
    tools = [] if generation is None else _tool_results(generation.inputs)
    artifacts = [d for m in tools for d in read.documents_in(m)]
    if generation is not None and generation.prompt:
        prompt = generation.prompt
        # The prompt tells what the model saw: what it does not show was left out (a grader
        # rejected it), and never comes back through a fallback.
        candidates = [read.as_reference(d) for d in [*documents, *extra, *artifacts, *parked]]
        candidates = [r for r in candidates if isinstance(r["text"], str)]
        unique = _Unique()
        for reference, is_shown in zip(
            candidates, prompt.shown([r["text"] for r in candidates]), strict=True
        ):
            if is_shown:
                unique.add(reference)
        shown = unique.references()
        for message in tools:
            content = prompt_match.normalize(read.content_of(message) or "")
            if content and not prompt_match.any_in_prompt((r["text"] for r in shown), content):
                unique.add(_tool_reference(message, content))
        return unique.references(), None
    if retrieved := _unique(documents):
        return retrieved, "retrievers"
    return _unique([*extra, *artifacts]), "seen"


def _tool_reference(message: ToolMessage, content: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"tool_call_id": message.tool_call_id}
    if message.name:
        metadata["tool"] = message.name
    return {"text": content, "id": None, "score": None, "metadata": metadata}


@dataclass(slots=True)
class CapturedAnswer(Pairing):
    """One root run's answer as the handler captured it; `pair` decides it in the worker.

    `documents` and `extra_documents` are the run's (see `RootRun`); `chosen` the references
    the app chose, if it did; `parked` the retrievals of an earlier run this one may answer
    (only when it has no documents of its own).
    """

    documents: list[Any]
    extra_documents: list[Any]
    chosen: Any
    answer: AnswerOptions
    parked: ParkedClaim | None = None

    def pair(self) -> Paired | None:
        text, generation = self.answer.choose(self.documents or self.extra_documents)
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
        references, fallback = select_references(
            self.documents,
            self.extra_documents,
            parked,
            generation,
            self.chosen,
        )
        if not references:
            return None
        metadata = None if fallback is None else {FALLBACK_KEY: fallback}
        if generation is None:
            return Paired(text, references, metadata=metadata)
        return Paired(text, references, generation.model, generation.response_id, metadata)


def overrides(data: Any) -> Mapping[str, Any]:
    """The known keys of an override event's payload."""
    return {k: data[k] for k in OVERRIDE_KEYS if k in data} if isinstance(data, Mapping) else {}
