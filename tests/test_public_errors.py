"""Every error a user can catch is importable from the package's top level."""

from __future__ import annotations

import refcheck_callbacks
from refcheck_callbacks import errors


def test_every_error_of_the_tree_is_a_top_level_export() -> None:
    missing = sorted(set(errors.__all__) - set(refcheck_callbacks.__all__))
    assert missing == []
    for name in errors.__all__:
        assert getattr(refcheck_callbacks, name) is getattr(errors, name)
