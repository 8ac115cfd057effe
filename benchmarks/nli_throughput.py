"""NLI checking throughput: our NLIChecker against the `refchecker` package's own NLIChecker.

Both read the same local model directory and the same workload: answers x claims x references
of 100-300 words, pre-split into the same <= 200-word segments (RefChecker's segment length),
so both score exactly the same (claim, segment) pairs. RefChecker runs in its own virtualenv
(it pins transformers < 5), driven through its public `check()` with `is_joint=False` and
`merge_psg=True`, every answer in one call (its most favourable use). We run the workload the
way the monitor hands it over: batches of 16 answers.

No weights can be downloaded here, so the model is a RoBERTa-architecture classifier built from
a config with random weights (sizes below), saved with `save_pretrained`, with the bundled
MiniLM WordPiece tokenizer. Its id2label is entailment / neutral / contradiction in that order,
the order RefChecker hard-codes. Random weights make the labels meaningless but the compute
and the agreement check real.

    python benchmarks/nli_throughput.py            # the full run (a few minutes on 2 cores)
    python benchmarks/nli_throughput.py --quick    # a smoke run
    python benchmarks/nli_throughput.py --size large --device cuda   # see benchmarks/gpu.sh

This one file also serves as the driver inside RefChecker's virtualenv (`--refchecker-driver`),
so it imports only the standard library at top level.

Besides our default (fp32) run, two runs score in reduced precision with fp32 re-checks of
near-ties (`recheck_in_fp32=True`; see refcheck_callbacks/check/nli/precision.py): bf16
(`dtype="bfloat16"`, eager attention on a CPU) and int8 (`dtype="int8"`: every nn.Linear
dynamically quantized, per-channel weights; CPU only, so skipped on other devices).
`--no-recheck` runs them without re-checks instead: their raw speed and how many labels move.

Measured 2026-11-21 on the shared 2-core dev machine (AMD EPYC, AVX-512 with BF16 and VNNI)
under the shared CPU lock, one thread, 200 answers x 8 claims x 5 references = 12,400 pairs:

    python benchmarks/nli_throughput.py --threads 1 --skip-top-k                 # 15:38-15:41
    python benchmarks/nli_throughput.py --size medium --threads 1 --skip-top-k   # 15:41-16:02

| model (hidden, layers) | RefChecker | ours fp32 | bf16 + re-checks | int8 + re-checks |
|---|---|---|---|---|
| small (128, 2) | 52.3 s | 33.3 s, 1.57x | 21.7 s, 2.41x | 22.8 s, 2.30x |
| medium (256, 4) | 289.3 s | 211.5 s, 1.37x | 351.8 s, 0.82x | 313.7 s, 0.92x |
(x: RefChecker's time over ours.) Answers/s: small 3.8, 6.0, 9.2, 8.8; medium 0.69, 0.95, 0.57,
0.64; pairs/s small 237, 373, 570, 545.

With torch's default two threads (`python benchmarks/nli_throughput.py --skip-top-k`, small,
16:33-16:37): RefChecker 43.6 s wall (81.1 CPU s), ours fp32 24.5 s (1.78x), bf16 + re-checks
16.8 s (2.60x wall, 2.64x CPU; 11.9 answers/s against 4.6), int8 + re-checks 18.5 s (2.35x).

Labels were identical to RefChecker's on every claim (1,600) and every compared pair (1,232) in
every run. So the 3x target is not met at either size. Small: the re-check runs re-scored 640
of 12,528 pairs (warm-up included) in fp32, 256 to calibrate and 384 audits, no near-tie; bf16
moved no probability by more than 0.00024 and int8 by 0.00069 (tie margins 0.0019, 0.0058),
far below this model's margins (its top two about 0.0135 apart). Medium: every one of the
12,528 pairs was re-scored in fp32, so both runs cost more than fp32 alone. This random model's
probabilities are nearly uniform and its two likeliest labels a median 0.00035 apart (10% of
176 pairs below 0.00006), while bf16 moved probabilities by up to 0.00097 and int8 by 0.0020
(tie margins 0.0078, 0.016): every pair is a near-tie that reduced precision could flip, and
the guard re-scores it. A trained NLI model's margins are mostly far wider; this benchmark has
none to measure that on. Without re-checks (16:16-16:24, `--size medium --threads 1
--skip-top-k --skip-refchecker --no-recheck`): fp32 224.8 s, bf16 120.8 s (1.86x faster than
our fp32; 2.40x against RefChecker's 289.3 s from the run above), int8 107.6 s (2.09x; 2.69x),
but bf16 alone gave 13.7% of the 1,232 sampled pairs another label than fp32 and int8 alone
39.9% (and 1.4% of the 1,600 claims). So even reduced precision without re-checks would not
reach 3x on this model.

Tried and not kept (all under the lock, one thread):
- A head centred and scaled on sample pairs, so labels and margins spread as a trained head's
  do: the random encoder's pooled vectors barely differ between inputs, so the scaled head
  amplified bf16 and int8 noise as much as the signal (largest probability error 1.0) and every
  pair was re-checked again (small: RefChecker 59.4 s, fp32 38.6 s, bf16 60.1 s, int8 62.7 s).
- Attention implementation per precision, whole checks (CPU s, two rounds; small: 40 answers
  with re-checks, medium: 20 answers without): bf16 sdpa 5.55 / 5.76 vs eager 5.39 / 5.66
  (small), 11.9 / 12.0 vs 11.2 / 10.8 (medium), so bf16 on a CPU now loads eager; int8 (fp32
  attention) sdpa 5.30 / 5.21 vs eager 6.68 / 8.42 (small), 9.7 / 10.4 vs 10.7 / 13.6 (medium),
  so int8 keeps sdpa; fp32 7.3 / 7.4 (small), 20.3 / 22.2 (medium).
- A smaller token budget for the reduced precisions: 4,096 or 2,048 tokens ran within 5% of
  8,192 either way (medium int8: 9.7 / 9.1 and 9.7 / 9.4 against 9.7 / 10.4 CPU s).
- Our own int8 linear layer on `torch._int_mm` with per-token activation scales: forward pass
  (48 pairs x 168 tokens) 88 ms against torch.ao's 76 ms (small), 480 against 418 ms (medium);
  in a bf16 model around it, 119 and 663 ms. Its separate quantize and rescale steps cost more
  than the int8 product saves. Per-channel against per-tensor weight scales in torch.ao: the
  same time (within 5%) and error (0.0016 against 0.0017, medium).
- Where the int8 forward pass goes (medium, profiler): int8 products 52%, fp32 flash attention
  24%, GELU 18%; bf16: products 57%, attention 25%, GELU 8%; fp32: products 78%.
- Earlier sessions: ONNX Runtime fp32 (5.9-7.0 s against torch's 6.3-6.7 s on 2,424 pairs; its
  transformer fusions 8.0 s) and torch.compile (6.05 s against 6.41 s after a 27.5 s compile)
  were not measurably faster. Stopping a claim at its first entailing segment was not built:
  the small model labels no pair Entailment. Top-3 preselection cut pairs by 61% but ran at
  0.56x RefChecker (101.4 s, small, one thread): its MiniLM embedding costs more than this toy
  NLI model. With torch's default two threads (small, 13:32-13:38, before int8 and eager bf16
  attention): RefChecker 36.5 s wall, ours fp32 21.0 s (1.74x), bf16 + re-checks 15.2 s (2.40x).
- A profile of our fp32 side (40 answers, one thread) puts 91-94% of its time in the model's
  forward pass; padding is near the floor (2.07M padded tokens for 2.02M real, RefChecker 2.84M).
- Session 4 (2026-11-21, 17:15-17:35, under the lock), bf16 + re-checks, small model:
  - torch.compile of the bf16 model (inductor, `freezing=True`, eager attention), forward
    passes over four batch shapes of about 8k tokens, one thread: 0.88x eager bf16 with
    dynamic shapes (28 s to compile), 0.81x with static ones (35 s). Not kept.
  - Two worker processes of one thread each, each checking half of 48 answers, against one
    process with two threads checking all 48 (twice): 4.2 / 4.6 s and 4.0 / 4.0 s wall
    against 4.0 / 4.2 s. Busy side by side, the two one-thread processes each ran about 20%
    slower than one alone, so the two-thread process already gets what the two cores give
    (forward passes alone: 1.7x one thread). Not built.
  - Where a two-thread check goes (48 answers, cProfile, 4.7 s): the model's forward passes
    83-85% (linear layers 1.79 s, attention products and softmax 0.80 s, GELU 0.29 s, layer
    norm 0.16 s), tokenizing 0.49 s (10%), padding and merging the rest.
  - So 3x is out of reach on this CPU with identical labels: a third of RefChecker's two-thread
    43.6 s is 14.5 s, and the forward passes alone (85% of 16.8 s, 14.3 s) plus tokenizing
    each text once (10%, 1.7 s) already take 16 s: at most 2.7x. On one thread the forward
    passes alone (90% of 21.7 s, 19.5 s) exceed a third of 52.3 s (17.4 s). The forward pass
    cannot shrink without changing labels: padding is at the floor, every pair must be scored
    (the model labels no pair Entailment, so no claim can stop early), bf16 is the fastest
    precision that keeps labels (int8 runs slower after its re-checks), and the fusion
    compilers tried (torch.compile, ONNX Runtime) ran no faster.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REFCHECKER_VENV = HERE / ".venv-refchecker"
REFCHECKER_VERSION = "0.2.17"
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}
SIZES: dict[str, dict[str, int]] = {
    # hidden, layers, heads, intermediate: "small" keeps the shared 2-core CPU run to minutes.
    "small": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 512},
    "medium": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
               "intermediate_size": 1024},
    "large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
              "intermediate_size": 4096},
}  # fmt: skip
SEGMENT_WORDS = 200
REDUCED = {"bf16": "bfloat16", "int8": "int8"}
"""Reduced-precision runs, each with fp32 re-checks of near-ties: report key -> dtype."""
PAIR_SAMPLE_ANSWERS = 20
"""Answers whose pairs are also labelled one pair at a time, unmerged, for agreement."""


# ---------------------------------------------------------------- workload (stdlib only)
def _sentence(rng: random.Random, vocabulary: list[str], low: int, high: int) -> str:
    words = rng.choices(vocabulary, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def _reference(rng: random.Random, vocabulary: list[str]) -> str:
    target, sentences, count = rng.randint(100, 300), [], 0
    while count < target:
        sentence = _sentence(rng, vocabulary, 8, 25)
        sentences.append(sentence)
        count += len(sentence.split())
    return " ".join(sentences)


def build_workload(
    answers: int, claims: int, references: int, vocabulary: list[str], seed: int = 7
) -> dict[str, Any]:
    """Claims and reference texts per answer; claims reuse reference words, like real answers."""
    rng = random.Random(seed)
    out = []
    for _ in range(answers):
        texts = [_reference(rng, vocabulary) for _ in range(references)]
        pool = " ".join(texts).split()
        out.append(
            {
                "claims": [
                    " ".join(rng.choices(pool, k=rng.randint(8, 20))).capitalize() + "."
                    for _ in range(claims)
                ],
                "references": texts,
            }
        )
    return {"answers": out}


# ---------------------------------------------------------------- RefChecker side
def ensure_refchecker_venv() -> Path:
    """RefChecker's virtualenv, created on first use: the CPU torch wheel, then refchecker."""
    python = REFCHECKER_VENV / "bin" / "python"
    probe = [str(python), "-c", "import refchecker.checker.nli_checker"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    import torch  # the same torch build as ours, so the comparison is of the checkers

    torch_version = torch.__version__.split("+")[0]
    subprocess.run([sys.executable, "-m", "venv", str(REFCHECKER_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"torch=={torch_version}"], check=True)
    subprocess.run([*pip, f"refchecker=={REFCHECKER_VERSION}"], check=True)
    return python


def refchecker_driver(workload_path: str, model_dir: str, device: str) -> None:
    """Runs inside RefChecker's virtualenv; prints timings and labels as JSON."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from refchecker.checker import NLIChecker  # type: ignore[import-not-found]

    workload = json.loads(Path(workload_path).read_text())
    answers, warmup = workload["answers"], workload["warmup"]
    checker = NLIChecker(model=model_dir, device=device, batch_size=16)
    checker.check([a["claims"] for a in warmup], [a["segments"] for a in warmup], is_joint=False)
    claims = [a["claims"] for a in answers]
    segments = [a["segments"] for a in answers]
    started, cpu_started = time.perf_counter(), time.process_time()
    labels = checker.check(claims, segments, is_joint=False, merge_psg=True)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    sample = answers[:PAIR_SAMPLE_ANSWERS]
    pairs = [(c, s) for a in sample for c in a["claims"] for s in a["segments"]]
    pair_labels = checker._check(claims=[c for c, _ in pairs], references=[s for _, s in pairs])
    print(
        json.dumps(
            {"seconds": elapsed, "cpu_seconds": cpu, "labels": labels, "pair_labels": pair_labels}
        )
    )


def run_refchecker(workload_path: Path, model_dir: Path, device: str) -> dict[str, Any]:
    python = ensure_refchecker_venv()
    command = [str(python), __file__, "--refchecker-driver", str(workload_path), str(model_dir)]
    env = {**os.environ, "TQDM_DISABLE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [*command, "--device", device], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"refchecker driver failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------- our side
def build_model(size: str, directory: Path, tokenizer_dir: Path | None = None) -> Path:
    """A random-weight RoBERTa classifier of the given size, saved with save_pretrained."""
    if (directory / "config.json").exists():
        return directory
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, RobertaConfig

    from refcheck_callbacks.embeddings.minilm import bundled_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir or bundled_minilm_path())
    config = RobertaConfig(
        vocab_size=tokenizer.vocab_size,
        max_position_embeddings=514,
        pad_token_id=tokenizer.pad_token_id,
        # The WordPiece tokenizer marks the second sequence with token type 1.
        type_vocab_size=2,
        id2label=ID2LABEL,
        label2id={v: k for k, v in ID2LABEL.items()},
        **SIZES[size],
    )
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def whole_words(model_dir: Path) -> list[str]:
    """Words the tokenizer keeps whole: text of about one token per word, as English has."""
    from transformers import AutoTokenizer

    vocabulary = AutoTokenizer.from_pretrained(model_dir).get_vocab()
    return sorted(w for w in vocabulary if w.isascii() and w.isalpha() and len(w) >= 3)


def presplit(workload: dict[str, Any]) -> None:
    """Each answer's references as the same <= 200-word segments for both checkers."""
    from refcheck_callbacks.check.segments import segment_references

    for answer in workload["answers"] + workload["warmup"]:
        segments = segment_references(answer["references"], SEGMENT_WORDS, overlap_tokens=0)
        answer["segments"] = [segment.text for segment in segments]


def check_items(answers: list[dict[str, Any]], field: str = "segments") -> list[list[Any]]:
    """Each answer's claims as checker items, the texts under `field` as references."""
    from refcheck_callbacks.types import CheckItem, Claim, Reference

    return [
        [
            CheckItem(
                claim=Claim(text=claim),
                references=[Reference(text=s) for s in answer[field]],
                request_id=str(n),
                claim_index=i,
            )
            for i, claim in enumerate(answer["claims"])
        ]
        for n, answer in enumerate(answers)
    ]


def run_ours(
    workload: dict[str, Any],
    model_dir: Path,
    *,
    device: str,
    top_k: int | None,
    batch: int,
    batch_tokens: int | None,
    reduced: str | None = None,
    recheck: bool = True,
) -> dict[str, Any]:
    """Our checker over the workload in engine batches; `reduced`: in that dtype, with fp32
    re-checks of near-ties unless `recheck` is off."""
    from refcheck_callbacks.check.nli.checker import NLIChecker

    precision: dict[str, Any] = {"dtype": reduced, "recheck_in_fp32": recheck} if reduced else {}
    # segment_tokens above any 200-word segment: the pre-split segments are used as they are.
    checker = NLIChecker(
        model_dir, device=device, top_k_segments=top_k, segment_tokens=500,
        batch_tokens=batch_tokens, **precision,
    )  # fmt: skip
    checker.check_batch([i for r in check_items(workload["warmup"]) for i in r])
    requests = check_items(workload["answers"])
    before = checker.counts.pairs_requested
    started, cpu_started = time.perf_counter(), time.process_time()
    verdicts = []
    for first in range(0, len(requests), batch):
        verdicts += checker.check_batch([i for r in requests[first : first + batch] for i in r])
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    pairs = checker.counts.pairs_requested - before
    sample = workload["answers"][:PAIR_SAMPLE_ANSWERS]
    flat = [(c, s) for a in sample for c in a["claims"] for s in a["segments"]]
    scored, rechecked = checker.counts.pairs_scored, checker.counts.pairs_rechecked
    probabilities = checker.classify_pairs([s for _, s in flat], [c for c, _ in flat])
    guard = checker.tie_guard
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "pairs": pairs,
        # Warm-up included: the guard calibrates on the first pairs it sees, wherever they are.
        "pairs_scored": scored,
        "pairs_rechecked_in_fp32": rechecked,
        "tie_margin": guard.tie_margin if guard else None,
        "max_reduced_error": guard.max_error if guard else None,
        "labels": [v.label.value.capitalize() if v.label else None for v in verdicts],
        "pair_labels": [max(p, key=p.__getitem__).value.capitalize() for p in probabilities],
    }


def progress(message: str) -> None:
    print(f"[nli_throughput {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _agreement(ours: list[Any], theirs: list[Any]) -> float:
    return sum(a == b for a, b in zip(ours, theirs, strict=True)) / max(1, len(ours))


def model_flops(model_dir: Path, workload: dict[str, Any], max_length: int = 512) -> float:
    """Forward FLOPs of the workload's pairs on real (unpadded) tokens.

    Per pair of T tokens: 2 x (non-embedding parameters) x T for the matrix products, plus
    4 x layers x hidden x T^2 for attention scores and their weighted sum.
    """
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    h, layers, inner = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    # Per layer: Q, K, V, output projections and the two feed-forward matrices; plus the head.
    parameters = layers * (4 * h * h + 2 * h * inner) + h * h + h * config.num_labels
    flat = [(s, c) for a in workload["answers"] for c in a["claims"] for s in a["segments"]]
    lengths = [
        len(ids)
        for ids in tokenizer(
            [s for s, _ in flat], [c for _, c in flat], truncation="only_first",
            max_length=max_length,
        )["input_ids"]
    ]  # fmt: skip
    return sum(2 * parameters * t + 4 * layers * h * t * t for t in lengths)


def padded_tokens(
    model_dir: Path, workload: dict[str, Any], batch_tokens: int | None
) -> dict[str, int]:
    """Tokens each checker feeds its model, padding included: where a CPU saving comes from.

    RefChecker: batches of 16 pairs in input order, padded to the longest; ours: sorted and
    packed by the token budget, padded to a multiple of 8.
    """
    from transformers import AutoTokenizer

    from refcheck_callbacks.check.nli.pair_batching import TokenBudget, padded_length

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    flat = [(s, c) for a in workload["answers"] for c in a["claims"] for s in a["segments"]]
    lengths = [
        len(ids) for ids in tokenizer([s for s, _ in flat], [c for _, c in flat])["input_ids"]
    ]
    theirs = sum(16 * max(lengths[i : i + 16]) for i in range(0, len(lengths), 16))
    budget, ours, cursor = TokenBudget(batch_tokens or 8_192, 512), 0, 0
    ordered = sorted(lengths, reverse=True)
    while cursor < len(ordered):
        rows = budget.rows_for(ordered[cursor])
        batch = ordered[cursor : cursor + rows]
        ours += len(batch) * padded_length(batch[0], budget.pad_multiple)
        cursor += rows
    return {"real": sum(lengths), "refchecker": theirs, "ours": ours}


def _peak_bf16_flops(device: str, peak_tflops: float | None) -> float | None:
    """The card's dense bf16 peak: given, or looked up by its name."""
    if peak_tflops:
        return peak_tflops * 1e12
    if not device.startswith("cuda"):
        return None
    import torch

    name = torch.cuda.get_device_name()
    known = {"H200": 989, "H100": 989, "A100": 312, "L40S": 362, "L4": 121, "A10G": 125}
    return next((tflops * 1e12 for key, tflops in known.items() if key in name), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--claims", type=int, default=8)
    parser.add_argument("--references", type=int, default=5)
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--top-k", type=int, default=3, help="preselection run's k")
    parser.add_argument("--engine-batch", type=int, default=16, help="answers per call")
    parser.add_argument("--batch-tokens", type=int, help="default: the checker's")
    parser.add_argument("--quick", action="store_true", help="20 answers: a smoke run")
    parser.add_argument("--skip-refchecker", action="store_true", help="ours only (GPU runs)")
    parser.add_argument("--skip-top-k", action="store_true", help="no preselection run")
    parser.add_argument("--skip-bf16", action="store_true", help="no bf16 + fp32 re-check run")
    parser.add_argument(
        "--skip-int8", action="store_true", help="no int8 + fp32 re-check run (CPU only anyway)"
    )
    parser.add_argument(
        "--no-recheck",
        action="store_true",
        help="bf16 / int8 runs without fp32 re-checks: their raw speed and how many labels move",
    )
    parser.add_argument("--tokenizer", type=Path, help="tokenizer dir (default: bundled MiniLM)")
    parser.add_argument("--peak-tflops", type=float, help="the device's bf16 peak, for MFU")
    parser.add_argument(
        "--threads",
        type=int,
        help="torch threads for both checkers; 1 gives steady CPU times on a shared machine, "
        "where a waiting second thread burns CPU time while its partner is descheduled",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    answers = 20 if args.quick else args.answers
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # RefChecker's process inherits it
        import torch

        torch.set_num_threads(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    model_dir = build_model(
        args.size, Path(tempfile.gettempdir()) / f"refcheck-nli-{args.size}", args.tokenizer
    )
    vocabulary = whole_words(model_dir)
    workload = build_workload(answers, args.claims, args.references, vocabulary)
    warmup = build_workload(2, args.claims, args.references, vocabulary, seed=99)
    workload["warmup"] = warmup["answers"]
    presplit(workload)
    workload_path = Path(tempfile.mkdtemp()) / "workload.json"
    workload_path.write_text(json.dumps(workload))
    progress(f"model {model_dir}; workload {workload_path}")
    theirs = None if args.skip_refchecker else run_refchecker(workload_path, model_dir, args.device)
    if theirs is not None:
        progress(f"refchecker: {theirs['seconds']:.1f}s, {theirs['cpu_seconds']:.1f} CPU s")
    run = {"device": args.device, "batch": args.engine_batch, "batch_tokens": args.batch_tokens}
    ours = run_ours(workload, model_dir, top_k=None, **run)
    progress(f"ours: {ours['seconds']:.1f}s, {ours['cpu_seconds']:.1f} CPU s")
    reduced: dict[str, dict[str, Any]] = {}
    for key, dtype in REDUCED.items():
        if getattr(args, f"skip_{key}") or (key == "int8" and args.device != "cpu"):
            continue
        reduced[key] = run_ours(
            workload, model_dir, top_k=None, reduced=dtype, recheck=not args.no_recheck, **run
        )
        progress(f"ours, {key}: {reduced[key]['seconds']:.1f}s")
    ours_top_k = None if args.skip_top_k else run_ours(workload, model_dir, top_k=args.top_k, **run)
    if ours_top_k is not None:
        progress(f"ours, top-{args.top_k} preselection: {ours_top_k['seconds']:.1f}s")

    pairs = ours["pairs"]
    flops = model_flops(model_dir, workload)
    report: dict[str, Any] = {
        "model": f"RoBERTa {args.size} {SIZES[args.size]} (random weights), {args.device}",
        "workload": f"{answers} answers x {args.claims} claims x {args.references} references",
        "threads": args.threads or "torch default",
        "pairs": pairs,
        "ours": _rates(ours, answers, pairs),
        "ours_model_tflops_per_s": flops / ours["seconds"] / 1e12,
    }
    peak = _peak_bf16_flops(args.device, args.peak_tflops)
    if peak:
        report["ours_mfu_vs_bf16_peak"] = flops / ours["seconds"] / peak
    report["entailment_share"] = _entailment_share(ours, workload)
    suffix = "" if args.no_recheck else "_recheck"
    for key, result in reduced.items():
        kept = ("pairs_scored", "pairs_rechecked_in_fp32", "tie_margin", "max_reduced_error")
        report[f"ours_{key}{suffix}"] = {
            **_rates(result, answers, pairs),
            **{name: result[name] for name in kept},
            "claim_labels_equal_ours_fp32": _agreement(result["labels"], ours["labels"]),
            "pair_labels_equal_ours_fp32": _agreement(result["pair_labels"], ours["pair_labels"]),
        }
    if ours_top_k is not None:
        report["ours_top_k"] = _rates(ours_top_k, answers, ours_top_k["pairs"])
        report["ours_top_k"]["k"] = args.top_k
    if theirs is not None:
        their_labels = [label for answer in theirs["labels"] for label in answer]
        report["refchecker"] = _rates(theirs, answers, pairs)
        report["padded_tokens"] = padded_tokens(model_dir, workload, args.batch_tokens)
        labelled = {"": ours, **{f"_{key}{suffix}": result for key, result in reduced.items()}}
        timed = {**labelled, **({"_top_k": ours_top_k} if ours_top_k is not None else {})}
        for key, result in timed.items():
            report[f"speedup{key}_wall"] = theirs["seconds"] / result["seconds"]
            report[f"speedup{key}_cpu"] = theirs["cpu_seconds"] / result["cpu_seconds"]
        for key, result in labelled.items():
            report[f"claim_label_agreement{key}"] = _agreement(result["labels"], their_labels)
            report[f"pair_label_agreement{key}"] = _agreement(
                result["pair_labels"], theirs["pair_labels"]
            )
        report["pairs_compared"] = len(ours["pair_labels"])
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _entailment_share(ours: dict[str, Any], workload: dict[str, Any]) -> dict[str, float]:
    """How often the model says Entailment: what stopping at a claim's first entailing segment
    could save. Pairs: the pair-level sample; claims: any segment entails (merged label)."""
    pair_labels, claim_labels = ours["pair_labels"], ours["labels"]
    sample = workload["answers"][:PAIR_SAMPLE_ANSWERS]
    return {
        "pairs": pair_labels.count("Entailment") / max(1, len(pair_labels)),
        "claims": claim_labels.count("Entailment") / max(1, len(claim_labels)),
        "sample_pairs": float(sum(len(a["claims"]) * len(a["segments"]) for a in sample)),
    }


def _rates(run: dict[str, Any], answers: int, pairs: int) -> dict[str, float]:
    """Rates by wall clock, and by the process's CPU time (steadier on a shared machine)."""
    wall, cpu = run["seconds"], run["cpu_seconds"]
    return {
        "seconds": wall,
        "answers_per_s": answers / wall,
        "pairs_per_s": pairs / wall,
        "cpu_seconds": cpu,
        "answers_per_cpu_s": answers / cpu,
    }


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--refchecker-driver":
        device_arg = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
        refchecker_driver(sys.argv[2], sys.argv[3], device_arg)
    else:
        main()
