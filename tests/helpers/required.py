"""Tests that need something this machine may lack skip saying what is missing, except under
`CI=true`, where they fail: CI must run every test, so a missing dependency or data set cannot
make tests vanish from a green run.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def skip_or_fail(message: str) -> NoReturn:
    """Skip (a test, or a whole module at import) with `message`; fail with CI=true."""
    if in_ci():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def import_or_skip(module: str, reason: str) -> ModuleType:
    """`module`, imported; when it cannot be, `skip_or_fail` saying why it is needed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        skip_or_fail(f"{module} cannot be imported ({exc}): {reason}")
