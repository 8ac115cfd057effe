"""Which relevance scorer diagnostics use: `embedded` (the offline head, the default) or
`llm:MODEL` (an LLM relevance judge, `check.relevance.llm_relevance`).

Named the way checkers are (`RefCheckMonitor(relevance="llm:gpt-4o-mini")`, `refcheck check
--relevance llm:MODEL`, `REFCHECK_RELEVANCE`), or given as a built judge or a factory of one.
A value that names neither is a `ConfigurationError` where the monitor or pipeline is built.
Reading a spec imports nothing: the judge (and litellm) load only when one is built.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from refcheck_callbacks.check.relevance.judged import RelevanceJudge
from refcheck_callbacks.errors import ConfigurationError

EMBEDDED = "embedded"
LLM = "llm"
ACCEPTED = "embedded (the offline head, default) or llm:MODEL (a litellm model name)"

RelevanceSource = str | RelevanceJudge | Callable[[], RelevanceJudge] | None
"""A spec, a relevance judge, a factory of one, or None (the offline head)."""


def relevance_spec(value: str) -> str:
    """`value` when it is a relevance spec, stripped; ValueError saying what is accepted."""
    spec = value.strip()
    if spec == EMBEDDED:
        return spec
    kind, colon, model = spec.partition(":")
    model = model.strip()
    if kind != LLM or not colon or not model:
        raise ValueError(f"accepted: {ACCEPTED}")
    variant, at, _ = model.partition("@")
    if at and not re.search(r"[/:\\]", variant):
        raise ValueError(
            f"the relevance judge has no presets ({variant!r}@): write llm:MODEL; accepted: "
            f"{ACCEPTED}"
        )
    return f"{LLM}:{model}"


def checked_spec(source: RelevanceSource) -> RelevanceSource:
    """`source`, its spec checked (`ConfigurationError` when it names no scorer): a monitor
    refuses a bad spec where it is built, not later in its checking process."""
    if not isinstance(source, str):
        return source
    try:
        return relevance_spec(source)
    except ValueError as exc:
        raise ConfigurationError(f"relevance={source!r} cannot be used: {exc}") from None


def relevance_judge(source: RelevanceSource, api_base: str | None = None) -> RelevanceJudge | None:
    """The judge `source` names or makes; None for the offline head. `api_base` is the
    endpoint of an `llm:MODEL` spec (a vLLM server)."""
    if source is None:
        return None
    if isinstance(source, str):
        spec = str(checked_spec(source))
        if spec == EMBEDDED:
            if api_base is not None:
                raise ConfigurationError("an API base is only for an llm:MODEL relevance")
            return None
        from refcheck_callbacks.check.relevance.llm_relevance import LLMRelevance

        return LLMRelevance(spec.partition(":")[2], api_base)
    if isinstance(source, type) or (callable(source) and not isinstance(source, RelevanceJudge)):
        source = source()  # a factory: a class, or a function
    if not isinstance(source, RelevanceJudge):
        raise ConfigurationError(
            f"relevance={source!r}: a relevance judge needs `name`, `threshold` and "
            f"`async judge(request, claims)`; or give a spec: {ACCEPTED}"
        )
    return source
