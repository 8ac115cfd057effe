"""Which prompts an answer was built from, and which generated texts its model saw.

**Only the answering prompt counts**, and what reached it: the documents it shows, the tool
results it holds, and the text other models of the run wrote into it. Two ways another
model's output reaches the answering prompt:

- inside a *tool result*: a RAG chain inside an agent's tool (retriever -> prompt -> LLM)
  wrote the tool's answer, from which the agent answers. The tool's documents are what the
  answer rests on, so that chain's prompt is one the answer was built from (`built_from`),
  transitively; its answer is not a reference of its own.
- anywhere else in the prompt (a message, the prompt's text): a summary (`create_agent`'s
  `SummarizationMiddleware` replaces the old turns with one), a draft another model
  polishes, a digest of documents. What that model was shown is *not* what the answering
  model saw: it saw the output. So its output is a reference of its own (`digests`), as far
  as the answering prompt shows it, and the documents behind it count only where the
  answering prompt shows them itself. Only the output of a model that saw context (a
  document or a tool result) is evidence: a rewritten question, a plan or a route is not;
  nor a decision (a grading), nor an earlier step of the answering model's own loop (a
  text agent's thoughts, whose prompt the answering prompt repeats).

Read in the monitor's worker, never on the app's thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from refcheck_callbacks.integrations.langchain import answer as answers
from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.langchain.references import tool_results
from refcheck_callbacks.integrations.langchain.run import Generation
from refcheck_callbacks.integrations.shared import overlap, prompt_match

SAW_CHECK_DOCUMENTS = 20
"""Documents tried per generation when telling whether it saw the context."""


def _texts(documents: Iterable[Any]) -> Iterable[str]:
    for document in documents:
        text = getattr(read.document_of(document), "page_content", document)
        if isinstance(text, str):
            yield text


def shows_any(generation: Generation, documents: Sequence[Any]) -> bool:
    """Whether a generation's prompt shows one of `documents` (the first few tried)."""
    if not documents:
        return False
    return prompt_match.any_in_prompt(_texts(documents[:SAW_CHECK_DOCUMENTS]), generation.prompt)


def saw_context(generation: Generation, documents: Sequence[Any]) -> bool:
    """Whether a generation's prompt holds a tool result or one of `documents`."""
    return bool(tool_results(generation.inputs)) or shows_any(generation, documents)


def built_from(generation: Generation, generations: Sequence[Generation]) -> list[Generation]:
    """`generation` and the generations whose output its tool results show, and theirs in
    turn: the prompts an answer was built from (a RAG chain inside an agent's tool wrote the
    tool result the agent's prompt shows). A judge, shown the answer, is never among them."""
    sources = [generation]
    pending = [g for g in generations if g is not generation and not g.asks_tools]
    index = 0
    while index < len(sources) and pending:
        results = sources[index].tool_prompt
        shown = [g for g in pending if results and results.shows(g.text)] if results else []
        sources.extend(shown)
        pending = [g for g in pending if g not in shown]
        index += 1
    return sources


def digests(
    sources: Sequence[Generation],
    generations: Sequence[Generation],
    candidates: Sequence[Any],
) -> list[Generation]:
    """The generations whose output the answer's prompts (`sources`, the answering one first)
    show outside tool results, written from context: the summaries and drafts the answering
    model saw (see the module). `candidates` are the documents that may be context."""
    if not sources:
        return []
    answering = sources[0]
    prompts = [g.prompt for g in sources if g.prompt]
    found = []
    for generation in generations:
        if (
            generation in sources
            or generation.asks_tools
            or answers.is_decision(generation.text)
            or not any(prompt.shows(generation.text) for prompt in prompts)
            or not saw_context(generation, candidates)
        ):
            continue
        [repeated] = overlap.shares([generation.prompt.canonical], answering.prompt.canonical)
        if repeated is not None and repeated >= overlap.CONTAINED_SHARE:
            continue  # an earlier step of the answering model's own loop
        found.append(generation)
    return found
