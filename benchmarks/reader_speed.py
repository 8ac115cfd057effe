"""The learned reader's speed on CPU: training examples/s and reading pairs/s, fp32 and int8,
beside the embedded checker on the same claims, in one run.

The reader is the bundled MiniLM with a fresh 3-way head, exported as training exports it
(int8 folder): its weights do not change the compute, so the figures hold for a trained one.
The claims are the first `--claims` of a labelled set with their references, so the evidence
(the embedded checker's best segments) is as long as real evidence. Also reported: the share
of those claims the cascade `embedded[margin,T]>reader` sends to the reader.

    flock /tmp/cpu.lock python benchmarks/reader_speed.py --threads 1
    flock /tmp/cpu.lock python benchmarks/reader_speed.py --threads 2 --train-steps 6

Results are in docs/reader.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch

from refcheck_callbacks.bench.datasets import load_dataset
from refcheck_callbacks.check.cascade import CascadeStage
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.reader.checker import ReaderChecker
from refcheck_callbacks.check.reader.inputs import EvidenceRanker
from refcheck_callbacks.training.reader_data import ReaderExample
from refcheck_callbacks.training.reader_evaluation import CASCADE_MARGIN
from refcheck_callbacks.training.reader_model import export, folder_megabytes, new_reader
from refcheck_callbacks.training.reader_training import TrainPlan, train
from refcheck_callbacks.types import CheckItem, Claim, Reference


def _items(dataset: str, count: int) -> list[CheckItem]:
    examples = load_dataset(dataset)[:count]
    return [
        CheckItem(
            claim=Claim(text=e.claim),
            references=tuple(Reference(text=t, id=str(i)) for i, t in enumerate(e.references)),
            request_id=e.example_id,
            claim_index=0,
        )
        for e in examples
    ]


def _timed(checker: object, items: list[CheckItem]) -> float:
    started = time.perf_counter()
    checker.check_batch(items)  # type: ignore[attr-defined]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="wice")
    parser.add_argument("--claims", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train-steps", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    items = _items(args.dataset, args.claims)
    ranker = EvidenceRanker()
    with tempfile.TemporaryDirectory() as scratch:
        model, tokenizer = new_reader()
        folder = export(model, tokenizer, Path(scratch) / "reader", {"benchmark": True})
        print(f"exported int8 folder: {folder_megabytes(folder):.1f} MB")

        embedded = EmbeddedChecker()
        embedded.preload()
        embedded_seconds = _timed(embedded, items)
        print(f"embedded: {len(items) / embedded_seconds:.1f} claims/s")
        stage = CascadeStage(embedded, threshold=CASCADE_MARGIN, by="margin")
        escalated = sum(stage.passes_on(v) for v in embedded.check_batch(items))
        print(f"cascade margin {CASCADE_MARGIN}: {escalated}/{len(items)} claims to the reader")
        for dtype in ("float32", "int8"):
            reader = ReaderChecker(folder, device="cpu", dtype=dtype, ranker=ranker)
            reader.check_batch(items[:4])  # warm-up
            seconds = _timed(reader, items)
            print(
                f"reader {dtype}: {len(items) / seconds:.1f} pairs/s "
                f"({seconds / embedded_seconds:.0f}x the embedded checker's time)"
            )

        if args.train_steps:
            examples = []
            for item in items:
                segments = ranker.best(
                    item.claim.text, ranker.prepare([r.text for r in item.references])
                )
                examples.append(
                    ReaderExample(
                        evidence=" ".join(s.text for s in segments), claim=item.claim.text,
                        target=0, dataset=args.dataset, kind="labelled",
                    )
                )  # fmt: skip
            plan = TrainPlan(
                batch_size=args.batch_size, threads=args.threads, checkpoint_every=10_000
            )
            model, tokenizer = new_reader()
            result = train(
                plan, examples, model, tokenizer, Path(scratch) / "run", args.train_steps
            )
            encoded = tokenizer(
                [e.evidence for e in examples],
                [e.claim for e in examples],
                truncation="only_first",
                max_length=plan.max_length,
            )
            mean = sum(map(len, encoded["input_ids"])) / len(examples)
            print(
                f"training: {result.examples_per_second:.2f} examples/s over {result.steps} steps "
                f"of {plan.batch_size} (mean {mean:.0f} tokens a pair, {args.threads} thread(s))"
            )


if __name__ == "__main__":
    main()
