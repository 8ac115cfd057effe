"""Bounded retries with exponential backoff and jitter, honouring a server's Retry-After.

Shared by the LLM client (`llm.client`) and the checker service's HTTP client (`remote.http`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: `max_retries` after the first attempt, waits capped by `max_backoff`."""

    max_retries: int = 3
    backoff: float = 0.5
    """The first wait; each retry doubles it, plus up to 100% random jitter."""
    max_backoff: float = 30.0
    """The longest wait, also for a server's Retry-After."""

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        base = self.backoff * (2 ** (attempt - 1))
        return min(base * (1.0 + random.random()), self.max_backoff)
