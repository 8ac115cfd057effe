"""Lazy imports of optional dependencies, with an error that names the extra to install.

`import refcheck_callbacks` must stay light: torch, transformers and litellm are imported
only when a component that needs them is built.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType

from refcheck_callbacks.errors import MissingExtraError


def _install(extra: str) -> str:
    return f"install it with: pip install 'refcheck-callbacks[{extra}]'"


def require(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"{module!r} is not installed; {_install(extra)}") from exc


def require_installed(modules: Iterable[str], extra: str, user: str, hint: str = "") -> None:
    """`MissingExtraError` for the first of `modules` that is not installed, said once where
    `user` (a component) is built, rather than an ImportError on every later call. Nothing is
    imported: the check stays light."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(f"{user} needs {module!r}; {_install(extra)}{hint}")
