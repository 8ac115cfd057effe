"""PromQL text shared by the rule writers: constants, windows, a recording rule."""

from __future__ import annotations

from typing import Any

from refcheck_callbacks.alerting.tunables import ShareTest


def number(value: float) -> str:
    """A constant as PromQL reads it back to the same float (the replay uses the float)."""
    return str(value) if isinstance(value, int) else repr(float(value))


def windows(test: ShareTest, offset: str) -> dict[str, str]:
    """The range selectors of the share test's windows; the baseline ends `offset` ago."""
    return {
        "fast": f"[{test.fast_window}]",
        "slow": f"[{test.slow_window}]",
        "baseline": f"[{test.baseline_window}] offset {offset}",
    }


def record(name: str, expr: str) -> dict[str, Any]:
    return {"record": name, "expr": expr}
