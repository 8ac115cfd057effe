"""The reader's network: the bundled MiniLM with a 3-way head, and its exported folder.

The model is a plain `AutoModelForSequenceClassification` (BERT architecture) whose
`id2label` names entailment / neutral / contradiction (`reader.inputs.LABELS`), so the NLI
family code reads it without being told (`check.nli.labels`), and `nli:PATH`, the reader
checker and `refcheck serve` all load the same folder.

Export writes the bundled tokenizer and int8 weights with a scale per row
(`check.nli.compact_weights`: 23 MB for the MiniLM reader, against 46 MB in fp16), which every
loader of ours reads into fp32; `weights="fp16"` writes a standard `model.safetensors` instead.
The int8 speed-up is taken at load time (`dtype="int8"`: dynamic quantization of every linear
layer): a dynamically quantized module cannot be saved in a form `from_pretrained` reads back.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Literal

from refcheck_callbacks.check.nli.compact_weights import COMPACT_FILE, save_compact
from refcheck_callbacks.check.reader.inputs import LABELS
from refcheck_callbacks.check.reader.prior import TRAINING_FILE
from refcheck_callbacks.embeddings.minilm import bundled_minilm_path
from refcheck_callbacks.support.extras import require

TINY = "tiny"
"""The base that builds a 2-layer, 64-wide BERT with MiniLM's tokenizer (tests, dry runs)."""
TINY_CONFIG = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "initializer_range": 0.2,
}
ExportWeights = Literal["int8", "fp16"]


def new_reader(
    base: str | None = None, seed: int = 0, corrects_embedded: bool = False
) -> tuple[Any, Any]:
    """(model, tokenizer): `base` (a folder), the bundled MiniLM when None, or `TINY`; the
    classification head (every weight, for `TINY`) is new, drawn from `seed`. A correcting
    reader's head starts at zero, so before training it reads as the embedded checker
    (`reader.prior`)."""
    model, tokenizer = _new_reader(base, seed)
    if corrects_embedded:
        torch = require("torch", "nli")
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.zero_()
    return model, tokenizer


def _new_reader(base: str | None, seed: int) -> tuple[Any, Any]:
    transformers = require("transformers", "nli")
    require("torch", "nli").manual_seed(seed)
    transformers.utils.logging.disable_progress_bar()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(bundled_minilm_path()))
    labels = {"id2label": LABELS, "label2id": {name: i for i, name in LABELS.items()}}
    if base == TINY:
        config = transformers.BertConfig(
            **TINY_CONFIG,
            vocab_size=tokenizer.vocab_size,
            pad_token_id=tokenizer.pad_token_id,
            **labels,
        )
        return transformers.AutoModelForSequenceClassification.from_config(config), tokenizer
    source = str(base or bundled_minilm_path())
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        source, num_labels=len(LABELS), **labels
    )
    return model, tokenizer


def export(
    model: Any,
    tokenizer: Any,
    folder: Path,
    training: dict[str, Any],
    weights: ExportWeights = "int8",
) -> Path:
    """The reader's folder: config, tokenizer, `TRAINING_FILE` and its weights, "int8"
    (`compact_weights`: what the wheel carries, read by our loaders) or "fp16" (a standard
    `model.safetensors` any `from_pretrained` reads)."""
    torch = require("torch", "nli")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in (folder / COMPACT_FILE, folder / "model.safetensors"):
        stale.unlink(missing_ok=True)  # one set of weights per folder
    if weights == "int8":
        save_compact(model, folder)
    else:
        half = copy.deepcopy(model).eval().to(torch.float16)
        half.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    (folder / TRAINING_FILE).write_text(json.dumps(training, indent=2, default=str) + "\n")
    return folder


def folder_megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6
