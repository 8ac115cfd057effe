"""A small caller's wait while another caller floods `refcheck serve`, on this checkout and on
another one (`--before PATH`, a folder holding an older `refcheck_callbacks`), one after the other.

For each checkout: `refcheck serve` (the embedded checker, one replica, its own local cluster)
starts; a first app process sends `--claims` claims (100,000 by default: 10,000 answers of 10
claims with one ~400-character reference each, about 9 MB) in one `RemoteChecker.check`, which
sends them in whatever calls that checkout's client makes (this one: calls of at most 4,096
claims, four in flight; an older one may send them in one call). Two seconds later a second app
process starts sending 1-claim calls, one at a time, a second apart, until the first app is
done. Reported: the small calls' latency (median, max, how many passed `RemoteChecker`'s
default 55 s deadline) and the first app's wall time. Both apps use a 600 s deadline, so a
long wait is measured rather than cut off.

    flock /tmp/cpu.lock python benchmarks/serve_fairness.py [--before /work/main]
        [--claims 100000] [--flood-only] [--json FILE]

`--flood-only` runs the first app alone: what the parts and turns cost its throughput.

The replica shares the machine's 2 cores with both apps. Measured 2026-11-25 on the shared
2-core machine, before = main (31131be), one run each:

| | 1-claim calls during the flood | median | max | past 55 s | 100,000 claims |
|---|---|---|---|---|---|
| before (one call) | 1 (then 0.9 s once it was done) | 102 s | 102 s | 1 | 107 s |
| after (25 calls, parts of 256) | 105 | 0.27 s | 1.08 s | 0 | 137 s |
| `--flood-only` before / after | | | | | 130 s / 143 s |
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
TOKEN = "fairness-benchmark"
DEFAULT_DEADLINE_S = 55.0
"""`RemoteChecker`'s default deadline: a small call that waits longer fails in a real app."""
REFERENCE = (
    "The Louvre is the world's most-visited museum and a historic landmark in Paris, France. "
    "It is the home of some of the best-known works of art, including the Mona Lisa and the "
    "Venus de Milo. The museum is housed in the Louvre Palace, originally built in the late "
    "12th to 13th century under Philip II. It opened to the public on 10 August 1793 with an "
    "exhibition of 537 paintings."
)


# Serve's proxy cannot bind port 0 and say which it got: it is given one from below the
# kernel's ephemeral range, which no port-0 bind or outgoing connection takes first.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from free_ports import unassigned_ports  # noqa: E402


def _items(count: int, tag: str) -> list[Any]:
    from refcheck_callbacks import CheckItem, Claim, Reference

    items = []
    for request in range((count + 9) // 10):
        references = [Reference(text=f"{REFERENCE} Record {tag}-{request}.")]
        items += [
            CheckItem(
                claim=Claim(text=f"The Louvre opened in {1700 + (request + c) % 300} ({tag})."),
                references=references,
                request_id=f"{tag}-{request}",
                claim_index=c,
            )
            for c in range(min(10, count - 10 * request))
        ]
    return items


def big_app(url: str, claims: int) -> None:
    """The flooding app: all its claims in one check; prints its wall time."""
    from remote_checkers import remote_checker

    items = _items(claims, "big")
    checker = remote_checker(url, token=TOKEN, deadline=600)
    print(json.dumps({"started": True}), flush=True)
    started = time.perf_counter()
    verdicts = asyncio.run(checker.check(items))
    failed = sum(v.label is None for v in verdicts)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": round(seconds, 1), "failed": failed, **checker.stats()}))


def small_app(url: str, stop_file: str) -> None:
    """The other app: 1-claim calls, a second apart, until `stop_file` exists."""
    from remote_checkers import remote_checker

    checker = remote_checker(url, token=TOKEN, deadline=600)
    latencies, failed, number = [], 0, 0
    while not Path(stop_file).exists():
        number += 1
        started = time.perf_counter()
        [verdict] = asyncio.run(checker.check(_items(1, f"small-{number}")))
        latencies.append(round(time.perf_counter() - started, 2))
        failed += verdict.label is None
        time.sleep(1.0)
    print(json.dumps({"latencies": latencies, "failed": failed}))


def _python(package_root: Path, *args: str, **popen: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(package_root), "REFCHECK_SERVE_TOKEN": TOKEN}
    env.pop("RAY_ADDRESS", None)
    return subprocess.Popen([sys.executable, *args], env=env, cwd=package_root, text=True, **popen)


def _start_service(package_root: Path, port: int, log: Path) -> subprocess.Popen[str]:
    with log.open("w") as out:
        service = _python(
            package_root, "-m", "refcheck_callbacks.cli", "serve", "--port", str(port),
            "--num-cpus", "0", stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 600
    while "refcheck serve: ready at" not in log.read_text(errors="replace"):
        if service.poll() is not None or time.monotonic() > deadline:
            service.kill()
            raise RuntimeError(f"refcheck serve did not start:\n{log.read_text()[-3000:]}")
        time.sleep(1.0)
    return service


def measure(package_root: Path, claims: int, folder: Path, small_app: bool) -> dict[str, Any]:
    port = next(unassigned_ports())
    url = f"http://127.0.0.1:{port}"
    service = _start_service(package_root, port, folder / "serve.log")
    stop_file = folder / "stop"
    try:
        big = _python(package_root, str(HERE), "--big", url, "--claims", str(claims),
                      stdout=subprocess.PIPE)  # fmt: skip
        assert big.stdout is not None
        big.stdout.readline()  # its claims are built; the call starts now
        time.sleep(2.0)
        small = None
        if small_app:
            small = _python(package_root, str(HERE), "--small", url, str(stop_file),
                            stdout=subprocess.PIPE)  # fmt: skip
        big_figures = json.loads(big.communicate(timeout=1200)[0].splitlines()[-1])
        stop_file.touch()
        small_figures: dict[str, Any] = {"latencies": [], "failed": 0}
        if small is not None:
            small_figures = json.loads(small.communicate(timeout=700)[0].splitlines()[-1])
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(120)
    latencies: list[float] = small_figures["latencies"]
    if not latencies:
        return {"big": big_figures}
    return {
        "small_calls": len(latencies),
        "small_median_s": round(statistics.median(latencies), 2),
        "small_max_s": max(latencies),
        "small_over_55s": sum(latency > DEFAULT_DEADLINE_S for latency in latencies),
        "small_failed": small_figures["failed"],
        "latencies": latencies,
        "big": big_figures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="folder holding an older refcheck_callbacks")
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--flood-only", action="store_true", help="no second app")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--big", help=argparse.SUPPRESS)
    parser.add_argument("--small", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.big:
        big_app(args.big, args.claims)
        return
    if args.small:
        small_app(*args.small)
        return
    trees = {"after": REPO}
    if args.before:
        trees = {"before": args.before.resolve(), **trees}
    figures = {}
    for name, root in trees.items():
        with tempfile.TemporaryDirectory() as folder:
            figures[name] = row = measure(root, args.claims, Path(folder), not args.flood_only)
        big = row["big"]
        small = (
            ""
            if args.flood_only
            else f"1-claim call median {row['small_median_s']} s, max {row['small_max_s']} s "
            f"({row['small_calls']} calls, {row['small_over_55s']} past 55 s); "
        )
        print(
            f"{name:>6}: {small}{args.claims:,} claims in {big['seconds']} s over {big['calls']} "
            "calls",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
