"""Grounding-model families on a device: a MiniCheck-Flan-T5-Large-sized and a DeBERTa-v3-large-
sized checker (FactCG's and MiniCheck-DeBERTa's backbone), each in its family's input format.

No weights can be downloaded, so each model is its published architecture at its published
size with random weights, built from a config and saved in a directory named like the published
model, then loaded by path through `NLIChecker`'s real code, which recognises the family from the
name: MiniCheck-Flan-T5 (T5-large, 24 + 24 layers, d_model 1024, gated-GELU d_ff 2816, 783M
parameters; "predict: " + chunk + "</s>" + claim, 500-word chunks, 2,048 tokens, read from one
decoder step) and FactCG (DeBERTa-v3-large, 24 layers, hidden 1024, 128k vocabulary, 435M; its
instruction template, 550-word chunks, 2,048 tokens). Their tokenizers are SentencePiece-style
unigram models trained on the workload's own text (8,000 pieces: close to a real vocabulary's
tokens per word for this text). Labels are noise; the compute is the real compute.

Workload: the synthetic answers of benchmarks/nli_throughput.py (claims of 8-20 words, five
references of 100-300 words each), in engine batches of 16 answers; the first batch warms up.

    python benchmarks/family_throughput.py --size smoke               # CPU smoke run
    python benchmarks/family_throughput.py --device cuda --json out.json  # see benchmarks/gpu.sh
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nli_throughput import build_workload, check_items, whole_words
from tiny_models import CORPUS, deberta_tokenizer, t5_tokenizer

SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "published": {
        "minicheck-flan-t5": {"d_model": 1024, "d_kv": 64, "d_ff": 2816, "num_layers": 24,
                              "num_decoder_layers": 24, "num_heads": 16,
                              "feed_forward_proj": "gated-gelu", "vocab_size": 32128},
        "factcg": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                   "intermediate_size": 4096, "vocab_size": 128100},
    },
    "smoke": {
        "minicheck-flan-t5": {"d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2,
                              "num_decoder_layers": 2, "num_heads": 4,
                              "feed_forward_proj": "gated-gelu", "vocab_size": 32128},
        "factcg": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "intermediate_size": 128, "vocab_size": 128100},
    },
}  # fmt: skip
DIRECTORY = {"minicheck-flan-t5": "MiniCheck-Flan-T5-Large", "factcg": "FactCG-DeBERTa-v3-Large"}
PIECES = 8000
TRAINING_TEXTS = 300
"""References the tokenizers are trained on (plus a line of every ASCII character)."""


def build(family: str, size: str, root: Path, corpus: list[str]) -> Path:
    """The family's architecture at `size`, random weights, saved under its published name."""
    import torch
    from transformers import (
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
        T5Config,
        T5ForConditionalGeneration,
    )

    torch.manual_seed(0)
    directory = root / f"{DIRECTORY[family]}-{size}"
    dims = SIZES[size][family]
    if family == "minicheck-flan-t5":
        tokenizer: Any = t5_tokenizer(corpus, PIECES)
        config = T5Config(
            **dims, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
            tie_word_embeddings=False,
        )  # fmt: skip
        model: Any = T5ForConditionalGeneration(config)
    else:
        tokenizer = deberta_tokenizer(corpus, PIECES)
        model = DebertaV2ForSequenceClassification(
            DebertaV2Config(
                **dims, num_labels=2, relative_attention=True, position_buckets=256,
                norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                position_biased_input=False, type_vocab_size=0, max_relative_positions=-1,
                layer_norm_eps=1e-7, pad_token_id=0,
            )
        )  # fmt: skip
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def run(family: str, directory: Path, workload: dict[str, Any], args: Any) -> dict[str, Any]:
    import torch

    from refcheck_callbacks.check.nli.checker import NLIChecker

    checker = NLIChecker(directory, device=args.device, batch_tokens=args.batch_tokens)
    assert checker.family.name == family, checker.family.name
    requests = check_items(workload["answers"], "references")
    batches = [
        [i for r in requests[start : start + args.engine_batch] for i in r]
        for start in range(0, len(requests), args.engine_batch)
    ]
    checker.check_batch(batches[0])  # warm-up: kernels, allocator, caches
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    claims = sum(len(b) for b in batches[1:])
    before = checker.counts.pairs_requested
    started = time.perf_counter()
    for batch in batches[1:]:
        checker.check_batch(batch)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    pairs = checker.counts.pairs_requested - before
    return {
        "family": family,
        "model": f"{DIRECTORY[family]} ({args.size} size, random weights)",
        "parameters": sum(p.numel() for p in checker.model.parameters()),
        "device": args.device,
        "dtype": str(checker.dtype),
        "max_length": checker.max_length,
        "chunk": f"{checker.segment_tokens} {'words' if checker.segment_in_words else 'tokens'}",
        "claims": claims,
        "pairs": pairs,
        "seconds": seconds,
        "claims_per_second": claims / seconds,
        "pairs_per_second": pairs / seconds,
        "peak_gpu_memory_gib": torch.cuda.max_memory_allocated() / 2**30
        if args.device.startswith("cuda")
        else None,
        "oom_retries": checker.counts.oom_retries,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="published")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--answers", type=int, default=400)
    parser.add_argument("--claims", type=int, default=8)
    parser.add_argument("--references", type=int, default=5)
    parser.add_argument("--engine-batch", type=int, default=16, help="answers per call")
    parser.add_argument("--batch-tokens", type=int, help="default: the checker's")
    parser.add_argument("--tokenizer", type=Path, help="a WordPiece tokenizer dir for the words")
    parser.add_argument("--family", action="append", choices=sorted(DIRECTORY))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from refcheck_callbacks.embeddings.minilm import bundled_minilm_path

    vocabulary = whole_words(args.tokenizer or bundled_minilm_path())
    workload = build_workload(args.answers + args.engine_batch, args.claims, args.references,
                              vocabulary)  # fmt: skip
    texts = [text for answer in workload["answers"] for text in answer["references"]]
    # Standalone label words, as real text has them: T5's "1" is one piece ("▁1").
    corpus = texts[:TRAINING_TEXTS] + CORPUS + ["0 1 " * 50] * 20
    root = Path(tempfile.mkdtemp(prefix="refcheck-families-"))
    results = []
    for family in args.family or sorted(DIRECTORY):
        directory = build(family, args.size, root, corpus)
        result = run(family, directory, workload, args)
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
