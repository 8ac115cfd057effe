"""Train the learned reader on CPU; resumable, seeded, with leave-one-set-out folds.

    python scripts/train_reader.py                          # train on every set, export
    python scripts/train_reader.py --hold-out wice          # one fold: without WiCE, tested on it
    python scripts/train_reader.py --leave-one-set-out      # every fold, then the table
    python scripts/train_reader.py --max-steps 200          # stop at step 200; rerun to go on
    python scripts/train_reader.py --hold-out wice --score-now   # score the checkpoint so far
    python scripts/train_reader.py --hold-out summedits --corrects-embedded --run R  # a reader
        # that starts from the embedded checker's support logit and learns its corrections
    python scripts/train_reader.py --export refcheck_callbacks/check/reader/model

A run lives in `$REFCHECK_TRAINING_DIR/RUN` (default `~/.cache/refcheck-training`, outside the
repository): `plan.json`, the training pairs (`data.jsonl`, built once), `checkpoint.pt`
(written every `--checkpoint-every` steps), `progress.jsonl`, and when training is done the
exported folder (`export/`, fp16) and, for a fold, `evaluation.json`. Running the same command
again resumes where it stopped; a different plan in the same run folder is refused.
See docs/reader.md for the plan, its wall time on 2 cores and the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from refcheck_callbacks.bench.datasets import DATASET_NAMES
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.reader.checker import ReaderChecker
from refcheck_callbacks.check.reader.inputs import EvidenceRanker
from refcheck_callbacks.training import reader_data, reader_evaluation
from refcheck_callbacks.training.reader_model import (
    export,
    folder_megabytes,
    new_reader,
)
from refcheck_callbacks.training.reader_training import TrainPlan, train

CACHE = Path(os.environ.get("REFCHECK_TRAINING_DIR", "~/.cache/refcheck-training")).expanduser()


def _plans(
    args: argparse.Namespace, held_out: str | None
) -> tuple[reader_data.ReaderDataPlan, TrainPlan]:
    data = reader_data.ReaderDataPlan(
        datasets=tuple(args.datasets),
        held_out=held_out,
        labelled_per_set=args.labelled_per_set,
        synthetic_per_set=args.synthetic_per_set,
        hold_out_kinds=tuple(k for k in args.hold_out_kinds.split(",") if k),
        corrects_embedded=args.corrects_embedded,
        seed=args.seed,
    )
    training = TrainPlan(
        base=args.base,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
        threads=args.threads,
        corrects_embedded=args.corrects_embedded,
    )
    return data, training


def _examples(
    run: Path, plan: reader_data.ReaderDataPlan, ranker: EvidenceRanker
) -> list[reader_data.ReaderExample]:
    data = run / "data.jsonl"
    if data.exists():
        return reader_data.read_examples(data)
    print(f"building training pairs for {run.name} ...", file=sys.stderr)
    examples = reader_data.build_examples(plan, ranker)
    reader_data.write_examples(examples, data)
    return examples


def _checked_plan(run: Path, plans: dict[str, object]) -> None:
    path = run / "plan.json"
    text = json.dumps(plans, indent=2, sort_keys=True)
    if path.exists() and path.read_text(encoding="utf-8") != text:
        raise SystemExit(f"{run} holds a run with another plan; pass another --run")
    run.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run_once(
    args: argparse.Namespace, held_out: str | None, ranker: EvidenceRanker
) -> list[reader_evaluation.FoldScores]:
    name = args.run or ("full" if held_out is None else f"without-{held_out}")
    run = CACHE / name
    data_plan, train_plan = _plans(args, held_out)
    _checked_plan(run, {"data": data_plan.model_dump(), "training": train_plan.model_dump()})
    examples = _examples(run, data_plan, ranker)
    model, tokenizer = new_reader(train_plan.base, train_plan.seed, train_plan.corrects_embedded)
    # --score-now: no training step (the checkpoint's step is past 0), only the weights it holds
    stop = 0 if args.score_now else args.max_steps
    result = train(train_plan, examples, model, tokenizer, run, stop)
    print(
        f"{name}: step {result.steps}/{result.total_steps}, {result.examples_per_second:.2f} "
        f"examples/s this call, loss {result.last_loss}",
        file=sys.stderr,
    )
    finished = result.steps >= result.total_steps
    if not finished and not args.score_now:
        print(f"stopped early; run the same command again to resume from {run}", file=sys.stderr)
        return []
    suffix = "" if finished else f"-step-{result.steps}"
    folder = export(
        model,
        tokenizer,
        run / f"export{suffix}",
        {
            "data": data_plan.model_dump(),
            "training": train_plan.model_dump(),
            "examples": len(examples),
            "steps": result.steps,
        },
        weights=args.weights,
    )
    print(f"exported {folder} ({folder_megabytes(folder):.1f} MB)", file=sys.stderr)
    if args.export is not None:
        shutil.copytree(folder, args.export, dirs_exist_ok=True)
    if held_out is None:
        return []
    evaluation = run / f"evaluation{suffix}.json"
    if evaluation.exists():
        return [
            reader_evaluation.FoldScores.model_validate(s)
            for s in json.loads(evaluation.read_text())
        ]
    reader = ReaderChecker(folder, device="cpu", dtype=args.dtype, ranker=ranker)
    cascade = CascadeChecker(
        [CascadeStage(EmbeddedChecker(), threshold=args.cascade_margin, by="margin"), reader]
    )
    scores = reader_evaluation.evaluate_fold(
        held_out,
        {"embedded": EmbeddedChecker(), "reader": reader, "cascade": cascade},
        limit=args.eval_limit,
        seed=args.seed,
    )
    evaluation.write_text(json.dumps([s.model_dump() for s in scores], indent=2), encoding="utf-8")
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--hold-out", choices=DATASET_NAMES, help="train without this set, test on it"
    )
    which.add_argument("--leave-one-set-out", action="store_true", help="every fold in turn")
    parser.add_argument(
        "--run", help="run folder name under the cache (default: full / without-SET)"
    )
    parser.add_argument("--datasets", nargs="+", default=list(DATASET_NAMES), choices=DATASET_NAMES)
    parser.add_argument("--labelled-per-set", type=int, default=1500)
    parser.add_argument("--synthetic-per-set", type=int, default=1500)
    parser.add_argument(
        "--hold-out-kinds", default="", help="synthetic kinds to leave out, comma-separated"
    )
    parser.add_argument(
        "--base",
        default=None,
        help="model folder to start from (default: bundled MiniLM; 'tiny' for a dry run)",
    )
    parser.add_argument(
        "--corrects-embedded",
        action="store_true",
        help="train a reader that corrects the embedded checker's support logit "
        "(check/reader/prior.py)",
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1 on a shared machine)"
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, help="stop at this step (resume later)"
    )
    parser.add_argument(
        "--score-now",
        action="store_true",
        help="export and score the checkpoint as it is (mid-run: export-step-N/, "
        "evaluation-step-N.json), without training",
    )
    parser.add_argument(
        "--export", type=Path, default=None, help="also copy the exported folder here"
    )
    parser.add_argument(
        "--weights",
        default="int8",
        choices=["int8", "fp16"],
        help="the exported weights: int8 with a scale per row (what the wheel carries, read "
        "by refcheck's loaders) or fp16 (a standard model.safetensors)",
    )
    parser.add_argument(
        "--dtype",
        default="int8",
        choices=["float32", "int8"],
        help="the reader's precision when evaluating",
    )
    parser.add_argument("--cascade-margin", type=float, default=reader_evaluation.CASCADE_MARGIN)
    parser.add_argument(
        "--eval-limit", type=int, default=1000, help="claims per held-out set (and planted pairs)"
    )
    args = parser.parse_args()
    ranker = EvidenceRanker()
    folds = list(args.datasets) if args.leave_one_set_out else [args.hold_out]
    scores = [s for fold in folds for s in run_once(args, fold, ranker)]
    if scores:
        table = reader_evaluation.markdown_table(scores)
        if args.leave_one_set_out:
            (CACHE / "leave-one-set-out.md").write_text(table + "\n", encoding="utf-8")
        print(table)


if __name__ == "__main__":
    main()
