"""The conflict stage from a spec, as `RefCheckMonitor(conflict=...)` and `refcheck bench
--conflict` take it: `embedded` (the default), `nli:MODEL`, `none`, or
`py:package.module:Factory`. Self-contained, so it can move into a registry of components."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from refcheck_callbacks.check.conflict.base import ConflictFinder
from refcheck_callbacks.errors import ComponentSpecError

DEFAULT_CONFLICT = "embedded"
ConflictSource = ConflictFinder | str | Callable[[], Any] | None
"""A finder, a spec, a factory called without arguments, or None for no conflict stage."""


def conflict_finder(source: ConflictSource) -> ConflictFinder | None:
    """The finder `source` names; None for `none` / None (verdicts stay as checkers give
    them); `ComponentSpecError` when it cannot be built."""
    if source is None:
        return None
    if isinstance(source, str):
        return _from_spec(source.strip())
    if not isinstance(source, type) and isinstance(source, ConflictFinder):
        return source
    built = source() if callable(source) else source
    if not isinstance(built, ConflictFinder):
        raise ComponentSpecError(
            f"a conflict finder needs a `name` and `async find(items)`; got {type(built).__name__}"
        )
    return built


def _from_spec(spec: str) -> ConflictFinder | None:
    kind, _, argument = spec.partition(":")
    if spec in ("none", "off"):
        return None
    if spec == "embedded":
        from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder

        return StatedFactFinder()
    if kind == "nli" and argument:
        try:
            from refcheck_callbacks.check.conflict.nli import NLIConflictFinder

            return NLIConflictFinder(argument)
        except Exception as exc:
            raise ComponentSpecError(f"{spec!r} could not be built: {exc!r}") from exc
    if kind == "py" and ":" in argument:
        module, _, attribute = argument.rpartition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ComponentSpecError(f"{spec!r}: {exc}") from exc
        return conflict_finder(factory)
    raise ComponentSpecError(
        f"unknown conflict stage {spec!r}; write embedded, nli:MODEL, none or py:module:Factory"
    )
