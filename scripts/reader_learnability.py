"""Can the reader learn to read one set from that set's own labelled claims?

    python scripts/reader_learnability.py --dataset summedits --epochs 3 --learning-rate 1e-4

Issue 35's reader loses to the embedded checker on the held-out sets it was tried on
(docs/reader.md). This asks the easier question beneath that one. Trained on half of a set's
documents (a seeded split by `LabelledExample.group`, so no document is on both sides) with
the product's own inputs, loss and training loop, does the reader rank the other half, and
does it even fit the half it was trained on? The answer is the AUROC of the model's own
P(entailment) on both halves: read through `nli:PATH`, one pair per claim, with no stated-fact
screen, so it measures the reading alone.

The run folder (`$REFCHECK_TRAINING_DIR/learnability-SET`, or `--run`) resumes like any
training run; other settings need another `--run`, as `scripts/train_reader.py` does.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from sklearn.metrics import roc_auc_score

from refcheck_callbacks.bench.datasets import DATASET_NAMES, LabelledExample, load_dataset
from refcheck_callbacks.bench.runner import subsample
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.check.reader.inputs import MAX_LENGTH, EvidenceRanker
from refcheck_callbacks.training.reader_data import ReaderExample, labelled_pairs
from refcheck_callbacks.training.reader_model import export, new_reader
from refcheck_callbacks.training.reader_training import TrainPlan, train
from refcheck_callbacks.types import Label

CACHE = Path(os.environ.get("REFCHECK_TRAINING_DIR", "~/.cache/refcheck-training")).expanduser()


def halves(
    examples: list[LabelledExample], seed: int
) -> tuple[list[LabelledExample], list[LabelledExample]]:
    """(training half, held-out half): every group on one side, drawn with `seed`."""
    groups = sorted({example.group for example in examples})
    random.Random(seed).shuffle(groups)
    trained = set(groups[: len(groups) // 2])
    return (
        [e for e in examples if e.group in trained],
        [e for e in examples if e.group not in trained],
    )


def auroc(reader: NLIChecker, pairs: list[ReaderExample]) -> float:
    """AUROC of the reader's P(entailment) against "supported" (target 0) over `pairs`."""
    rows = reader.classify_pairs([p.evidence for p in pairs], [p.claim for p in pairs])
    supported = [p.target == 0 for p in pairs]
    return float(roc_auc_score(supported, [row[Label.ENTAILMENT] for row in rows]))


def base_rate_loss(pairs: list[ReaderExample]) -> float:
    """The loss of a reader that learned only the share of supported claims (binary entropy):
    a training loss that stays here has learned nothing about the pairs."""
    share = sum(p.target == 0 for p in pairs) / len(pairs)
    if share in (0.0, 1.0):
        return 0.0
    return -(share * math.log(share) + (1 - share) * math.log(1 - share))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=DATASET_NAMES, required=True)
    parser.add_argument("--limit", type=int, default=2000, help="training claims at most")
    parser.add_argument("--eval-limit", type=int, default=500, help="claims scored per half")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run", help="run folder name under the cache (default: learnability-SET)")
    args = parser.parse_args()
    trained, held_out = halves(load_dataset(args.dataset), args.seed)
    ranker = EvidenceRanker()
    train_pairs = labelled_pairs(subsample(trained, args.limit, args.seed), ranker)
    run = CACHE / (args.run or f"learnability-{args.dataset}")
    plan = TrainPlan(
        epochs=args.epochs, learning_rate=args.learning_rate, threads=args.threads, seed=args.seed
    )
    model, tokenizer = new_reader(None, args.seed)
    result = train(plan, train_pairs, model, tokenizer, run)
    folder = export(model, tokenizer, run / "export", {"training": plan.model_dump()}, "fp16")
    reader = NLIChecker(folder, family="nli", device="cpu", dtype="float32", max_length=MAX_LENGTH)
    seen = random.Random(args.seed).sample(train_pairs, min(args.eval_limit, len(train_pairs)))
    unseen = labelled_pairs(subsample(held_out, args.eval_limit, args.seed), ranker)
    report = {
        "dataset": args.dataset,
        "training_claims": len(train_pairs),
        "steps": result.steps,
        "last_loss": result.last_loss,
        "base_rate_loss": base_rate_loss(train_pairs),
        "examples_per_second": result.examples_per_second,
        "auroc_training_half": auroc(reader, seen),
        "auroc_held_out_half": auroc(reader, unseen),
        "held_out_claims": len(unseen),
        "plan": plan.model_dump(),
    }
    (run / "learnability.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
