"""Where an NLI model is read from: a local folder that is missing is said to be missing (not
the hub's "Repo id must be in the form ..."), `~` is the user's home, and a hub name stays a
hub name."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_nli import save_model

from refcheck_callbacks import ModelNotFoundError, RefCheckError
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.errors import ComponentSpecError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with `models/` in it, which is also the working directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "working_dir", "shown"),
    [
        ("{home}/models/no-such-model", ".", "{home}/models/no-such-model"),
        ("./no-such-model", ".", "./no-such-model"),
        ("../no-such-model", "models", "../no-such-model"),
        ("~/no-such-model", ".", "{home}/no-such-model"),
        ("models/no-such-model", ".", "models/no-such-model"),
    ],
    ids=["absolute", "dot", "dot-dot", "home", "under-an-existing-folder"],
)
def test_a_missing_local_model_folder_is_named_as_missing(
    home: Path, monkeypatch: pytest.MonkeyPatch, name: str, working_dir: str, shown: str
) -> None:
    monkeypatch.chdir(home / working_dir)
    name, shown = name.format(home=home), shown.format(home=home)

    with pytest.raises(ModelNotFoundError) as raised:
        NLIChecker(name)
    assert str(raised.value).startswith(f"no such model folder: {shown}; give the folder that")
    assert isinstance(raised.value, RefCheckError) and isinstance(raised.value, FileNotFoundError)
    with pytest.raises(ComponentSpecError) as from_spec:
        build_checker(f"nli:{name}")
    assert str(from_spec.value) == f"'nli:{name}' could not be built: {raised.value}"


def test_a_model_under_home_loads_by_its_tilde_path(home: Path) -> None:
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    save_model(home / "models" / "bert", "bert", labels)
    checker = NLIChecker("~/models/bert", max_length=64)
    assert checker.model_name == str(home / "models" / "bert")
    assert checker.scheme.classes


def test_a_hub_name_is_still_asked_of_the_hub(home: Path) -> None:
    """Offline in tests (HF_HUB_OFFLINE=1): the hub's own error, not a missing folder."""
    with pytest.raises(OSError) as raised:
        NLIChecker("some-org/no-such-model")
    assert not isinstance(raised.value, ModelNotFoundError)
    assert "no such model folder" not in str(raised.value)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_folder_saved_in_fp16_loads_in_fp32_and_quantizes(tmp_path: Path, dtype: str) -> None:
    """Transformers 5 loads a checkpoint in the dtype it was saved in; an fp16 folder (how the
    learned reader is exported) must still run in fp32 and quantize to int8 on a CPU."""
    import torch
    from transformers import AutoModelForSequenceClassification

    folder = save_model(
        tmp_path / "fp32", "bert", {0: "entailment", 1: "neutral", 2: "contradiction"}
    )
    half = AutoModelForSequenceClassification.from_pretrained(folder).to(torch.float16)
    half.save_pretrained(tmp_path / "fp16")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "fp16" / name).write_bytes((folder / name).read_bytes())
    checker = NLIChecker(tmp_path / "fp16", device="cpu", dtype=dtype)  # type: ignore[arg-type]
    (row,) = checker.classify_pairs(["The tower is in Paris."], ["The tower is in Berlin."])
    assert abs(sum(row.values()) - 1.0) < 1e-5
    assert next(checker.model.parameters()).dtype is not torch.float16
