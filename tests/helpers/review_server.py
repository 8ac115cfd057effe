"""`refcheck review FILE --web` run as the reviewer runs it, in a process of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ADDRESS = re.compile(r"(http://127\.0\.0\.1:\d+/)\?token=(\S+)")


@contextmanager
def review_server(path: Path) -> Iterator[tuple[str, str]]:
    """(the page's address, its token) as the server prints them; the server is stopped after."""
    server = subprocess.Popen(
        [sys.executable, "-m", "refcheck_callbacks.cli", "review", str(path), "--web"],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = _ADDRESS.search(line)
        assert found, line
        yield found[1], found[2]
    finally:
        server.terminate()
        server.wait(30)
