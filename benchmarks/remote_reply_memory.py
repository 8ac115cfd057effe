"""An app's peak memory when its `RemoteChecker` gets a huge reply, on this checkout and on
another one (`--before PATH`, a folder holding an older `refcheck_callbacks`), side by side.

A loopback server in this process answers every call with a 200 and a `--size`-byte body that
it makes as it sends (a wrong URL, a proxy's error page, a broken service); it costs the server
one chunk. Each checkout's app runs in a fresh process: it imports the package, builds
`RemoteChecker` with a 120 s deadline and checks one claim. It reports its peak resident size
(`ru_maxrss`) before and after the call, the call's wall time and the verdict's error; the
server reports the body bytes the app's socket took before it hung up.

    flock /tmp/cpu.lock python benchmarks/remote_reply_memory.py [--before /work/main]
        [--size 1500000000] [--json FILE]

Measured 2026-11-25 on the shared 2-core machine, a 1.5 GB reply, before = main (31131be):

| | app's peak RSS | call | body bytes taken |
|---|---|---|---|
| before | 45 -> 3,273 MB | 16.1 s, then "not a valid CheckReply" | 1,500,000,000 |
| after | 45 -> 115 MB | 0.75 s, "reply larger than 67,108,864 bytes" | 72,613,888 |
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "tests" / "helpers"))

from loopback_servers import HugeReplyServer  # noqa: E402

HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    b'{"checker": "x", "verdicts": ['
)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def app(url: str) -> None:
    """The app's side: one check against `url`; prints its figures as one JSON line."""
    from remote_checkers import remote_checker

    from refcheck_callbacks import CheckItem, Claim, Reference

    item = CheckItem(
        claim=Claim(text="Paris is in France."),
        references=[Reference(text="Paris is the capital of France.")],
        request_id="r",
        claim_index=0,
    )
    checker = remote_checker(url, deadline=120)
    before = _peak_mb()
    started = time.perf_counter()
    [verdict] = asyncio.run(checker.check([item]))
    print(
        json.dumps(
            {
                "peak_rss_before_mb": round(before),
                "peak_rss_after_mb": round(_peak_mb()),
                "seconds": round(time.perf_counter() - started, 2),
                "error": (verdict.error or "")[:160],
            }
        )
    )


def measure(package_root: Path | None, size: int) -> dict[str, Any]:
    server = HugeReplyServer(HEAD, size)
    env = dict(os.environ)
    if package_root is not None:
        env["PYTHONPATH"] = str(package_root)
    try:
        done = subprocess.run(
            [sys.executable, str(HERE), "--app", server.url],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
    finally:
        server.close()
    if done.returncode != 0:
        raise RuntimeError(f"the app failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    figures["body_bytes_taken"] = server.sent
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="folder holding an older refcheck_callbacks")
    parser.add_argument("--size", type=float, default=1.5e9, help="reply body bytes (1.5e9)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--app", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.app:
        app(args.app)
        return
    runs: dict[str, Path | None] = {"after": None}
    if args.before:
        runs = {"before": args.before.resolve(), **runs}
    figures = {name: measure(root, int(args.size)) for name, root in runs.items()}
    for name, row in figures.items():
        print(
            f"{name:>6}: peak RSS {row['peak_rss_before_mb']:,} -> {row['peak_rss_after_mb']:,} "
            f"MB, {row['seconds']} s, {row['body_bytes_taken']:,} body bytes taken; "
            f"{row['error']}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
