"""NLI pairs/s through Ray Serve against in-process, on the same model and workload.

The model and workload are those of benchmarks/nli_throughput.py (a RoBERTa classifier of the
chosen size with random weights, built from a config; answers x claims x references). In-process:
one `NLIChecker` checks the answers in engine batches of 16 answers. Service: `refcheck serve`'s
application on a local Ray cluster (the checker replica on the GPU when there is one), called by
`--callers` concurrent `RemoteChecker`s, each sending its share of the same engine batches, so
the service merges their calls (`@serve.batch`). Labels must agree; the ratio is service pairs/s
over in-process pairs/s.

    python benchmarks/nli_serve.py --size small --answers 40          # CPU smoke run
    bash benchmarks/gpu.sh serve                                      # on a lent GPU
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nli_throughput import build_model, build_workload, whole_words

ENGINE_BATCH = 16


# Serve's proxy cannot bind port 0 and say which it got: it is given one from below the
# kernel's ephemeral range, which no port-0 bind or outgoing connection takes first.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from free_ports import unassigned_ports  # noqa: E402


def _batches(workload: dict[str, Any]) -> list[list[Any]]:
    from refcheck_callbacks.types import CheckItem, Claim, Reference

    answers = workload["answers"]
    batches = []
    for first in range(0, len(answers), ENGINE_BATCH):
        batch = []
        for n, answer in enumerate(answers[first : first + ENGINE_BATCH], start=first):
            references = [Reference(text=t) for t in answer["references"]]
            batch += [
                CheckItem(claim=Claim(text=c), references=references, request_id=str(n),
                          claim_index=i)
                for i, c in enumerate(answer["claims"])
            ]  # fmt: skip
        batches.append(batch)
    return batches


def in_process(model_dir: Path, batches: list[list[Any]]) -> dict[str, Any]:
    from refcheck_callbacks.check.nli.checker import NLIChecker

    checker = NLIChecker(model_dir)
    checker.check_batch(batches[0][:8])  # warm-up
    before = checker.counts.pairs_requested
    started = time.perf_counter()
    labels = [v.label for batch in batches for v in checker.check_batch(batch)]
    seconds = time.perf_counter() - started
    pairs = checker.counts.pairs_requested - before
    return {"seconds": seconds, "pairs": pairs, "labels": labels, "device": checker.device}


async def _through(url: str, batches: list[list[Any]], callers: int) -> list[Any]:
    from refcheck_callbacks.check.remote import RemoteChecker
    from refcheck_callbacks.remote.options import RemoteOptions

    checkers = [RemoteChecker(url, RemoteOptions(deadline=600)) for _ in range(callers)]
    await asyncio.gather(*(c.check(batches[0][:8]) for c in checkers))  # connect, warm
    results: list[list[Any]] = [[] for _ in batches]

    async def caller(index: int) -> None:
        for b in range(index, len(batches), callers):
            results[b] = await checkers[index].check(batches[b])

    await asyncio.gather(*(caller(i) for i in range(callers)))
    return [v.label for batch in results for v in batch]


def service(model_dir: Path, batches: list[list[Any]], callers: int, gpus: float) -> dict[str, Any]:
    from refcheck_callbacks.serve.app import Scaling, ServiceArgs
    from refcheck_callbacks.serve.component import BatchSettings
    from refcheck_callbacks.serve.launch import Launch, start, stop

    launch = Launch(
        args=ServiceArgs(checker=f"nli:{model_dir}", max_request_bytes=64 * 1024 * 1024),
        checker=Scaling(
            num_cpus=0,
            num_gpus=gpus,
            batch=BatchSettings(max_batch_size=callers, batch_wait_timeout_s=0.005),
        ),
        port=next(unassigned_ports()),
    )
    names = start(launch)
    try:
        url = f"http://127.0.0.1:{launch.port}"
        started = time.perf_counter()
        labels = asyncio.run(_through(url, batches, callers))
        seconds = time.perf_counter() - started
    finally:
        stop(launch, names)
    return {"seconds": seconds, "labels": labels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--claims", type=int, default=8)
    parser.add_argument("--references", type=int, default=5)
    parser.add_argument("--callers", type=int, default=4)
    parser.add_argument("--tokenizer", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model_dir = build_model(args.size, Path(tempfile.mkdtemp()) / "nli", args.tokenizer)
    workload = build_workload(args.answers, args.claims, args.references, whole_words(model_dir))
    batches = _batches(workload)
    local = in_process(model_dir, batches)
    served = service(model_dir, batches, args.callers, 1.0 if local["device"] == "cuda" else 0.0)
    pairs = local["pairs"]
    result = {
        "size": args.size,
        "device": local["device"],
        "pairs": pairs,
        "in_process_pairs_per_s": pairs / local["seconds"],
        "service_pairs_per_s": pairs / served["seconds"],
        "service_over_in_process": local["seconds"] / served["seconds"],
        "labels_agree": local["labels"] == served["labels"],
        "callers": args.callers,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    if not result["labels_agree"]:
        sys.exit("labels through the service differ from in-process labels")


if __name__ == "__main__":
    main()
