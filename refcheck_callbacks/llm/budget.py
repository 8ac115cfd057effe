"""Judge budgets: a hard cap on what LLM checkers and extractors spend, in USD, tokens or both,
over a rolling window.

The cap holds from our own estimate, whatever the provider reports. Before each call its
tokens are estimated as litellm's count of the prompt plus the most the model may answer
(`max_tokens` for each of the `n` choices), priced with litellm's cost map (or the price
given), and that estimate is charged at once (reserved). A call whose estimate would pass a
limit is not sent: its claims go to the fallback checker (its answers to the fallback
extractor), counted. When the call ends, its charge is settled:
- it answered: the larger of the estimate and the usage it reports. A report can only raise
  the charge (a provider counting more prompt tokens than litellm's tokenizer; an overrun shows
  as `budget_used` above 1), never lower it: a reply with no usage, zero, negative, text, NaN
  or any other shape is charged its estimate (`reported_count` reads what can be read);
- it may have been answered without our seeing it (a reply slower than the request timeout, a
  connection dropped after sending, a reply litellm could not read, a cancelled call): charged
  its estimate, as the provider may bill it (`llm.failures.billable`);
- the provider refused it with an error status, or no connection was made: released.
Calls in flight count as spent, so under any concurrency the calls sent never hold more than
the cap: the calls a window bills stay within the cap as long as no reply reports more than
its estimate.

A model with no known price cannot be held to a USD limit: it refuses to start unless `price`
gives one, or `price="unlimited"` says its USD spend is not capped (its tokens still are).
Opik's per-rule budgets fail open there; this one fails closed.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from refcheck_callbacks.errors import BudgetError

BUDGET_EXHAUSTED = "budget_exhausted"
"""The `LLMCallError.kind` of a call the budget refused, and the `Verdict.fallback` reason."""
_MESSAGE_OVERHEAD_TOKENS = 8
"""Per message, when litellm cannot count: role and separators, generously."""
MAX_REPORTED_TOKENS = 2**53
"""A reported count is read up to this (floats stay exact; any budget is spent long before)."""
_MAX_DIGITS = 16


class TokenPrice(BaseModel):
    """A model's price when litellm's cost map does not know it (a self-hosted vLLM model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_usd_per_million: float = Field(ge=0.0)
    output_usd_per_million: float = Field(ge=0.0)


class JudgeBudget(BaseModel):
    """What refcheck's LLM calls (judges and extractors) may spend per rolling window.

    `RefCheckMonitor(checker="llm:gpt-4o-mini", judge_budget=JudgeBudget(usd=5, window_s=86400))`
    caps the monitor's judge and LLM extractor together; `LLMChecker(..., budget=...)` caps one
    judge. Give `usd`, `tokens` or both.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    usd: float | None = Field(default=None, gt=0.0)
    """Dollars per window, from litellm's cost map or `price`."""
    tokens: int | None = Field(default=None, ge=1)
    """Prompt plus completion tokens per window."""
    window_s: float = Field(default=86400.0, gt=0.0)
    """The rolling window, in seconds (a day by default)."""
    price: TokenPrice | Literal["unlimited"] | None = None
    """For a model litellm has no price for: its price, or "unlimited" to leave its USD spend
    uncapped. Without either, such a model refuses to start under a USD limit."""
    fallback_checker: str = "embedded"
    """The checker spec that takes the claims of a refused judge call."""
    fallback_extractor: str = "sentence"
    """The extractor spec that takes the answers of a refused extractor call."""

    @model_validator(mode="after")
    def _a_limit(self) -> JudgeBudget:
        if self.usd is None and self.tokens is None:
            raise ValueError("a JudgeBudget needs a limit: usd, tokens or both")
        return self


@dataclass(frozen=True)
class Reservation:
    """A call's estimate, charged when it was sent: the least it is settled at."""

    usd: float
    tokens: int


class SpendLedger:
    """One budget's rolling window, shared by every LLM client it limits (thread-safe: the
    clients of a monitor's extractor and checker call from its worker's loop, and a judge may be
    shared between monitors)."""

    def __init__(self, budget: JudgeBudget, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self._clock = clock
        self._lock = threading.Lock()
        self._settled: deque[tuple[float, float, int]] = deque()
        self._spent_usd = 0.0
        self._spent_tokens = 0
        self._reserved_usd = 0.0
        self._reserved_tokens = 0

    def _expire(self) -> None:
        horizon = self._clock() - self.budget.window_s
        while self._settled and self._settled[0][0] <= horizon:
            _, usd, tokens = self._settled.popleft()
            self._spent_usd -= usd
            self._spent_tokens -= tokens

    def reserve(self, usd: float, tokens: int) -> Reservation | None:
        """Hold `usd` and `tokens` for a call about to be sent; None when that would pass a
        limit (the call must not be sent)."""
        with self._lock:
            self._expire()
            limit_usd, limit_tokens = self.budget.usd, self.budget.tokens
            if limit_usd is not None and self._spent_usd + self._reserved_usd + usd > limit_usd:
                return None
            if (
                limit_tokens is not None
                and self._spent_tokens + self._reserved_tokens + tokens > limit_tokens
            ):
                return None
            self._reserved_usd += usd
            self._reserved_tokens += tokens
            return Reservation(usd, tokens)

    def settle(self, reservation: Reservation, usd: float = 0.0, tokens: int = 0) -> None:
        """The call ended and may be billed: it is charged its estimate, or what it reported
        (`usd`, `tokens`, read by `reported_count`) where that is more."""
        usd = max(reservation.usd, usd) if math.isfinite(usd) else reservation.usd
        tokens = max(reservation.tokens, tokens)
        with self._lock:
            self._unreserve(reservation)
            self._settled.append((self._clock(), usd, tokens))
            self._spent_usd += usd
            self._spent_tokens += tokens

    def release(self, reservation: Reservation) -> None:
        """The provider did no work for the call (it refused it with an error status, or no
        connection was made): nothing is charged."""
        with self._lock:
            self._unreserve(reservation)

    def _unreserve(self, reservation: Reservation) -> None:
        self._reserved_usd -= reservation.usd
        self._reserved_tokens -= reservation.tokens

    def used(self) -> float:
        """The largest share of a limit spent or held in the window (1.0: exhausted)."""
        with self._lock:
            self._expire()
            shares = []
            if self.budget.usd is not None:
                shares.append((self._spent_usd + self._reserved_usd) / self.budget.usd)
            if self.budget.tokens is not None:
                shares.append((self._spent_tokens + self._reserved_tokens) / self.budget.tokens)
            return max(shares)

    def spent(self) -> tuple[float, int]:
        """USD and tokens settled in the window (reservations not included)."""
        with self._lock:
            self._expire()
            return self._spent_usd, self._spent_tokens


@dataclass(frozen=True)
class Pricing:
    """A model's USD per token (input, output), or None: no price, USD spend not capped."""

    per_token: tuple[float, float] | None

    @classmethod
    def of(cls, model: str, budget: JudgeBudget, litellm: ModuleType) -> Pricing:
        """litellm's price for `model`, else the budget's; `BudgetError` when a USD limit
        cannot be held because the model has no price and none was given."""
        given = budget.price
        if isinstance(given, TokenPrice):
            return cls((given.input_usd_per_million / 1e6, given.output_usd_per_million / 1e6))
        try:
            info = litellm.get_model_info(model)
            known = (float(info["input_cost_per_token"]), float(info["output_cost_per_token"]))
        except Exception:
            known = None
        if known is None and budget.usd is not None and budget.price != "unlimited":
            raise BudgetError(
                f"{model!r} has no price in litellm's cost map, so a USD budget cannot hold it: "
                "give its price (JudgeBudget(price=TokenPrice(input_usd_per_million=..., "
                "output_usd_per_million=...))) or price='unlimited' to cap its tokens only"
            )
        return cls(known)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        if self.per_token is None:
            return 0.0
        return prompt_tokens * self.per_token[0] + completion_tokens * self.per_token[1]


def prompt_tokens(model: str, messages: Sequence[Mapping[str, str]], litellm: ModuleType) -> int:
    """litellm's count of the prompt's tokens for `model`; where it cannot count, the prompt's
    UTF-8 bytes (no tokenizer makes more tokens than bytes) plus a per-message overhead."""
    try:
        return int(litellm.token_counter(model=model, messages=[dict(m) for m in messages]))
    except Exception:
        return sum(
            len(str(m.get("content", "")).encode()) + _MESSAGE_OVERHEAD_TOKENS for m in messages
        )


def reported_count(value: object) -> int:
    """A token count as a reply reports it, read where it can be: a whole number of at least
    0 (an integral float, ASCII digits as text) up to `MAX_REPORTED_TOKENS`; anything else
    (missing, negative, NaN, other text, an object) is 0, which leaves the charge at the
    call's estimate."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return min(max(value, 0), MAX_REPORTED_TOKENS)
    if isinstance(value, float):
        if math.isnan(value) or value <= 0:
            return 0
        return MAX_REPORTED_TOKENS if value >= MAX_REPORTED_TOKENS else math.ceil(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            return int(text) if len(text) <= _MAX_DIGITS else MAX_REPORTED_TOKENS
    return 0
