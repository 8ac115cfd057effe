"""Int8 weights on disk for a sequence classifier: the form the learned reader ships in.

A MiniLM classifier in fp16 is 46 MB, half of it the 30,522 x 384 word embeddings; the wheel
carries about 30 MB at most. Dynamic quantization cannot be saved in a form `from_pretrained`
reads, so the folder keeps a standard `config.json` and tokenizer beside `COMPACT_FILE`: every
weight matrix as int8 with one fp16 scale per row (symmetric, the row's largest magnitude maps
to 127), every other tensor in fp16. Loading builds the model from its config and the weights
dequantized to fp32 (the rounding error of a row is at most half its scale), so everything after
loading (the int8 dynamic quantization of `dtype="int8"` included) is as for any folder.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from refcheck_callbacks.support.extras import require

COMPACT_FILE = "refcheck_int8.safetensors"
_SCALE_SUFFIX = ".int8_row_scale"
_SMALLEST_QUANTIZED = 4096
"""Matrices with fewer values (a 3-way head) stay fp16: their scales would cost as much."""


def is_compact(folder: str | Path) -> bool:
    return (Path(folder) / COMPACT_FILE).is_file()


def save_compact(model: Any, folder: Path) -> Path:
    """Write `model`'s config and its weights as `COMPACT_FILE` into `folder`."""
    torch = require("torch", "nli")
    safetensors_torch = require("safetensors.torch", "nli")
    folder.mkdir(parents=True, exist_ok=True)
    config = copy.deepcopy(model.config)
    config.architectures = [type(model).__name__]  # what `save_pretrained` would record
    config.save_pretrained(folder)
    tensors: dict[str, Any] = {}
    for name, value in model.state_dict().items():
        value = value.detach().to("cpu", torch.float32)
        if value.dim() == 2 and value.numel() >= _SMALLEST_QUANTIZED:
            scale = value.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
            scale = scale.to(torch.float16).to(torch.float32)  # the scale as it is stored
            tensors[name] = torch.round(value / scale).clamp(-127, 127).to(torch.int8)
            tensors[name + _SCALE_SUFFIX] = scale.to(torch.float16)
        else:
            tensors[name] = value.to(torch.float16)
    path = folder / COMPACT_FILE
    safetensors_torch.save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))
    return path


def load_compact_classifier(folder: str | Path) -> Any:
    """The sequence classifier in `folder` (fp32, eval mode), from its config and int8 weights;
    a missing or unexpected tensor is an error, not a silently random weight."""
    torch = require("torch", "nli")
    transformers = require("transformers", "nli")
    safetensors_torch = require("safetensors.torch", "nli")
    config = transformers.AutoConfig.from_pretrained(str(folder))
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    stored = safetensors_torch.load_file(str(Path(folder) / COMPACT_FILE))
    weights = {}
    for name, value in stored.items():
        if name.endswith(_SCALE_SUFFIX):
            continue
        scale = stored.get(name + _SCALE_SUFFIX)
        value = value.to(torch.float32)
        weights[name] = value * scale.to(torch.float32) if scale is not None else value
    model.load_state_dict(weights, strict=True)
    return model.eval()
