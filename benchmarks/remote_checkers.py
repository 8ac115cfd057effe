"""A `RemoteChecker` built the same way on this checkout and on an older one (`--before`).

The serve benchmarks run one app process per checkout. Checkouts before `RemoteOptions` took
the same settings as keyword arguments of `RemoteChecker`; this is the one place that knows.
"""

from __future__ import annotations

from typing import Any


def remote_checker(url: str, **options: Any) -> Any:
    """`RemoteChecker(url, RemoteOptions(**options))`, or its keyword form on older checkouts."""
    from refcheck_callbacks.check.remote import RemoteChecker

    try:
        from refcheck_callbacks.remote.options import RemoteOptions
    except ImportError:
        return RemoteChecker(url, **options)
    return RemoteChecker(url, RemoteOptions(**options))
