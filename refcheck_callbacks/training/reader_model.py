"""The reader's network: the bundled MiniLM with a 3-way head, and its exported folder.

The model is a plain `AutoModelForSequenceClassification` (BERT architecture) whose
`id2label` names entailment / neutral / contradiction (`reader.inputs.LABELS`), so the NLI
family code reads it without being told (`check.nli.labels`), and `nli:PATH`, the reader
checker and `refcheck serve` all load the same folder.

Export writes fp16 weights (half of fp32 on disk; `from_pretrained` loads them into fp32) and
the bundled tokenizer. The int8 speed-up is taken at load time (`dtype="int8"`: dynamic
quantization of every linear layer): a dynamically quantized module cannot be saved in a form
`from_pretrained` reads back.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from refcheck_callbacks.check.reader.inputs import LABELS
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
TRAINING_FILE = "refcheck_reader.json"
"""Beside the weights: how the reader was trained (the plan, the data, the step)."""


def new_reader(base: str | None = None, seed: int = 0) -> tuple[Any, Any]:
    """(model, tokenizer): `base` (a folder), the bundled MiniLM when None, or `TINY`; the
    classification head (every weight, for `TINY`) is new, drawn from `seed`."""
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


def export(model: Any, tokenizer: Any, folder: Path, training: dict[str, Any]) -> Path:
    """The reader as a Hugging Face folder: fp16 safetensors, tokenizer, `TRAINING_FILE`."""
    torch = require("torch", "nli")
    folder.mkdir(parents=True, exist_ok=True)
    half = copy.deepcopy(model).eval().to(torch.float16)
    half.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    (folder / TRAINING_FILE).write_text(json.dumps(training, indent=2, default=str) + "\n")
    return folder


def folder_megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6
