"""The LangChain handler's added cost against an earlier commit's, paired in one process.

`benchmarks/langchain_overhead.py`'s chain (MiniLM vector-store retriever | prompt | fake chat
model | parser) and timing, with ways interleaved call by call in a shuffled order: no handler,
the earlier commit's handler (twice: the second is an A/A control that shows the noise), this
checkout's handler, and this checkout's handler without its vector-store search capture. The
earlier commit's package is taken with `git archive` into a temporary folder under another
name, so both load side by side. Both handlers submit to a sink that takes every answer and
checks none: the figure is the handler's own cost on the app's path. Also times the handlers'
bodies alone (one invoke's callbacks replayed, as langchain_overhead.py does).

    python benchmarks/langchain_handler_versus.py --against c5acbe0 [--iterations 4000]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import pathlib
import statistics
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import langchain_overhead as lo

from refcheck_callbacks.contract.answers import InputLimits
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

PACKAGE = "refcheck_callbacks"
RENAMED = "refcheck_against"


class DiscardingSink:
    """Takes every answer and checks none (an `AnswerSink`)."""

    limits = InputLimits()

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, **fields: Any) -> bool:
        self.submitted += 1
        return True

    def skipped(self, *args: Any, **kwargs: Any) -> None:
        pass

    def dropped(self, *args: Any, **kwargs: Any) -> None:
        pass

    def errored(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("a handler's callback failed")


def earlier_handler(revision: str, into: pathlib.Path) -> Any:
    """The `RefCheckCallbackHandler` class of `revision`, loaded as `RENAMED`."""
    root = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", root, "archive", revision, PACKAGE], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    package = into / PACKAGE
    for path in package.rglob("*.py"):
        path.write_text(path.read_text(encoding="utf-8").replace(PACKAGE, RENAMED), "utf-8")
    package.rename(into / RENAMED)
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{RENAMED}.integrations.langchain").RefCheckCallbackHandler


class _WithoutSearchCapture(RefCheckCallbackHandler):
    def searched(self, run_id: Any, found: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the earlier commit")
    parser.add_argument("--iterations", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as folder:
        earlier = earlier_handler(args.against, pathlib.Path(folder))
        chain = lo.build_chain(SentenceEncoder())
        handlers = {
            "earlier": earlier(DiscardingSink()),
            "earlier_again": earlier(DiscardingSink()),
            "ours": RefCheckCallbackHandler(DiscardingSink()),
            "ours_without_search_capture": _WithoutSearchCapture(DiscardingSink()),
        }
        ways: dict[str, Callable[[str], object]] = {"none": chain.invoke}
        for name, handler in handlers.items():
            ways[name] = functools.partial(chain.invoke, config={"callbacks": [handler]})
        times = lo.time_invokes(ways, args.iterations, args.iterations // 10, args.seed)
        recorder = lo._Recorder()
        chain.invoke(lo.QUESTIONS[0], config={"callbacks": [recorder]})
        bodies = lo.time_replays(
            {
                "earlier": earlier(DiscardingSink()),
                "ours": RefCheckCallbackHandler(DiscardingSink()),
            },
            recorder.calls,
            args.iterations,
            args.seed,
        )
    added = {
        name: statistics.median(t - b for t, b in zip(times[name], times["none"], strict=True))
        for name in handlers
    }
    print(f"{args.iterations} interleaved invokes per way; median us per invoke:")
    for name, values in times.items():
        extra = "" if name == "none" else f", added (paired median) {added[name]:.1f}"
        print(f"  {name:<28} {statistics.median(values):8.1f}{extra}")
    print(f"ours / earlier, added: {added['ours'] / added['earlier']:.3f}")
    print(
        f"earlier_again / earlier (A/A, the noise): {added['earlier_again'] / added['earlier']:.3f}"
    )
    medians = {name: statistics.median(v) for name, v in bodies.items()}
    print(
        f"handler bodies alone ({len(recorder.calls)} callbacks replayed), median us: earlier "
        f"{medians['earlier']:.1f}, ours {medians['ours']:.1f}, "
        f"ratio {medians['ours'] / medians['earlier']:.3f}"
    )


if __name__ == "__main__":
    main()
