"""Each grounding-model family, loaded by path from a tiny checkpoint of its architecture.

The directories are named like the published models (`MiniCheck-Flan-T5-Large`,
`FactCG-DeBERTa-v3-Large`, ...) or, for HHEM, carry its published config; the checker has to
recognise each, feed its tokenizer the exact text its authors' code builds, score it as their
code does (compared here with that procedure run by hand on the same weights), and refuse a
model it cannot place with a message that names what it found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import save_classifier, save_hhem, save_seq2seq
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    T5ForTokenClassification,
)

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.check.nli.recognise import (
    ModelDescription,
    UnknownModelFamilyError,
    recognise,
)
from refcheck_callbacks.types import CheckItem, Claim, Label, Outcome, Reference

E, N = Label.ENTAILMENT, Label.NEUTRAL
CLAIM = "The Eiffel Tower was finished in 1889."
CHUNK = "The Eiffel Tower is in Paris. It was finished in 1889 for the World's Fair."
REFERENCES = [
    CHUNK,
    "Paris is the capital of France. About two million people live in the city.",
    "Cats sleep for most of the day. They hunt at dawn and dusk.",
]
DIRECTORY = {
    "minicheck-roberta": "MiniCheck-RoBERTa-Large",
    "minicheck-deberta": "MiniCheck-DeBERTa-v3-Large",
    "minicheck-flan-t5": "MiniCheck-Flan-T5-Large",
    "factcg": "FactCG-DeBERTa-v3-Large",
    "alignscore": "AlignScore-large",
    "hhem": "grounding-checker",  # a name that says nothing: recognised from its config
}
PUBLISHED_TEXT = {
    "minicheck-roberta": f"{CHUNK}</s>{CLAIM}",
    "minicheck-deberta": f"{CHUNK}[SEP]{CLAIM}",
    "minicheck-flan-t5": f"predict: {CHUNK}</s>{CLAIM}",
    "factcg": f"{CHUNK}\n\nChoose your answer: based on the paragraph above can we conclude "
    f'that "{CLAIM}"?\n\nOPTIONS:\n- Yes\n- No\nI think the answer is ',
    "hhem": "<pad> Determine if the hypothesis is true given the premise?\n\n"
    f"Premise: {CHUNK}\n\nHypothesis: {CLAIM}",
}
"""What each family's source feeds its tokenizer for (CHUNK, CLAIM): MiniCheck
`batch_tokenize`, FactCG `INSTRUCTION_TEMPLATE`, HHEM's config prompt."""


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("families")
    hhem_dir = root / DIRECTORY["hhem"]
    hhem_head = save_hhem(hhem_dir, root / "flan-t5-base")
    return {
        "minicheck-roberta": save_classifier(root / DIRECTORY["minicheck-roberta"], "roberta"),
        "minicheck-deberta": save_classifier(root / DIRECTORY["minicheck-deberta"], "deberta"),
        "minicheck-flan-t5": save_seq2seq(root / DIRECTORY["minicheck-flan-t5"]),
        "factcg": save_classifier(root / DIRECTORY["factcg"], "deberta"),
        "alignscore": save_classifier(
            root / DIRECTORY["alignscore"],
            "roberta",
            {0: "entailment", 1: "neutral", 2: "contradiction"},
        ),
        "hhem": hhem_dir,
        "hhem_head": hhem_head,
        "foundation": root / "flan-t5-base",
        "root": root,
    }


@pytest.fixture(scope="module")
def checkers(saved: dict[str, Any]) -> dict[str, NLIChecker]:
    return {family: NLIChecker(saved[family], cache_size=0) for family in DIRECTORY}


def items(claims: list[str], references: list[str]) -> list[CheckItem]:
    refs = [Reference(text=text, id=f"doc{i}") for i, text in enumerate(references)]
    return [
        CheckItem(claim=Claim(text=c), references=refs, request_id="r", claim_index=i)
        for i, c in enumerate(claims)
    ]


@pytest.mark.parametrize("family", sorted(DIRECTORY))
def test_each_family_is_recognised_from_a_local_directory(
    family: str, checkers: dict[str, NLIChecker]
) -> None:
    checker = checkers[family]
    assert checker.family.name == checker.name == family


@pytest.mark.parametrize("family", sorted(PUBLISHED_TEXT))
def test_each_template_family_feeds_its_tokenizer_the_published_text(
    family: str, checkers: dict[str, NLIChecker]
) -> None:
    checker = checkers[family]
    assert checker.pairs.render(CLAIM, CHUNK) == PUBLISHED_TEXT[family]
    [(ids, _)] = checker.pairs.encode([(CLAIM, CHUNK)])
    assert ids == checker.tokenizer(PUBLISHED_TEXT[family])["input_ids"]


def test_alignscore_feeds_the_chunk_and_claim_sentence_as_a_pair(
    checkers: dict[str, NLIChecker],
) -> None:
    checker = checkers["alignscore"]
    [(ids, _)] = checker.pairs.encode([(CLAIM, CHUNK)])
    assert ids == checker.tokenizer(CHUNK, CLAIM)["input_ids"]
    two_sentences = f"{CLAIM} It stands in Paris."
    assert checker._units(two_sentences) == [CLAIM, "It stands in Paris."]


def _published_support(family: str, saved: dict[str, Any], premise: str, claim: str) -> float:
    """P(supported) of (premise, claim) by the family's own procedure, run by hand."""
    if family == "hhem":
        tokenizer = AutoTokenizer.from_pretrained(saved["foundation"])
        head: T5ForTokenClassification = saved["hhem_head"]
        prompt = PUBLISHED_TEXT["hhem"].replace(CHUNK, premise).replace(CLAIM, claim)
        with torch.inference_mode():
            logits = head(**tokenizer([prompt], return_tensors="pt")).logits[:, 0, :]
        return float(logits.softmax(-1)[0, 1])
    tokenizer = AutoTokenizer.from_pretrained(saved[family])
    text = PUBLISHED_TEXT[family].replace(CHUNK, premise).replace(CLAIM, claim)
    inputs = tokenizer([text], return_tensors="pt")
    if family == "minicheck-flan-t5":
        model: Any = AutoModelForSeq2SeqLM.from_pretrained(saved[family]).eval()
        zero, one = (tokenizer.convert_tokens_to_ids(tokenizer.tokenize(w)[0]) for w in "01")
        with torch.inference_mode():
            logits = model(
                input_ids=inputs["input_ids"],
                attention_mask=inputs["attention_mask"],
                decoder_input_ids=torch.zeros((1, 1), dtype=torch.long),
            ).logits.squeeze(1)
        return float(logits[:, [zero, one]].softmax(-1)[0, 1])
    model = AutoModelForSequenceClassification.from_pretrained(saved[family]).eval()
    with torch.inference_mode():
        return float(model(**inputs).logits.softmax(-1)[0, 1])


@pytest.mark.parametrize("family", sorted(PUBLISHED_TEXT))
def test_each_family_scores_a_pair_as_its_authors_code_does(
    family: str, saved: dict[str, Any], checkers: dict[str, NLIChecker]
) -> None:
    pairs = [(REFERENCES[0], CLAIM), (REFERENCES[2], "Cats hunt at dawn.")]
    got = checkers[family].classify_pairs([p for p, _ in pairs], [c for _, c in pairs])
    for (premise, claim), probabilities in zip(pairs, got, strict=True):
        want = _published_support(family, saved, premise, claim)
        assert probabilities[E] == pytest.approx(want, abs=1e-5)
        assert probabilities[N] == pytest.approx(1 - want, abs=1e-5)
        assert probabilities[Label.CONTRADICTION] == 0.0


def test_hhem_is_read_from_its_config_and_rebuilt_without_its_code(
    saved: dict[str, Any], checkers: dict[str, NLIChecker]
) -> None:
    checker = checkers["hhem"]
    assert isinstance(checker.model, T5ForTokenClassification)
    assert checker.tokenizer.padding_side == "right"  # position 0 is the prompt's <pad>
    assert not (saved["hhem"] / "modeling_hhem_v2.py").exists()


@pytest.mark.parametrize("family", ["minicheck-roberta", "minicheck-flan-t5", "hhem", "factcg"])
def test_max_support_families_take_the_most_supporting_chunk(
    family: str, checkers: dict[str, NLIChecker]
) -> None:
    checker = checkers[family]
    (verdict,) = checker.check_batch(items([CLAIM], REFERENCES))
    per_reference = checker.classify_pairs(REFERENCES, [CLAIM] * len(REFERENCES))
    best = max(range(len(REFERENCES)), key=lambda i: per_reference[i][E])
    assert verdict.probabilities == pytest.approx(per_reference[best], abs=1e-6)
    assert verdict.label is (E if per_reference[best][E] > 0.5 else N)
    (evidence,) = verdict.evidence
    assert evidence.reference_index == best
    assert verdict.confidence == pytest.approx(max(per_reference[best][E], per_reference[best][N]))


def test_alignscore_averages_each_claim_sentence_best_chunk(
    checkers: dict[str, NLIChecker],
) -> None:
    checker = checkers["alignscore"]
    sentences = [CLAIM, "Cats hunt at dawn."]
    (verdict,) = checker.check_batch(items([" ".join(sentences)], REFERENCES))
    rows = [checker.classify_pairs(REFERENCES, [s] * len(REFERENCES)) for s in sentences]
    best = [max(r, key=lambda p: p[E]) for r in rows]
    assert verdict.probabilities is not None
    for label in Label:
        assert verdict.probabilities[label] == pytest.approx(
            sum(b[label] for b in best) / 2, abs=1e-6
        )
    assert 1 <= len(verdict.evidence) <= 2


@pytest.mark.parametrize("family", sorted(DIRECTORY))
def test_each_family_labels_a_pair_through_the_monitor(
    family: str, checkers: dict[str, NLIChecker]
) -> None:
    with RefCheckMonitor(checker=checkers[family], exporters=[]) as monitor:
        result = monitor.check(answer=f"{CLAIM} It is in Berlin.", references=REFERENCES)
    assert result.outcome is Outcome.CHECKED, result.message
    assert result.checker == family
    assert len(result.verdicts) == 2
    assert all(v.label is not None and v.evidence for v in result.verdicts)


def test_a_chunk_too_long_is_cut_and_the_claim_kept(saved: dict[str, Any]) -> None:
    checker = NLIChecker(saved["minicheck-roberta"], max_length=64, segment_tokens=40)
    long_chunk = " ".join(REFERENCES * 8)
    [(ids, _)] = checker.pairs.encode([(CLAIM, long_chunk)])
    assert len(ids) <= 64
    claim_ids = checker.tokenizer(CLAIM, add_special_tokens=False)["input_ids"]
    assert ids[-len(claim_ids) - 1 : -1] == claim_ids  # the claim, then </s>
    (verdict,) = checker.check_batch(items([CLAIM], [long_chunk]))
    assert verdict.label is not None


def test_word_sized_families_chunk_references_by_words(checkers: dict[str, NLIChecker]) -> None:
    checker = checkers["factcg"]
    reference = " ".join(["The Eiffel Tower is in Paris and it is tall."] * 150)  # 1,500 words
    spans = checker.segments.spans([reference])[reference]
    sizes = [len(reference[a:b].split()) for a, b in spans]
    assert len(spans) == 3 and max(sizes) <= 550
    assert spans[0][0] == 0 and spans[-1][1] == len(reference)


@pytest.fixture(scope="module")
def plain_t5(saved: dict[str, Any]) -> Path:
    return save_seq2seq(saved["root"] / "plain-t5")


def test_an_unknown_seq2seq_model_is_refused_naming_what_was_found(plain_t5: Path) -> None:
    with pytest.raises(UnknownModelFamilyError) as refused:
        NLIChecker(plain_t5)
    message = str(refused.value)
    for found in ("sequence-to-sequence", "T5ForConditionalGeneration", "'t5'", "plain-t5"):
        assert found in message
    assert "family='minicheck-flan-t5'" in message and "nli:FAMILY@MODEL" in message
    assert NLIChecker(plain_t5, family="minicheck-flan-t5").family.name == "minicheck-flan-t5"


def test_a_classifier_with_unnamed_classes_is_refused_naming_them(saved: dict[str, Any]) -> None:
    directory = save_classifier(saved["root"] / "my-grounding-model", "roberta")
    with pytest.raises(UnknownModelFamilyError) as refused:
        NLIChecker(directory)
    message = str(refused.value)
    for found in ("my-grounding-model", "RobertaForSequenceClassification", "(LABEL_0, LABEL_1)"):
        assert found in message
    assert NLIChecker(directory, family="minicheck-roberta").family.name == "minicheck-roberta"
    binary = NLIChecker(directory, labels={0: "unsupported", 1: "supported"})
    assert binary.family.name == "nli-binary"


def test_families_that_do_not_fit_the_model_are_refused(
    saved: dict[str, Any], plain_t5: Path
) -> None:
    with pytest.raises(UnknownModelFamilyError, match=r"needs a classifier model.*seq2seq"):
        NLIChecker(plain_t5, family="minicheck-roberta")
    with pytest.raises(UnknownModelFamilyError, match="unknown family 'minicheck'; known: "):
        NLIChecker(plain_t5, family="minicheck")
    flipped = save_classifier(
        saved["root"] / "MiniCheck-RoBERTa-flipped", "roberta", {0: "supported", 1: "unsupported"}
    )
    with pytest.raises(UnknownModelFamilyError, match="reads class 1 as supported"):
        NLIChecker(flipped)


def test_llm_checkers_are_sent_to_the_llm_presets(saved: dict[str, Any]) -> None:
    directory = save_seq2seq(saved["root"] / "Bespoke-MiniCheck-7B")
    with pytest.raises(UnknownModelFamilyError, match="llm:bespoke-minicheck@hosted_vllm/"):
        NLIChecker(directory)


@pytest.mark.parametrize(
    ("name", "architecture", "family"),
    [
        ("lytang/MiniCheck-RoBERTa-Large", "RobertaForSequenceClassification", "minicheck-roberta"),
        ("lytang/MiniCheck-DeBERTa-v3-Large", "DebertaV2ForSequenceClassification",
         "minicheck-deberta"),
        ("lytang/MiniCheck-Flan-T5-Large", "T5ForConditionalGeneration", "minicheck-flan-t5"),
        ("vectara/hallucination_evaluation_model", "HHEMv2ForSequenceClassification", "hhem"),
        ("yaxili96/FactCG-DeBERTa-v3-Large", "DebertaV2ForSequenceClassification", "factcg"),
    ],
)  # fmt: skip
def test_published_hub_names_are_recognised(name: str, architecture: str, family: str) -> None:
    assert recognise(ModelDescription(name, {"architectures": [architecture]})).name == family


def test_a_three_way_nli_model_is_the_generic_family() -> None:
    config = {
        "architectures": ["DebertaV2ForSequenceClassification"],
        "id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"},
    }
    found = ModelDescription("MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli", config)
    assert recognise(found).name == "nli"
    local = ModelDescription("/models/factcg-runs/my-nli", config, local=True)
    assert recognise(local).name == "nli"  # a parent directory's name is not the model's
