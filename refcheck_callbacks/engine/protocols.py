"""Checking, once at construction, that a component implements its protocol.

A checker or extractor that lacks a member would otherwise fail every request in the
background; refusing it where the app builds the monitor puts the error where it can be fixed.
"""

from __future__ import annotations

from typing import TypeVar

from refcheck_callbacks.errors import ProtocolError

T = TypeVar("T")


def _members(protocol: type) -> list[str]:
    declared = [name for name in vars(protocol) if not name.startswith("_")]
    return sorted({*declared, *getattr(protocol, "__annotations__", {})})


def implementing(component: T, protocol: type, what: str) -> T:
    """`component`, or `ProtocolError` naming the members of `protocol` it lacks."""
    members = _members(protocol)
    missing = [name for name in members if not hasattr(component, name)]
    if missing:
        raise ProtocolError(
            f"the {what} {type(component).__name__} does not implement {protocol.__name__}: "
            f"it has no {', '.join(missing)} (a {what} needs {', '.join(members)})"
        )
    return component
