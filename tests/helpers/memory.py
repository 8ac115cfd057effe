"""The peak resident memory that a piece of code adds to this process (Linux `/proc`).

The kernel's high-water mark (`VmHWM`) is reset to the current size first (`clear_refs` 5), so
what ran before in the same process (a test suite loading models) does not hide the growth.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_STATUS = Path("/proc/self/status")


def _kib(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no {field} in {_STATUS}")
    return int(match.group(1))


@dataclass
class Growth:
    bytes: int = 0


@contextmanager
def peak_rss_growth() -> Iterator[Growth]:
    """Yields a `Growth` whose `bytes`, once the block ends, is the peak resident size during
    the block less the size before it."""
    growth = Growth()
    Path("/proc/self/clear_refs").write_text("5")
    before = _kib("VmRSS")
    yield growth
    growth.bytes = (_kib("VmHWM") - before) * 1024
