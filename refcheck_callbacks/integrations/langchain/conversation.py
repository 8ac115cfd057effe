"""Documents of a conversation's earlier turns, for the turns that show them again.

In a multi-turn LangGraph app with a checkpointer, earlier turns' tool results stay in the
message history, so the model answering turn 3 sees turn 1's documents too. They are
references of turn 3 as the documents they were: a retriever tool's result is only text in the
history, so the documents of each turn (each root run with a `thread_id`) are remembered here
under that conversation, and handed to the next turn's pairing as candidates, found again by
content in its prompt (tool artifacts in the history carry their documents themselves).

What a model of a turn wrote that the answering prompt showed as context (a summary of the
older turns, `sources.digests`) stays in the history as well: the worker remembers it here
once it paired the turn (`remember`), as a document, and reads it back when it pairs a later
turn (`written`): in order, whenever the turns end.

Bounded: the latest `max_documents` documents of each of the latest `max_conversations`
conversations (references to the app's objects, no copies). One lock, taken once per root run
that belongs to a conversation, for a copy of at most `max_documents` references.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any


class EarlierTurns:
    def __init__(self, max_documents: int = 100, max_conversations: int = 1_000) -> None:
        self.max_documents = max_documents
        self.max_conversations = max_conversations
        self._lock = threading.Lock()
        self._documents: OrderedDict[Hashable, list[Any]] = OrderedDict()
        self._written: OrderedDict[Hashable, list[Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._documents)

    def turn(self, conversation: Hashable, documents: Sequence[Any]) -> tuple[Any, ...]:
        """The documents of the conversation's turns so far; `documents` (this turn's) are
        remembered for the turns that follow."""
        with self._lock:
            kept = self._documents.pop(conversation, None)
            earlier = tuple(kept) if kept else ()
            _keep(self._documents, conversation, kept, documents, self)
        return earlier

    def remember(self, conversation: Hashable, documents: Sequence[Any]) -> None:
        """Keep `documents` (what a turn's models wrote into its prompt), called by the worker
        once it paired the turn, for the turns that follow (`written`)."""
        if documents:
            with self._lock:
                kept = self._written.pop(conversation, None)
                _keep(self._written, conversation, kept, documents, self)

    def written(self, conversation: Hashable) -> tuple[Any, ...]:
        """What the conversation's models wrote into earlier turns' prompts: read by the worker
        when it pairs a turn, so a turn sees what the worker remembered of the turns before
        it, which it paired first (the worker pairs in order)."""
        with self._lock:
            return tuple(self._written.get(conversation, ()))


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn's conversation in the memory, for the worker that pairs the turn."""

    memory: EarlierTurns
    conversation: Hashable

    def written(self) -> tuple[Any, ...]:
        return self.memory.written(self.conversation)

    def remember(self, documents: Sequence[Any]) -> None:
        self.memory.remember(self.conversation, documents)


def _keep(
    store: OrderedDict[Hashable, list[Any]],
    conversation: Hashable,
    kept: list[Any] | None,
    documents: Sequence[Any],
    limits: EarlierTurns,
) -> None:
    """Put a conversation's documents back (the latest `max_documents`, most recent last),
    dropping the least recent conversations beyond `max_conversations`."""
    if documents:
        kept = [*(kept or ()), *documents][-limits.max_documents :]
    if kept:
        store[conversation] = kept
        while len(store) > limits.max_conversations:
            store.popitem(last=False)
