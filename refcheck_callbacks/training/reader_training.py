"""Fine-tuning the reader on CPU: seeded, checkpointed, and resumable to the same weights.

A run lives in one folder outside the repository (`~/.cache/refcheck-training/RUN`). Every
`checkpoint_every` steps the model, optimizer, schedule, torch's random state and the step are
written atomically to `checkpoint.pt`; a restarted run continues from it. The batch of step s
depends only on the seed and s (each epoch is a seeded permutation), so a run stopped and
resumed ends with the same weights as one never stopped (tests/training check this).

The loss reads the partial labels of `reader_data`: a class index is cross-entropy on that
class; `NOT_SUPPORTED` is -log(P(neutral) + P(contradiction)), unsupported either way. A
correcting reader's logits are offset by each pair's prior first (`reader.prior.offset`), as
the checker offsets them.
Progress (step, loss, examples/s) goes to `progress.jsonl` in the run folder.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from refcheck_callbacks.check.reader.inputs import MAX_LENGTH
from refcheck_callbacks.check.reader.prior import offset
from refcheck_callbacks.support.extras import require
from refcheck_callbacks.training.reader_data import NOT_SUPPORTED, ReaderExample

CHECKPOINT = "checkpoint.pt"
PROGRESS = "progress.jsonl"
MIN_EVIDENCE_TOKENS = 16
"""A claim must leave this much room to its evidence, as the NLI checker requires (longer
claims are refused there, so they are left out of training)."""


class TrainPlan(BaseModel):
    """How the reader is trained; the run folder keeps it, and a resume must match it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base: str | None = None
    """A model folder, None for the bundled MiniLM, "tiny" for a small random BERT."""
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 5e-5
    warmup_share: float = 0.06
    weight_decay: float = 0.01
    max_length: int = MAX_LENGTH
    seed: int = 0
    checkpoint_every: int = 50
    threads: int = 1
    corrects_embedded: bool = False
    """Offset the logits by each pair's prior (the pairs must carry one: `reader_data`)."""


class TrainResult(BaseModel):
    steps: int
    """Steps done in all, resumed ones included."""
    total_steps: int
    steps_this_call: int
    seconds: float
    examples_per_second: float
    last_loss: float | None


def steps_per_epoch(examples: int, batch_size: int) -> int:
    return max(1, math.ceil(examples / batch_size))


def _order(plan: TrainPlan, epoch: int, count: int) -> list[int]:
    order = list(range(count))
    random.Random(plan.seed * 1_000_003 + epoch).shuffle(order)
    return order


def _loss(torch: Any, logits: Any, targets: Any) -> Any:
    log_p = logits.float().log_softmax(dim=-1)
    exact = targets != NOT_SUPPORTED
    chosen = log_p.gather(1, targets.clamp(min=0).unsqueeze(1)).squeeze(1)
    unsupported = torch.logsumexp(log_p[:, 1:], dim=1)
    return -torch.where(exact, chosen, unsupported).mean()


class _Batches:
    """Tokenised examples, padded per batch to its longest row."""

    def __init__(self, tokenizer: Any, examples: Sequence[ReaderExample], max_length: int):
        encoded = tokenizer(
            [e.evidence for e in examples],
            [e.claim for e in examples],
            truncation="only_first",
            max_length=max_length,
        )
        self.ids: list[list[int]] = encoded["input_ids"]
        self.types: list[list[int]] = encoded["token_type_ids"]
        self.targets = [e.target for e in examples]
        self.offsets = [offset(e.prior or 0.0) for e in examples]
        self.pad = int(tokenizer.pad_token_id)

    def offset(self, torch: Any, rows: Sequence[int]) -> Any:
        return torch.tensor([self.offsets[r] for r in rows], dtype=torch.float32)

    def batch(self, torch: Any, rows: Sequence[int]) -> tuple[dict[str, Any], Any]:
        width = max(len(self.ids[r]) for r in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        types = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            n = len(self.ids[r])
            ids[i, :n] = torch.tensor(self.ids[r])
            types[i, :n] = torch.tensor(self.types[r])
            mask[i, :n] = 1
        targets = torch.tensor([self.targets[r] for r in rows], dtype=torch.long)
        return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}, targets


def fitting(
    tokenizer: Any, examples: Sequence[ReaderExample], max_length: int
) -> list[ReaderExample]:
    """The examples whose claim leaves the evidence `MIN_EVIDENCE_TOKENS` of `max_length`."""
    room = max_length - int(tokenizer.num_special_tokens_to_add(pair=True)) - MIN_EVIDENCE_TOKENS
    counts = tokenizer([e.claim for e in examples], add_special_tokens=False)["input_ids"]
    return [e for e, ids in zip(examples, counts, strict=True) if len(ids) <= room]


def _schedule(plan: TrainPlan, total: int) -> Any:
    warmup = max(1, int(total * plan.warmup_share))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def _save(path: Path, state: dict[str, Any]) -> None:
    torch = require("torch", "nli")
    partial = path.with_suffix(".partial")
    torch.save(state, partial)
    os.replace(partial, path)


def train(
    plan: TrainPlan,
    examples: Sequence[ReaderExample],
    model: Any,
    tokenizer: Any,
    run_dir: Path,
    max_steps: int | None = None,
) -> TrainResult:
    """Train `model` in place on `examples` (those whose claim fits, `fitting`), resuming from
    `run_dir`'s checkpoint if any; `max_steps` stops early (the checkpoint then holds that
    step)."""
    torch = require("torch", "nli")
    torch.set_num_threads(plan.threads)
    torch.manual_seed(plan.seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    examples = fitting(tokenizer, examples, plan.max_length)
    if plan.corrects_embedded and any(e.prior is None for e in examples):
        raise ValueError("a correcting reader trains on pairs with a prior (corrects_embedded)")
    batches = _Batches(tokenizer, examples, plan.max_length)
    per_epoch = steps_per_epoch(len(examples), plan.batch_size)
    total = per_epoch * plan.epochs
    decay = [p for n, p in model.named_parameters() if not n.endswith(("bias", "LayerNorm.weight"))]
    rest = [p for n, p in model.named_parameters() if n.endswith(("bias", "LayerNorm.weight"))]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": plan.weight_decay}, {"params": rest, "weight_decay": 0}],
        lr=plan.learning_rate,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(plan, total))
    step = 0
    checkpoint = run_dir / CHECKPOINT
    if checkpoint.exists():
        state = torch.load(checkpoint, map_location="cpu", weights_only=False)
        if state["plan"] != plan.model_dump() or state["examples"] != len(examples):
            raise ValueError(
                f"{checkpoint} was written by another plan or data; use a new run folder"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        step = int(state["step"])
    stop = total if max_steps is None else min(total, max_steps)
    started, first, loss_value = time.perf_counter(), step, None
    model.train()
    with (run_dir / PROGRESS).open("a", encoding="utf-8") as progress:
        while step < stop:
            epoch, position = divmod(step, per_epoch)
            order = _order(plan, epoch, len(examples))
            rows = order[position * plan.batch_size : (position + 1) * plan.batch_size]
            inputs, targets = batches.batch(torch, rows)
            logits = model(**inputs).logits
            if plan.corrects_embedded:
                logits = logits + batches.offset(torch, rows)
            loss = _loss(torch, logits, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            loss_value = float(loss.detach())
            if step % plan.checkpoint_every == 0 or step == stop:
                _save(
                    checkpoint,
                    {
                        "plan": plan.model_dump(), "examples": len(examples), "step": step,
                        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "torch_rng": torch.get_rng_state(),
                    },
                )  # fmt: skip
                seconds = time.perf_counter() - started
                done = (step - first) * plan.batch_size
                progress.write(
                    json.dumps(
                        {
                            "step": step,
                            "total_steps": total,
                            "loss": loss_value,
                            "examples_per_second": done / seconds if seconds else 0.0,
                            "time": time.time(),
                        }
                    )
                    + "\n"
                )
                progress.flush()
    model.eval()
    seconds = time.perf_counter() - started
    done = (step - first) * plan.batch_size
    return TrainResult(
        steps=step,
        total_steps=total,
        steps_this_call=step - first,
        seconds=seconds,
        examples_per_second=done / seconds if seconds > 0 else 0.0,
        last_loss=loss_value,
    )
