"""A nested structure (an app's metadata: mappings, lists, text) kept within a size and a depth.

The walk stops where the budget does: every item visited costs at least one, so reading a
10 MB structure costs what the budget does, and a cycle ends at the depth limit. What fits is
returned as it was given (the same objects, not copies); only a container with something cut
below it is rebuilt, as a plain dict or list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TEXT = (str, bytes, bytearray)
_SEQUENCES = (list, tuple, set, frozenset)


class _Budget:
    def __init__(self, size: int) -> None:
        self.left = size

    def take(self, cost: int) -> bool:
        """Spend `cost` if it fits; False (and nothing left) when it does not."""
        if cost > self.left:
            self.left = 0
            return False
        self.left -= cost
        return True


def bounded_copy(value: Any, max_size: int, max_depth: int) -> tuple[Any, bool]:
    """`value` within `max_size` (characters of keys and text, one for any other value and
    for each item) and `max_depth` levels of containers; and whether all of it fit. Text past
    the budget is cut, items past it are left out, containers deeper than `max_depth` too."""
    return _within(value, _Budget(max_size), max_depth)


def _within(value: Any, budget: _Budget, depth: int) -> tuple[Any, bool]:
    if isinstance(value, _TEXT):
        room = budget.left
        if budget.take(len(value)):
            return value, True
        return value[:room], False
    if isinstance(value, Mapping):
        return _mapping(value, budget, depth)
    if isinstance(value, _SEQUENCES):
        return _sequence(value, budget, depth)
    return value, budget.take(1)


def _mapping(value: Mapping[Any, Any], budget: _Budget, depth: int) -> tuple[Any, bool]:
    kept: dict[Any, Any] = {}
    if depth <= 0:
        return kept, not value
    whole = True
    for key, item in value.items():
        if not budget.take(1 + (len(key) if isinstance(key, _TEXT) else 0)):
            return kept, False
        inner, fits = _within(item, budget, depth - 1)
        whole = whole and fits
        if fits or not _dropped(item, depth - 1):
            kept[key] = inner
    return (value if whole else kept), whole


def _sequence(value: Any, budget: _Budget, depth: int) -> tuple[Any, bool]:
    kept: list[Any] = []
    if depth <= 0:
        return kept, not value
    whole = True
    for item in value:
        if not budget.take(1):
            return kept, False
        inner, fits = _within(item, budget, depth - 1)
        whole = whole and fits
        if fits or not _dropped(item, depth - 1):
            kept.append(inner)
    return (value if whole else kept), whole


def _dropped(item: Any, depth: int) -> bool:
    """A container past the depth limit is left out, not kept empty."""
    return depth <= 0 and isinstance(item, (Mapping, *_SEQUENCES))
