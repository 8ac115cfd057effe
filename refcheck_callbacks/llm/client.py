"""The one place that calls an LLM: litellm, with bounded concurrency, deadlines and retries.

Extractors and judges share this wrapper so every LLM call behaves the same way: litellm's own
retries are off (RefChecker's retry forever; ours are counted and bounded), rate limits are
retried after the server's Retry-After, server errors and timeouts with exponential backoff
and jitter, and nothing outlives its deadline. Token usage and cost (when litellm knows the
model's price) come back with every completion. Our calls stay out of the app's traces and
out of litellm's logging callbacks (they are not the app's work). litellm is imported on first
use only.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from refcheck_callbacks.errors import LLMCallError
from refcheck_callbacks.llm.budget import (
    BUDGET_EXHAUSTED,
    Pricing,
    Reservation,
    SpendLedger,
    prompt_tokens,
    reported_count,
)
from refcheck_callbacks.llm.failures import billable, classify, retry_after
from refcheck_callbacks.llm.loading import load_litellm, unlogged, unlogged_call_flag
from refcheck_callbacks.support.instrumentation import suppressed_instrumentation
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.support.retry import RetryPolicy
from refcheck_callbacks.types import ModelSpend, Usage

Message = Mapping[str, str]

DEFAULT_BUDGETED_MAX_TOKENS = 4096
"""The answer's bound, sent and reserved, for a budgeted call that names none."""

TopLogprobs = list[tuple[str, float]]
"""One generated position: the likeliest tokens with their log-probabilities."""


@dataclass
class _Spent:
    """What one completion has cost so far: counted while it is retried, then frozen."""

    model: str
    role: str
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    refused: int = 0
    budget_used: float | None = None

    def usage(self) -> Usage:
        spend = ModelSpend(
            model=self.model,
            role=self.role,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost_usd,
            refused=self.refused,
            budget_used=self.budget_used,
        )
        return Usage(
            requests=self.requests,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost_usd,
            by_model=(spend,),
        )


@dataclass
class Completion:
    """The choices of one (or, for polls without `n`, several) completion requests."""

    texts: list[str]
    finish_reasons: list[str | None]
    usage: Usage
    logprobs: list[list[TopLogprobs]] = field(default_factory=list)
    """Per choice, per generated token, when the request asked for `top_logprobs` and the
    server returned them; a choice without them has an empty list."""


@dataclass(frozen=True)
class _Ask:
    """What one `complete` call asks, whatever number of requests it takes."""

    messages: Sequence[Message]
    temperature: float
    max_tokens: int | None
    extra: dict[str, Any]
    role: str


class LLMClient:
    """Async chat completions through litellm for one model.

    Args:
        model: a litellm model name ("gpt-4o-mini", "anthropic/claude-3-5-haiku-20241022",
            "openai/<served-name>" or "hosted_vllm/<served-name>" with `api_base`).
        api_base, api_key: the endpoint, e.g. a vLLM server's "http://host:8000/v1".
        concurrency: requests in flight at once from this client (per event loop).
        request_timeout: seconds one HTTP attempt may take.
        deadline: seconds one `complete` call may take, retries and waits included. Keep it
            below the monitor's stage timeouts (`StageTimeouts`: 60 s extract, 120 s check),
            so a slow call ends as a counted error of its own rather than a stage timeout.
        retry: the retry policy for rate limits, server errors and timeouts.
        supports_n: whether the endpoint returns several choices for `n`; None asks litellm.
        completion_kwargs: passed to `litellm.acompletion` as-is (e.g. `extra_headers`).
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        concurrency: int = 8,
        request_timeout: float = 45.0,
        deadline: float = 55.0,
        retry: RetryPolicy | None = None,
        supports_n: bool | None = None,
        completion_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.concurrency = concurrency
        self.request_timeout = request_timeout
        self.deadline = deadline
        self.retry = retry or RetryPolicy()
        self.completion_kwargs = dict(completion_kwargs or {})
        self._supports_n = supports_n
        self._litellm: ModuleType | None = None
        self._unlogged_flag: ContextVar[bool] | None = None
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._requests_sent = 0
        self._ledger: SpendLedger | None = None
        self._pricing: Pricing | None = None

    def limit_spend(self, ledger: SpendLedger) -> None:
        """Hold every call of this client to `ledger`'s budget (checked before each request).
        Raises `BudgetError` when the model has no price and the budget caps USD."""
        self._pricing = Pricing.of(self.model, ledger.budget, self.litellm)
        self._ledger = ledger

    @property
    def requests_sent(self) -> int:
        """Requests handed to litellm, retries included (one that fails before sending counts)."""
        with self._lock:
            return self._requests_sent

    @property
    def litellm(self) -> ModuleType:
        if self._litellm is None:
            self._litellm = load_litellm()
            self._unlogged_flag = unlogged_call_flag()
        return self._litellm

    @property
    def supports_n(self) -> bool:
        if self._supports_n is None:
            try:
                params = self.litellm.get_supported_openai_params(model=self.model) or []
            except Exception:
                params = []
            self._supports_n = "n" in params
        return self._supports_n

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
        role: str = "checker",
    ) -> Completion:
        """`n` choices for `messages`: one request with `n` where supported, else `n` requests.

        `extra` adds request fields of this call (on top of `completion_kwargs`), for example
        the documents a vLLM chat template reads. Raises `LLMCallError` when no choice could be
        had; a partial set of choices (some parallel requests failed) is returned as long as
        one succeeded. `role` (`checker`, `extractor`) labels the spend in the metrics. Under a
        budget (`limit_spend`) a request the budget cannot hold is not sent: `LLMCallError`
        with kind `budget_exhausted`.
        """
        ask = _Ask(messages, temperature, max_tokens, dict(extra or {}), role)
        try:
            if n > 1 and self.supports_n:
                return await self._complete_with_n(ask, n)
            return _merge(await self._parallel(ask, n))
        except LLMCallError as exc:
            # The logger lets this through once a minute; verdicts and metrics carry the count.
            logger.warning("refcheck: LLM call failed (%s): %s", exc.kind, exc)
            raise

    async def _complete_with_n(self, ask: _Ask, n: int) -> Completion:
        first = await self._complete_one(ask, n)
        missing = n - len(first.texts)
        if missing <= 0:
            return first
        # A server may cap n: the rest come from single requests, still bounded.
        try:
            rest = await self._parallel(ask, missing)
        except LLMCallError as exc:
            rest = [Completion(texts=[], finish_reasons=[], usage=exc.usage)]
        return _merge([first, *rest])

    async def _parallel(self, ask: _Ask, count: int) -> list[Completion]:
        outcomes = await asyncio.gather(
            *(self._complete_one(ask, 1) for _ in range(count)),
            return_exceptions=True,
        )
        done = [o for o in outcomes if isinstance(o, Completion)]
        errors = [o for o in outcomes if isinstance(o, LLMCallError)]
        failed = sum((e.usage for e in errors), Usage())
        if done:
            # Requests that failed still count: they went out and may have been billed.
            return [*done, Completion(texts=[], finish_reasons=[], usage=failed)]
        if errors:
            raise LLMCallError(errors[0].message, errors[0].kind, failed)
        raise next(o for o in outcomes if isinstance(o, BaseException))

    async def _complete_one(self, ask: _Ask, n: int) -> Completion:
        """One completion request, retried within the policy and the deadline."""
        spent = _Spent(self.model, ask.role)
        give_up_at = time.monotonic() + self.deadline
        attempt = 0
        while True:
            remaining = give_up_at - time.monotonic()
            if remaining <= 0:
                raise LLMCallError(
                    f"no reply within the {self.deadline:g}s deadline", "deadline", spent.usage()
                )
            attempt += 1
            reservation = self._reserve(ask, n, spent)
            try:
                response = await self._send(ask, n, remaining, spent)
            except Exception as exc:
                self._end_unanswered(reservation, exc)
                kind, retryable = classify(exc)
                if not retryable or attempt > self.retry.max_retries:
                    why = "retries exhausted: " if retryable else ""
                    message = f"{why}{kind} after {attempt} request(s): {_short(exc)}"
                    raise LLMCallError(message, kind, spent.usage()) from exc
                wait = self.retry.wait(attempt, retry_after(exc))
                if time.monotonic() + wait >= give_up_at:
                    raise LLMCallError(
                        f"{kind}; the next retry (in {wait:.1f}s) would pass the "
                        f"{self.deadline:g}s deadline: {_short(exc)}",
                        "deadline",
                        spent.usage(),
                    ) from exc
                await asyncio.sleep(wait)
                continue
            except BaseException as exc:  # cancelled (a stage deadline): it was sent all the same
                self._end_unanswered(reservation, exc)
                raise
            return self._completion(response, spent, reservation)

    def _reserve(self, ask: _Ask, n: int, spent: _Spent) -> Reservation | None:
        """Hold the request's most possible spend in the budget, or refuse to send it."""
        ledger, pricing = self._ledger, self._pricing
        if ledger is None or pricing is None:
            return None
        prompt = prompt_tokens(self.model, ask.messages, self.litellm)
        # Without max_tokens the answer has no bound to reserve: the budget sets one.
        answer = n * (ask.max_tokens or DEFAULT_BUDGETED_MAX_TOKENS)
        reservation = ledger.reserve(pricing.cost(prompt, answer), prompt + answer)
        if reservation is None:
            spent.refused += 1
            spent.budget_used = ledger.used()
            raise LLMCallError(
                f"the judge budget cannot hold this call ({prompt} prompt + {answer} answer "
                f"tokens): {ledger.used():.0%} of it is spent or held in the window",
                BUDGET_EXHAUSTED,
                spent.usage(),
            )
        return reservation

    def _end_unanswered(self, reservation: Reservation | None, exc: BaseException) -> None:
        """A call that ended without a reply we could read: charged its estimate where the
        provider may bill it, else released (see `llm.budget`)."""
        ledger = self._ledger
        if reservation is None or ledger is None:
            return
        if billable(exc):
            ledger.settle(reservation)
        else:
            ledger.release(reservation)

    async def _send(self, ask: _Ask, n: int, remaining: float, spent: _Spent) -> Any:
        timeout = min(self.request_timeout, remaining)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in ask.messages],
            "temperature": ask.temperature,
            "timeout": timeout,
            "num_retries": 0,
            "max_retries": 0,
            # A provider without, say, `temperature` gets the request without it, not a 400.
            "drop_params": True,
            **self.completion_kwargs,
        }
        kwargs.update(ask.extra)
        if n > 1:
            kwargs["n"] = n
        if ask.max_tokens is not None:
            kwargs["max_tokens"] = ask.max_tokens
        elif self._ledger is not None:
            kwargs["max_tokens"] = DEFAULT_BUDGETED_MAX_TOKENS
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        litellm = self.litellm
        async with self._semaphore():
            with self._lock:
                self._requests_sent += 1
            spent.requests += 1
            try:
                with suppressed_instrumentation(), unlogged(self._unlogged_flag):
                    # Our own clock as well as the HTTP client's: a server that trickles bytes
                    # must not hold a slot past the deadline.
                    return await asyncio.wait_for(litellm.acompletion(**kwargs), timeout + 1.0)
            except asyncio.TimeoutError as exc:
                raise asyncio.TimeoutError(f"no reply within {timeout:.1f}s") from exc

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
            return semaphore

    def _completion(
        self, response: Any, spent: _Spent, reservation: Reservation | None
    ) -> Completion:
        usage = getattr(response, "usage", None)
        prompt = reported_count(getattr(usage, "prompt_tokens", None))
        completion = reported_count(getattr(usage, "completion_tokens", None))
        spent.prompt_tokens += prompt
        spent.completion_tokens += completion
        spent.cost_usd = self._cost(response)
        if reservation is not None and self._ledger is not None and self._pricing is not None:
            cost = self._pricing.cost(prompt, completion)
            if self._pricing.per_token is not None and spent.cost_usd is not None:
                cost = spent.cost_usd
            self._ledger.settle(reservation, cost, prompt + completion)
            spent.budget_used = self._ledger.used()
        texts, reasons, logprobs = [], [], []
        for choice in getattr(response, "choices", None) or []:
            message = getattr(choice, "message", None)
            texts.append(str(getattr(message, "content", None) or ""))
            reasons.append(getattr(choice, "finish_reason", None))
            logprobs.append(_top_logprobs(choice))
        return Completion(
            texts=texts, finish_reasons=reasons, usage=spent.usage(), logprobs=logprobs
        )

    def _cost(self, response: Any) -> float | None:
        """The price litellm knows for this model and these tokens; None when it knows none."""
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        if not isinstance(cost, int | float) or isinstance(cost, bool):
            try:
                cost = float(self.litellm.completion_cost(completion_response=response))
            except Exception:
                return None
        # From the reported usage: a negative or NaN report prices as nothing known.
        return float(cost) if math.isfinite(cost) and cost >= 0 else None


def _top_logprobs(choice: Any) -> list[TopLogprobs]:
    """The OpenAI `logprobs.content[*].top_logprobs` of a choice, as plain tuples."""
    content = getattr(getattr(choice, "logprobs", None), "content", None) or []
    return [
        [
            (str(top.token), float(top.logprob))
            for top in getattr(position, "top_logprobs", None) or []
        ]
        for position in content
    ]


def _merge(completions: Sequence[Completion]) -> Completion:
    return Completion(
        texts=[t for c in completions for t in c.texts],
        finish_reasons=[r for c in completions for r in c.finish_reasons],
        usage=sum((c.usage for c in completions), Usage()),
        logprobs=[p for c in completions for p in c.logprobs],
    )


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_client(model: str | LLMClient, api_base: str | None, api_key: str | None) -> LLMClient:
    """The client an extractor or judge uses: `model` itself, or a default one for its name."""
    if isinstance(model, str):
        return LLMClient(model, api_base, api_key)
    if api_base is not None or api_key is not None:
        raise ValueError("pass api_base and api_key to the LLMClient, not beside it")
    return model
