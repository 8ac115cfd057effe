"""Loading a family's tokenizer and model, on a device, in a precision.

Every family loads with the real `from_pretrained(name_or_path)` code, so a hub name and a local
directory behave the same. Code shipped with a model never runs (`trust_remote_code=False`:
transformers refuses instead of asking on stdin, which would block a host app's thread).

HHEM-2.1-Open ships its own model class (`modeling_hhem_v2.py`, loaded with
`trust_remote_code=True`); that class is a flan-t5 `T5ForTokenClassification` kept under the
attribute `t5`, built from the config's `foundation`, whose tokenizer it also uses. We rebuild
that exact module from transformers' own class and load the checkpoint's tensors into it, so
no code from the model's repository runs in the host process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from refcheck_callbacks.check.nli.compact_weights import is_compact, load_compact_classifier
from refcheck_callbacks.check.nli.families import (
    HHEM_PROMPT,
    Architecture,
    ModelFamily,
    hhem_template,
)
from refcheck_callbacks.check.nli.labels import LabelScheme, LabelSchemeError, read_label_scheme
from refcheck_callbacks.check.nli.precision import quantized_int8
from refcheck_callbacks.check.nli.recognise import ModelDescription, UnknownModelFamilyError
from refcheck_callbacks.errors import ModelNotFoundError
from refcheck_callbacks.support.extras import require

NLIDtype = Literal["auto", "float32", "bfloat16", "float16", "int8"]
"""The precisions the checker runs its model in; "int8" is CPU-only (see `NLIChecker`)."""
_DTYPES: tuple[str, ...] = get_args(NLIDtype)
_HHEM_PREFIX = "t5."
"""HHEM's checkpoint keeps the T5 token classifier under the attribute `t5`."""
_TIED_EMBEDDINGS = "transformer.encoder.embed_tokens.weight"
"""Tied to `transformer.shared.weight`; checkpoints written by transformers 4 leave it out."""


@dataclass
class LoadedModel:
    tokenizer: Any
    model: Any
    """In fp32, on the CPU; `reduced` moves it to the checker's device and precision."""
    scheme: LabelScheme
    template: str | None
    """The family's input template (HHEM: the prompt from the model's own config)."""
    label_token_ids: tuple[int, int] | None = None
    """Seq2seq: the (unsupported, supported) label words' first token ids."""
    decoder_start_id: int | None = None


def model_location(name: str) -> str:
    """`name` with `~` expanded; `ModelNotFoundError` when it names a local folder (absolute,
    `./`, `../`, `~`, or under a folder that exists) that is not there, which the hub would
    otherwise report as a badly formed repository id."""
    path = Path(name).expanduser()
    local = (
        path.is_absolute()
        or name.startswith(("./", "../"))
        or (path.parent != Path() and path.parent.is_dir())
    )
    location = str(path) if name.startswith("~") else name
    if local and not path.exists():
        raise ModelNotFoundError(
            f"no such model folder: {location}; give the folder that holds the model's "
            "config.json, or the model's hub name (org/model)"
        )
    return location


def describe(model: str) -> ModelDescription:
    """The model's name and raw `config.json` (never instantiated: HHEM's class is custom)."""
    transformers = require("transformers", "nli")
    config, _ = transformers.PretrainedConfig.get_config_dict(model)
    return ModelDescription(model, config, local=Path(model).is_dir())


def load(
    name: str, family: ModelFamily, found: ModelDescription, labels: Mapping[int, str] | None
) -> LoadedModel:
    """The tokenizer, model and label scheme of a model of `family`."""
    transformers = require("transformers", "nli")
    transformers.utils.logging.disable_progress_bar()
    if family.architecture is Architecture.HHEM:
        return _load_hhem(name, family, found.config)
    tokenizer = transformers.AutoTokenizer.from_pretrained(name, trust_remote_code=False)
    # fp32 whatever the checkpoint was saved in: transformers 5 otherwise loads the saved dtype
    # (an fp16 folder stays fp16, and int8 quantization of its linear layers then fails).
    fp32 = require("torch", "nli").float32
    if family.architecture is Architecture.SEQ2SEQ:
        model = transformers.AutoModelForSeq2SeqLM.from_pretrained(
            name, trust_remote_code=False, dtype=fp32
        )
        return LoadedModel(
            tokenizer,
            model,
            LabelScheme(classes=(), support_class=1),
            family.template,
            label_token_ids=_label_token_ids(tokenizer, family),
            decoder_start_id=_decoder_start(model),
        )
    if is_compact(name):  # the learned reader's int8 folder (`compact_weights`)
        model = load_compact_classifier(name)
    else:
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            name, trust_remote_code=False, dtype=fp32
        )
    num_labels = int(model.config.num_labels)
    if labels is not None and len(labels) != num_labels:
        raise LabelSchemeError(f"labels= names {len(labels)} classes; the model has {num_labels}")
    if family.support_class is not None:
        if num_labels != 2:
            raise UnknownModelFamilyError(
                f"the {family.title} family has 2 classes; {name!r} has {num_labels}"
            )
        scheme = LabelScheme(classes=(), support_class=family.support_class)
    else:
        scheme = read_label_scheme(labels or model.config.id2label)
    return LoadedModel(tokenizer, model, scheme, family.template)


def _label_token_ids(tokenizer: Any, family: ModelFamily) -> tuple[int, int]:
    """The first token of each label word: what the decoder's first step chooses between.

    On T5's vocabulary "0" starts with token 3 ("▁", the word boundary) and "1" is token 209
    ("▁1"): the ids MiniCheck's code hard-codes, found here from whatever tokenizer the model
    ships.
    """
    assert family.label_words is not None
    ids = [tokenizer(word, add_special_tokens=False)["input_ids"] for word in family.label_words]
    if not all(ids) or ids[0][0] == ids[1][0]:
        raise UnknownModelFamilyError(
            f"the tokenizer cannot tell the label words {family.label_words} apart by their "
            "first token"
        )
    return ids[0][0], ids[1][0]


def _decoder_start(model: Any) -> int:
    """The token a T5 decoder starts from (its pad token, 0, which MiniCheck feeds)."""
    for config in (model.config, getattr(model, "generation_config", None)):
        start = getattr(config, "decoder_start_token_id", None)
        if start is not None:
            return int(start)
    return int(model.config.pad_token_id)


def _load_hhem(name: str, family: ModelFamily, config: Mapping[str, Any]) -> LoadedModel:
    transformers = require("transformers", "nli")
    foundation = str(config.get("foundation") or "google/flan-t5-base")
    # As HHEM's own code does: the foundation's tokenizer (the HHEM repository ships none, and
    # asking it for one would make transformers offer to run the repository's code).
    tokenizer = transformers.AutoTokenizer.from_pretrained(foundation, trust_remote_code=False)
    tokenizer.padding_side = "right"  # the head is read at position 0: the prompt's first token
    t5_config = transformers.AutoConfig.from_pretrained(
        foundation, num_labels=2, trust_remote_code=False
    )
    model = transformers.T5ForTokenClassification(t5_config)
    _load_prefixed_weights(model, name)
    prompt = str(config.get("prompt") or HHEM_PROMPT)
    try:
        prompt.format(text1="", text2="")
    except (KeyError, IndexError, ValueError) as error:
        raise UnknownModelFamilyError(
            f"HHEM config's prompt has fields other than {{text1}} and {{text2}}: {error!r}"
        ) from None
    return LoadedModel(
        tokenizer,
        model.eval(),
        LabelScheme(classes=(), support_class=family.support_class or 1),
        hhem_template(prompt),
    )


def _load_prefixed_weights(model: Any, name: str) -> None:
    """HHEM's tensors (`t5.*`) into the rebuilt module; anything missing or extra is an error."""
    torch = require("torch", "nli")
    transformers = require("transformers", "nli")
    path = transformers.utils.cached_file(
        name, "model.safetensors", _raise_exceptions_for_missing_entries=False
    )
    if path is not None:
        from safetensors.torch import load_file

        tensors = load_file(path)
    else:
        path = transformers.utils.cached_file(name, "pytorch_model.bin")
        tensors = torch.load(path, map_location="cpu", weights_only=True)
    state = {k.removeprefix(_HHEM_PREFIX): v for k, v in tensors.items()}
    if _TIED_EMBEDDINGS not in state and "transformer.shared.weight" in state:
        state[_TIED_EMBEDDINGS] = state["transformer.shared.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise UnknownModelFamilyError(
            f"{name!r} does not hold HHEM-2.1-Open's tensors: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}"
        )


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    return "cuda" if require("torch", "nli").cuda.is_available() else "cpu"


def pick_dtype(dtype: str, device: str) -> Any:
    """The torch dtype to run in; int8 reads as `torch.qint8`, checked against the device
    before anything is loaded."""
    torch = require("torch", "nli")
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    if dtype == "auto":
        if not device.startswith("cuda"):
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype == "int8":
        if torch.device(device).type != "cpu":
            raise ValueError(
                f"dtype='int8' runs on a CPU only, not on {device!r}; on a GPU use "
                "'bfloat16' or 'float16' (dtype='auto' picks one)"
            )
        return torch.qint8
    return getattr(torch, dtype)


def reduced(model: Any, device: str, dtype: Any) -> Any:
    """`model` on `device`, in `dtype`.

    bf16 on a CPU switches to eager attention: torch's CPU flash-attention kernel (what
    "sdpa" runs there) ran no faster in bf16 than in fp32, while eager attention's batched
    matrix products gain from bf16; whole checks took 5-10% less time on the benchmark's
    medium model, the same on its small one. int8 keeps fp32 attention, where eager ran
    10-60% slower; fp32 (and the fp32 copy that re-checks) keeps the model's own choice.
    Transformers releases without `set_attn_implementation` keep it too: only speed differs.
    """
    torch = require("torch", "nli")
    if dtype == torch.qint8:
        return quantized_int8(model)
    on_cpu = torch.device(device).type == "cpu"
    if dtype == torch.bfloat16 and on_cpu and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    return model.to(device=device, dtype=dtype)
