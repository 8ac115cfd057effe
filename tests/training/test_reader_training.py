"""Training the reader end to end on a tiny sample: the loss falls, a resumed run ends with the
weights of an uninterrupted one, and the exported folder loads offline as `nli:PATH` and
`reader:PATH` with the trained model's own 3-way verdicts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers

from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder
from refcheck_callbacks.check.nli.compact_weights import COMPACT_FILE, load_compact_classifier
from refcheck_callbacks.check.reader.inputs import LABELS, EvidenceRanker
from refcheck_callbacks.contract.registry import build_checker
from refcheck_callbacks.training import reader_data
from refcheck_callbacks.training.reader_data import (
    NOT_SUPPORTED,
    ReaderDataPlan,
    ReaderExample,
    build_examples,
)
from refcheck_callbacks.training.reader_model import TINY, export, folder_megabytes, new_reader
from refcheck_callbacks.training.reader_training import (
    CHECKPOINT,
    PROGRESS,
    TrainPlan,
    fitting,
    train,
)
from refcheck_callbacks.training.synthetic_pairs import KIND_LABELS
from refcheck_callbacks.types import CheckItem, Claim, Label, Reference

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = "The Eiffel Tower is in Paris. It was finished in 1889 and is 330 metres tall."
SAMPLE = [
    ReaderExample(evidence=DOCUMENT, claim=claim, target=target, dataset="tiny", kind="test")
    for claim, target in [
        ("The Eiffel Tower is in Paris.", 0),
        ("The Eiffel Tower is in Berlin.", 2),
        ("The tower was painted by Gustave Eiffel's daughter.", 1),
        ("The tower is 330 metres tall.", 0),
        ("The tower is 200 metres tall.", NOT_SUPPORTED),
        ("It was finished in 1889.", 0),
        ("It was finished in 1923.", 2),
        ("The tower has a restaurant on its top floor.", 1),
    ]
]
PLAN = TrainPlan(base=TINY, epochs=3, batch_size=4, checkpoint_every=2, learning_rate=1e-3)


def _parameters(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.state_dict().values()]


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(tmp_path: Path) -> None:
    straight, tokenizer = new_reader(TINY, PLAN.seed)
    whole = train(PLAN, SAMPLE, straight, tokenizer, tmp_path / "straight")
    assert whole.steps == whole.total_steps == 6

    first, _ = new_reader(TINY, PLAN.seed)
    stopped = train(PLAN, SAMPLE, first, tokenizer, tmp_path / "resumed", max_steps=3)
    assert stopped.steps == 3 and (tmp_path / "resumed" / CHECKPOINT).exists()
    restarted, _ = new_reader(TINY, seed=99)  # a fresh process's model: the checkpoint decides
    resumed = train(PLAN, SAMPLE, restarted, tokenizer, tmp_path / "resumed")
    assert (resumed.steps, resumed.steps_this_call) == (6, 3)
    pairs = zip(_parameters(straight), _parameters(restarted), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    midway = zip(_parameters(first), _parameters(restarted), strict=True)
    assert not all(torch.equal(a, b) for a, b in midway)


def test_a_checkpoint_of_another_plan_is_refused(tmp_path: Path) -> None:
    model, tokenizer = new_reader(TINY)
    train(PLAN, SAMPLE, model, tokenizer, tmp_path, max_steps=2)
    other = PLAN.model_copy(update={"learning_rate": 1e-4})
    with pytest.raises(ValueError, match="another plan"):
        train(other, SAMPLE, model, tokenizer, tmp_path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Label], list[float]]:
    """A tiny reader trained on the sample and exported, with its own in-memory labels of the
    sample's pairs and the losses it logged."""
    folder = tmp_path_factory.mktemp("reader")
    model, tokenizer = new_reader(TINY)
    plan = PLAN.model_copy(update={"epochs": 12, "checkpoint_every": 2})
    train(plan, SAMPLE, model, tokenizer, folder / "run")
    encoded = tokenizer(
        [e.evidence for e in SAMPLE], [e.claim for e in SAMPLE], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        own = [Label(LABELS[int(i)]) for i in model(**encoded).logits.argmax(-1)]
    lines = (folder / "run" / PROGRESS).read_text().splitlines()
    losses = [json.loads(line)["loss"] for line in lines]
    export(model, tokenizer, folder / "fp16", {"plan": plan.model_dump()}, weights="fp16")
    return export(model, tokenizer, folder / "export", {"plan": plan.model_dump()}), own, losses


def test_training_lowers_the_loss(trained: tuple[Path, list[Label], list[float]]) -> None:
    losses = trained[2]
    assert len(losses) == 12
    assert sum(losses[-3:]) < sum(losses[:3])


def test_the_export_is_a_3_way_nli_folder_with_int8_weights(
    trained: tuple[Path, list[Label], list[float]],
) -> None:
    folder = trained[0]
    config = (folder / "config.json").read_text()
    assert '"entailment"' in config and '"contradiction"' in config
    names = {p.name for p in folder.iterdir()}
    assert {COMPACT_FILE, "tokenizer.json", "refcheck_reader.json"} <= names
    assert "model.safetensors" not in names
    fp16 = folder.parent / "fp16"
    assert "model.safetensors" in {p.name for p in fp16.iterdir()}
    assert folder_megabytes(folder) < folder_megabytes(fp16)


def test_int8_weights_reproduce_the_trained_models_logits(
    trained: tuple[Path, list[Label], list[float]],
) -> None:
    """Loaded from the int8 folder and from the fp16 one, the same logits to within the
    rounding of a row's scale (the tiny model's weights are large: initializer_range 0.2)."""
    folder = trained[0]
    compact = load_compact_classifier(folder)
    half = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(folder.parent / "fp16"), dtype=torch.float32
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    encoded = tokenizer(
        [e.evidence for e in SAMPLE], [e.claim for e in SAMPLE], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        ours, theirs = compact(**encoded).logits, half(**encoded).logits
    assert torch.allclose(ours, theirs, atol=0.05 * float(theirs.abs().max()))
    for name, value in half.state_dict().items():
        assert compact.state_dict()[name].shape == value.shape, name


def _item(claim: str) -> CheckItem:
    return CheckItem(
        claim=Claim(text=claim),
        references=(Reference(text=DOCUMENT, id="doc"),),
        request_id="r",
        claim_index=0,
    )


@pytest.mark.parametrize("weights", ["export", "fp16"])
@pytest.mark.parametrize("spec", ["nli:{path}", "reader:{path}"])
def test_the_exported_reader_loads_offline_with_the_trained_models_verdicts(
    trained: tuple[Path, list[Label], list[float]], spec: str, weights: str
) -> None:
    folder, own, _ = trained
    checker = build_checker(spec.format(path=folder.parent / weights))
    items = [_item(example.claim) for example in SAMPLE]
    verdicts = asyncio.run(checker.check(items))
    expected = own
    if spec.startswith("reader"):
        # The reader screens each claim for a figure or name stated otherwise, whatever it read.
        stated = StatedFactFinder().find_batch(items)
        assert 0 < sum(found is None for found in stated) < len(items)
        expected = [
            label if found is None else Label.CONTRADICTION
            for found, label in zip(stated, own, strict=True)
        ]
    assert [v.label for v in verdicts] == expected
    assert len(set(own)) > 1
    for verdict in verdicts:
        assert verdict.probabilities is not None and verdict.label is not None
        assert all(type(p) is float for p in verdict.probabilities.values())
        assert verdict.confidence == max(verdict.probabilities.values())
        assert verdict.evidence and verdict.evidence[0].reference_id == "doc"


def test_the_export_loads_in_a_process_with_the_network_off(
    trained: tuple[Path, list[Label], list[float]],
) -> None:
    folder, own, _ = trained
    code = (
        "import asyncio, sys\n"
        "from refcheck_callbacks.contract.registry import build_checker\n"
        "from refcheck_callbacks.types import CheckItem, Claim, Reference\n"
        "c = build_checker(f'nli:{sys.argv[1]}')\n"
        f"item = CheckItem(claim=Claim(text={SAMPLE[1].claim!r}), references="
        f"(Reference(text={DOCUMENT!r}),), request_id='r', claim_index=0)\n"
        "print(asyncio.run(c.check([item]))[0].label.value)\n"
    )
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": "/nonexistent"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        capture_output=True, text=True, check=True, env={**os.environ, **offline}, cwd=ROOT,
    )  # fmt: skip
    assert out.stdout.strip() == own[1].value


@pytest.mark.labelled_data("wice", "begin", "faithdial")
def test_the_data_builder_leaves_the_held_out_set_out(shared_data: Path) -> None:
    plan = ReaderDataPlan(
        datasets=("wice", "begin", "faithdial"),
        held_out="faithdial",
        labelled_per_set=6,
        synthetic_per_set=30,
    )
    examples = build_examples(plan, EvidenceRanker(), shared_data)
    assert {e.dataset for e in examples} == {"wice", "begin"}
    assert {e.kind for e in examples} > {"labelled", "sentence"}
    for example in examples:
        assert example.evidence and example.claim
        if example.kind != "labelled":
            assert example.target == reader_data.TARGETS[KIND_LABELS[example.kind]]
    assert build_examples(plan, EvidenceRanker(), shared_data) == examples


def test_a_claim_too_long_to_leave_room_for_evidence_is_left_out(tmp_path: Path) -> None:
    long_claim = ReaderExample(
        evidence=DOCUMENT, claim="word " * 300, target=1, dataset="tiny", kind="test"
    )
    model, tokenizer = new_reader(TINY)
    assert fitting(tokenizer, [*SAMPLE, long_claim], PLAN.max_length) == SAMPLE
    result = train(PLAN, [*SAMPLE, long_claim], model, tokenizer, tmp_path, max_steps=1)
    assert result.total_steps == 6  # the 8 that fit, in batches of 4, for 3 epochs


@pytest.mark.labelled_data("wice", "begin")
def test_the_command_trains_exports_and_scores_a_fold(shared_data: Path, tmp_path: Path) -> None:
    command = [
        sys.executable, str(ROOT / "scripts" / "train_reader.py"), "--hold-out", "wice",
        "--datasets", "wice", "begin", "--labelled-per-set", "16", "--synthetic-per-set", "16",
        "--base", TINY, "--batch-size", "8", "--eval-limit", "12",
    ]  # fmt: skip
    env = {
        **os.environ,
        "REFCHECK_TRAINING_DIR": str(tmp_path),
        "REFCHECK_DATA_DIR": str(shared_data),
    }
    first = subprocess.run([*command, "--max-steps", "1"], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "run the same command again to resume" in first.stderr
    now = [*command, "--score-now"]
    subprocess.run(now, capture_output=True, text=True, env=env, check=True)
    midway = json.loads((tmp_path / "without-wice" / "evaluation-step-1.json").read_text())
    assert {s["checker"] for s in midway} == {"embedded", "reader", "cascade"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    run = tmp_path / "without-wice"
    assert (run / "export" / COMPACT_FILE).exists()
    scores = json.loads((run / "evaluation.json").read_text())
    assert [s["checker"] for s in scores] == ["embedded", "reader", "cascade"]
    assert all(s["dataset"] == "wice" and s["examples"] == 12 for s in scores)
    assert "| wice | reader | 12 |" in done.stdout
