"""The reader the package ships: `reader` with no path loads it from the package folder, in a
process with no network at all, and what it was trained on is recorded beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from refcheck_callbacks.bench.datasets import DATASET_NAMES
from refcheck_callbacks.check.nli.compact_weights import COMPACT_FILE
from refcheck_callbacks.check.reader import checker as reader_checker
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.errors import ComponentSpecError
from refcheck_callbacks.training.reader_model import TRAINING_FILE

SHIPPED = reader_checker.SHIPPED_READER

# Run in a network namespace of its own (only a loopback, down): any download, DNS lookup or
# hub call fails there, so loading and checking prove the reader needs none.
OFFLINE_CHECK = """
import asyncio, json, socket
try:
    socket.create_connection(("1.1.1.1", 443), timeout=2)
    raise SystemExit("the namespace has a network")
except OSError:
    pass
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.types import CheckItem, Claim, Reference
checker = build_checker("reader")
reference = Reference(text="Canberra is the capital city of Australia. The Mona Lisa was "
                           "painted by the Italian artist Leonardo da Vinci.")
items = [CheckItem(claim=Claim(text=text), references=(reference,), request_id="r",
                   claim_index=i, question=question)
         for i, (text, question) in enumerate([
             ("Sydney.", "What is the capital of Australia?"),
             ("Canberra is the capital city of Australia.", None)])]
verdicts = asyncio.run(checker.check(items))
print(json.dumps({"model": checker.model_name,
                  "verdicts": [v.model_dump(mode="json") for v in verdicts]}))
"""


def test_the_package_ships_a_reader_trained_on_every_set_in_int8() -> None:
    training = json.loads((SHIPPED / TRAINING_FILE).read_text(encoding="utf-8"))
    assert training["data"]["held_out"] is None
    assert sorted(training["data"]["datasets"]) == sorted(DATASET_NAMES)
    assert training["steps"] > 0 and training["examples"] > 0
    # it corrects the embedded checker's support logit (docs/reader.md: it ranked better so)
    assert reader_checker.corrects_embedded(SHIPPED)
    weights = SHIPPED / COMPACT_FILE
    assert weights.stat().st_size < 30e6  # the wheel's budget for it
    assert not (SHIPPED / "model.safetensors").exists()  # one set of weights
    config = json.loads((SHIPPED / "config.json").read_text(encoding="utf-8"))
    assert config["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}


def test_reader_with_no_path_loads_the_shipped_one_with_no_network() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "TRANSFORMERS_", "HUGGINGFACE_"))  # no offline switch
    }
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--net", sys.executable, "-c", OFFLINE_CHECK],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(found["model"]).resolve() == SHIPPED
    for verdict in found["verdicts"]:
        assert verdict["label"] in {"entailment", "neutral", "contradiction"}, verdict
        [cited] = verdict["evidence"]  # the segment read, in the one reference
        assert cited["reference_index"] == 0 and cited["span"]["end"] > cited["span"]["start"]
        probabilities = verdict["probabilities"]
        assert abs(sum(probabilities.values()) - 1.0) < 1e-5
        assert probabilities[verdict["label"]] == max(probabilities.values())


def test_without_the_shipped_weights_reader_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout or build that lost the folder fails by name, not deep inside transformers."""
    monkeypatch.setattr(reader_checker, "SHIPPED_READER", tmp_path / "model")
    with pytest.raises(ComponentSpecError, match=r"scripts/train_reader\.py --export"):
        build_checker("reader")
