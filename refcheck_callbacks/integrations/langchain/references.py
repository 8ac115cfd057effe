"""Which candidate documents are an answer's references: those its prompts show.

Read in the monitor's worker, never on the app's thread. The prompts are the answering
generation's and those of the generations it was built from (`sources.built_from`: a RAG
chain inside an agent's tool wrote the tool result the agent's prompt shows). A candidate
counts where one of them shows its content however the app printed it (`prompt_match`); a
tool result those prompts show that holds none of the candidates, and that no generation of
the run wrote, is a reference of its own; so is the output of another model those prompts show
as context (`sources.digests`: a summary). Candidates come in two groups: the run's own (its
retrievers, inputs, outputs, vector-store searches, tool artifacts, parked retrievals) and the
earlier turns' of its conversation (`conversation`, and the artifacts of earlier tool results
in its history); a document of both counts as the run's own, and an earlier turn's counts
only where a prompt shows enough of it (`overlap.SHOWN_SHARE`). Last, a reference inside
another is left out and counted (`overlap`), whichever group either came from.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import ToolMessage

from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.langchain.run import Generation
from refcheck_callbacks.integrations.shared import overlap, prompt_match

FALLBACK_KEY = "refcheck.references_fallback"
"""Request metadata set when the answering prompt could not be read, so the references are
not the documents it showed: "retrievers" (the outermost retrievers' documents) or "seen"
(every document of the run)."""


def tool_results(inputs: Any) -> list[ToolMessage]:
    """The tool results among a generation's prompt messages."""
    return [m for m in inputs if isinstance(m, ToolMessage)] if isinstance(inputs, list) else []


class Unique:
    """References keyed by normalised text, in order; a later copy fills a missing id or score
    (a compression filter's id-less copy of a document gets the base document's id)."""

    def __init__(self) -> None:
        self.by_text: dict[str, dict[str, Any]] = {}

    @staticmethod
    def key(reference: dict[str, Any]) -> str:
        text = reference["text"]
        return prompt_match.normalize(text) if isinstance(text, str) else repr(text)

    def add(self, reference: dict[str, Any]) -> bool:
        """Whether `reference` is new."""
        key = self.key(reference)
        seen = self.by_text.get(key)
        if seen is None:
            self.by_text[key] = reference
            return True
        for field in ("id", "score"):
            if seen[field] is None:
                seen[field] = reference[field]
        return False

    def references(self) -> list[dict[str, Any]]:
        return list(self.by_text.values())


def unique(documents: Iterable[Any]) -> list[dict[str, Any]]:
    found = Unique()
    for document in documents:
        found.add(read.as_reference(document))
    return found.references()


class Selected:
    """An answer's references, the fallback taken (`FALLBACK_KEY`) if any, how many came from
    earlier turns of its conversation, and how many documents shown were left out as lying
    inside another reference (`overlap`)."""

    __slots__ = ("contained", "earlier", "fallback", "references")

    def __init__(
        self,
        references: list[dict[str, Any]],
        fallback: str | None = None,
        earlier: int = 0,
        contained: int = 0,
    ) -> None:
        self.references = references
        self.fallback = fallback
        self.earlier = earlier
        self.contained = contained


def _distinct(
    references: list[dict[str, Any]], fallback: str | None = None, earlier: Collection[str] = ()
) -> Selected:
    """`references` less those inside another of them (`overlap`); `earlier`: the keys
    (`Unique.key`) of those from earlier turns."""
    kept, contained = overlap.distinct(references)
    return Selected(kept, fallback, sum(Unique.key(r) in earlier for r in kept), contained)


def select(
    own: Sequence[Any],
    earlier: Sequence[Any],
    retrieved: Sequence[Any],
    sources: Sequence[Generation],
    chosen: Sequence[Any] | None,
    generated: Sequence[Generation] = (),
) -> Selected:
    """The references of an answer built from the prompts of `sources` (the answering
    generation first; none when no generation answered); `own` and `earlier` are the two
    groups of candidates, `retrieved` the outermost retrievers' documents (for the fallback),
    `generated` the generations whose output those prompts show as context (`sources`)."""
    if chosen is not None:
        return Selected(unique(chosen if isinstance(chosen, list | tuple) else [chosen]))
    tools = [m for g in sources for m in tool_results(g.inputs)]
    artifacts = [d for m in tools for d in read.documents_in(m)]
    prompts = [g.prompt for g in sources if g.prompt]
    if not prompts:
        if fallback := unique(retrieved):
            return _distinct(fallback, "retrievers")
        return _distinct(unique([*own, *artifacts]), "seen")
    # The prompts tell what the model saw: what they do not show was left out (a grader
    # rejected it), and never comes back through a fallback.
    # Tool artifacts in the prompts that are not the run's own are earlier turns' results.
    groups = ((own, False), (earlier, True), (artifacts, True))
    candidates = [(read.as_reference(d), later) for group, later in groups for d in group]
    candidates = [(r, later) for r, later in candidates if isinstance(r["text"], str)]
    texts = [r["text"] for r, _ in candidates]
    shown = [False] * len(candidates)
    for prompt in prompts:
        shown = [a or b for a, b in zip(shown, prompt.shown(texts), strict=True)]
    _enough_of_earlier(candidates, shown, prompts, [g.tool_prompt for g in sources])
    found = Unique()
    from_earlier: set[str] = set()
    for (reference, later), is_shown in zip(candidates, shown, strict=True):
        if is_shown and found.add(reference) and later:
            from_earlier.add(Unique.key(reference))
    texts_shown = [r["text"] for r in found.references()]
    written = [g.text for g in sources[1:]]
    for message in tools:
        content = prompt_match.normalize(read.content_of(message) or "")
        if not content or prompt_match.any_in_prompt(texts_shown, content):
            continue
        if any(prompt_match.in_prompt(text, content) for text in written):
            continue  # a generation's output (a RAG tool's answer): its documents count
        found.add(_tool_reference(message, content))
    for generation in generated:
        found.add(generated_reference(generation))
    return _distinct(found.references(), None, from_earlier)


def _enough_of_earlier(
    candidates: Sequence[tuple[dict[str, Any], bool]],
    shown: list[bool],
    prompts: Sequence[prompt_match.Prompt],
    tool_prompts: Sequence[prompt_match.Prompt],
) -> None:
    """An earlier turn's document counts only where a prompt shows enough of its text to
    check against: in a tool result of the history, as the tool printed it (cut short too, as
    in its own turn); elsewhere (a summary kept its first sentences), `overlap.SHOWN_SHARE` of
    it. The shown flags of those that fall short are cleared."""
    earlier = [i for i, (_, later) in enumerate(candidates) if later and shown[i]]
    earlier = [
        i for i in earlier if not any(p.shows(candidates[i][0]["text"]) for p in tool_prompts if p)
    ]
    if not earlier:
        return
    texts = [candidates[i][0]["text"] for i in earlier]
    best = [0.0] * len(earlier)
    for prompt in prompts:
        for position, share in enumerate(overlap.shares(texts, prompt.canonical)):
            best[position] = max(best[position], 1.0 if share is None else share)
    for index, share in zip(earlier, best, strict=True):
        shown[index] = share >= overlap.SHOWN_SHARE


def generated_reference(generation: Generation) -> dict[str, Any]:
    """A generation's output as a reference (a summary the answering model was shown)."""
    metadata: dict[str, Any] = {"generated": True}
    if generation.model:
        metadata["model"] = generation.model
    return {"text": generation.text, "id": None, "score": None, "metadata": metadata}


def generated_documents(references: Sequence[dict[str, Any]]) -> list[Document]:
    """The generated references among `references` (`generated_reference`), as documents for
    a conversation's later turns (`conversation.EarlierTurns.remember`)."""
    return [
        Document(page_content=r["text"], metadata=r["metadata"])
        for r in references
        if r["metadata"].get("generated") is True
    ]


def _tool_reference(message: ToolMessage, content: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"tool_call_id": message.tool_call_id}
    if message.name:
        metadata["tool"] = message.name
    return {"text": content, "id": None, "score": None, "metadata": metadata}


def cited(citations: Sequence[Any], references: Sequence[dict[str, Any]]) -> list[int]:
    """The indexes of the references that a structured answer's citations point at: an
    integer is a source's position as the prompt listed the references (the how-to's
    "Source ID: i"), a text a reference's id (or such a position); the rest point nowhere."""
    ids = {r["id"]: i for i, r in enumerate(references) if r["id"] is not None}
    indexes: list[int] = []
    for citation in citations:
        index = ids.get(citation) if isinstance(citation, str) else None
        if index is None and isinstance(citation, str) and citation.strip().isdigit():
            citation = int(citation)
        if index is None and isinstance(citation, int) and 0 <= citation < len(references):
            index = citation
        if index is not None and index not in indexes:
            indexes.append(index)
    return indexes
