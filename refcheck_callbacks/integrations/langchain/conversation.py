"""Documents of a conversation's earlier turns, for the turns that show them again.

In a multi-turn LangGraph app with a checkpointer, earlier turns' tool results stay in the
message history, so the model answering turn 3 sees turn 1's documents too. They are
references of turn 3 as the documents they were: a retriever tool's result is only text in the
history, so the documents of each turn (each root run with a `thread_id`) are remembered here
under that conversation, and handed to the next turn's pairing as candidates, found again by
content in its prompt (tool artifacts in the history carry their documents themselves).

Bounded: the latest `max_documents` documents of each of the latest `max_conversations`
conversations (references to the app's objects, no copies). One lock, taken once per root run
that belongs to a conversation, for a copy of at most `max_documents` references.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any


class EarlierTurns:
    def __init__(self, max_documents: int = 100, max_conversations: int = 1_000) -> None:
        self.max_documents = max_documents
        self.max_conversations = max_conversations
        self._lock = threading.Lock()
        self._documents: OrderedDict[Hashable, list[Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._documents)

    def turn(self, conversation: Hashable, documents: Sequence[Any]) -> tuple[Any, ...]:
        """The documents of the conversation's turns so far; `documents` (this turn's) are
        remembered for the turns that follow."""
        with self._lock:
            kept = self._documents.pop(conversation, None)
            earlier = tuple(kept) if kept else ()
            if documents:
                kept = [*(kept or ()), *documents][-self.max_documents :]
            if kept:
                self._documents[conversation] = kept
                while len(self._documents) > self.max_conversations:
                    self._documents.popitem(last=False)
        return earlier
