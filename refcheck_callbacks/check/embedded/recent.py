"""The references the embedded checker prepared most recently, by content.

Retrieval diagnostics (`check.diagnose`) run right after checking, on the same requests: they
read these token ids and segment vectors instead of tokenising the references again (the
larger part of their cost). Bounded; a miss only costs the tokenisation.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from refcheck_callbacks.support.lru import LRU, digest

RECENT_REQUESTS = 32
"""Requests' prepared references kept (about 1.5 MB each for five 150-word references)."""

_lock = threading.Lock()
_recent: LRU[bytes, Any] = LRU(RECENT_REQUESTS)


def remember(texts: Sequence[str], prepared: Any) -> None:
    """Keep a request's `features.PreparedReferences`."""
    with _lock:
        _recent.put(digest(*texts), prepared)


def recall(texts: Sequence[str]) -> Any | None:
    """The `features.PreparedReferences` of these reference texts, when still kept."""
    with _lock:
        return _recent.get(digest(*texts))
