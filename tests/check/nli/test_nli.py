"""NLIChecker on real transformers models built in the test (no downloads).

The bundled MiniLM backbone with a fresh 3-way head, and tiny BERT / RoBERTa / DeBERTa-v2
models from configs, each with a different class order, saved with `save_pretrained` and loaded
by path as a user's model would be. Random weights make the labels arbitrary, so every test
compares the checker against the model itself (one pair at a time) or against itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_nli import save_model
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.merge import merge_label
from refcheck_callbacks.check.nli.checker import NLIChecker
from refcheck_callbacks.check.nli.labels import LabelSchemeError
from refcheck_callbacks.check.nli.precision import TieGuard, top_two_margin
from refcheck_callbacks.check.segments import segment_text
from refcheck_callbacks.contract.components import Checker
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.types import CheckItem, Claim, Label, Outcome, Reference, Verdict

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
SPELLED = {"entailment": E, "neutral": N, "contradiction": C}
LABEL_ORDERS = {
    "minilm": {0: "entailment", 1: "neutral", 2: "contradiction"},
    "bert": {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
    "roberta": {0: "neutral", 1: "contradiction", 2: "entailment"},
    "deberta_v2": {0: "Entailment", 1: "Contradiction", 2: "Neutral"},
}
REFERENCES = [
    "The Eiffel Tower is in Paris. It was finished in 1889 for the World's Fair. "
    "Gustave Eiffel's company designed and built it. It is about 330 metres tall.",
    "Paris is the capital of France. About two million people live in the city. "
    "The Seine flows through it from east to west.",
    "Cats sleep for most of the day. They are crepuscular and hunt at dawn and dusk.",
]
CLAIMS = [
    "The Eiffel Tower was finished in 1889.",
    "The Eiffel Tower is in Berlin.",
    "About two million people live in Paris.",
    "Cats hunt at dawn.",
    "The Seine flows west.",
]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli-models")
    return {arch: save_model(root / arch, arch, order) for arch, order in LABEL_ORDERS.items()}


@pytest.fixture(scope="module")
def minilm_nli(model_dirs: dict[str, Path]) -> NLIChecker:
    """The MiniLM NLI model with short segments, so references split into several."""
    return NLIChecker(model_dirs["minilm"], max_length=96, segment_tokens=24, cache_size=0)


def items_for(claims: list[str], references: list[str], request_id: str = "r") -> list[CheckItem]:
    refs = [Reference(text=text, id=f"doc{i}") for i, text in enumerate(references)]
    return [
        CheckItem(claim=Claim(text=claim), references=refs, request_id=request_id, claim_index=i)
        for i, claim in enumerate(claims)
    ]


def direct_labels(model_dir: Path, premises: list[str], hypotheses: list[str]) -> list[Label]:
    """What the model itself says about each pair, one at a time, read through its id2label."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    labels = []
    for premise, hypothesis in zip(premises, hypotheses, strict=True):
        with torch.inference_mode():
            logits = model(**tokenizer(premise, hypothesis, return_tensors="pt")).logits[0]
        labels.append(SPELLED[model.config.id2label[int(logits.argmax())].lower()])
    return labels


def likeliest(rows: list[dict[Label, float]]) -> list[Label]:
    return [max(p, key=p.__getitem__) for p in rows]


def assert_same_verdicts(got: list[Verdict], want: list[Verdict]) -> None:
    assert [v.label for v in got] == [v.label for v in want]
    for a, b in zip(got, want, strict=True):
        assert a.probabilities is not None and b.probabilities is not None
        for label in Label:
            assert a.probabilities[label] == pytest.approx(b.probabilities[label], abs=1e-4)
        assert [e.span for e in a.evidence] == [e.span for e in b.evidence]


def test_nli_checker_is_a_checker(minilm_nli: NLIChecker) -> None:
    assert isinstance(minilm_nli, Checker)
    assert (minilm_nli.device, minilm_nli.dtype) == ("cpu", torch.float32)


@pytest.mark.parametrize("arch", sorted(LABEL_ORDERS))
def test_labels_follow_each_models_id2label(arch: str, model_dirs: dict[str, Path]) -> None:
    checker = NLIChecker(model_dirs[arch], max_length=128)
    premises = [REFERENCES[0], REFERENCES[1], REFERENCES[2], REFERENCES[0]]
    hypotheses = CLAIMS[:4]
    got = checker.classify_pairs(premises, hypotheses)
    want = direct_labels(model_dirs[arch], premises, hypotheses)
    assert [max(p, key=p.__getitem__) for p in got] == want
    for probabilities in got:
        assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("arch", sorted(LABEL_ORDERS))
def test_batched_across_requests_equals_one_pair_at_a_time(
    arch: str, model_dirs: dict[str, Path]
) -> None:
    items = items_for(CLAIMS[:3], REFERENCES, "a") + items_for(CLAIMS[2:], REFERENCES[1:], "b")
    options: dict[str, Any] = {"max_length": 96, "segment_tokens": 24, "cache_size": 0}
    # A small budget: the pairs fill several packed batches of different lengths.
    batched = NLIChecker(model_dirs[arch], batch_tokens=512, **options)
    one_by_one = NLIChecker(model_dirs[arch], max_batch_size=1, **options)
    together = batched.check_batch(items)
    alone = [one_by_one.check_batch([item])[0] for item in items]
    assert_same_verdicts(together, alone)
    assert batched.counts.pairs_scored < batched.counts.pairs_requested  # claim 2 in both


def test_merged_label_and_evidence_follow_refchecker_rule(model_dirs: dict[str, Path]) -> None:
    # Short references are one segment each, so each reference is one pair.
    checker = NLIChecker(model_dirs["minilm"], max_length=128)
    verdicts = checker.check_batch(items_for(CLAIMS, REFERENCES))
    for claim, verdict in zip(CLAIMS, verdicts, strict=True):
        per_reference = checker.classify_pairs(REFERENCES, [claim] * len(REFERENCES))
        labels = [max(p, key=p.__getitem__) for p in per_reference]
        assert verdict.label is merge_label(labels)
        candidates = [i for i, label in enumerate(labels) if label is verdict.label]
        decider = max(candidates, key=lambda i: per_reference[i][verdict.label])
        (evidence,) = verdict.evidence
        assert evidence.reference_index == decider
        assert evidence.reference_id == f"doc{decider}"
        assert evidence.span.of(REFERENCES[decider]) == REFERENCES[decider]
        assert evidence.probability == pytest.approx(verdict.confidence)
        assert verdict.probabilities == pytest.approx(per_reference[decider], abs=1e-5)


def test_long_references_are_split_with_spans_into_the_original(minilm_nli: NLIChecker) -> None:
    long_reference = " ".join(REFERENCES * 3)
    before = minilm_nli.counts.pairs_requested
    (verdict,) = minilm_nli.check_batch(items_for(CLAIMS[:1], [long_reference]))
    assert minilm_nli.counts.pairs_requested - before > 5  # one pair per segment
    (evidence,) = verdict.evidence
    piece = evidence.span.of(long_reference)
    assert 0 < len(piece) < len(long_reference) / 3
    probabilities = minilm_nli.classify_pairs([piece], CLAIMS[:1])[0]
    assert verdict.probabilities == pytest.approx(probabilities, abs=1e-4)


def test_premise_is_truncated_but_an_overlong_claim_gets_an_error(
    model_dirs: dict[str, Path],
) -> None:
    checker = NLIChecker(model_dirs["bert"], max_length=48, segment_tokens=40)
    fitting = "The tower was designed and built by the company of Gustave Eiffel in Paris."
    overlong = " ".join(["The tower is very tall and made of iron."] * 6)
    verdicts = checker.check_batch(items_for([fitting, overlong], REFERENCES))
    assert verdicts[0].label is not None  # 40-token segments + this claim exceed 48: truncated
    assert verdicts[1].label is None
    assert verdicts[1].error is not None and "at most 29 tokens" in verdicts[1].error


def test_preselection_checks_only_the_closest_segments(
    model_dirs: dict[str, Path], encoder: SentenceEncoder
) -> None:
    checker = NLIChecker(
        model_dirs["minilm"], max_length=96, segment_tokens=24, top_k_segments=1, encoder=encoder
    )
    claims = ["Cats are crepuscular and hunt at dawn and dusk.", "The tower is 330 metres tall."]
    verdicts = checker.check_batch(items_for(claims, REFERENCES))
    assert checker.counts.pairs_requested == 2
    assert verdicts[0].evidence[0].reference_index == 2
    assert "330 metres" in verdicts[1].evidence[0].span.of(REFERENCES[0])


def test_identical_pairs_are_scored_once_and_cached_across_calls(
    model_dirs: dict[str, Path],
) -> None:
    checker = NLIChecker(model_dirs["roberta"], max_length=128, cache_size=100)
    first = checker.check_batch(
        items_for(CLAIMS[:2], REFERENCES, "a") + items_for(CLAIMS[:2], REFERENCES, "b")
    )
    assert (checker.counts.pairs_requested, checker.counts.pairs_scored) == (12, 6)
    assert first[:2] == first[2:]
    again = checker.check_batch(items_for(CLAIMS[:2], REFERENCES, "c"))
    assert checker.counts.pairs_scored == 6
    assert checker.counts.cache_hits == 6
    assert again == first[:2]


def test_the_cache_is_bounded_and_forgets_the_least_recent(model_dirs: dict[str, Path]) -> None:
    checker = NLIChecker(model_dirs["roberta"], max_length=128, cache_size=2)
    items = items_for(CLAIMS[:1], REFERENCES)  # three pairs, two fit the cache
    checker.check_batch(items)
    checker.check_batch(items)
    assert checker.counts.cache_hits == 2
    assert checker.counts.pairs_scored == 3 + 1


def _fail_batches_larger_than(checker: NLIChecker, rows: int) -> list[int]:
    """Make the model's forward raise a CUDA-style OOM for batches over `rows` rows."""
    real_forward: Callable[..., Any] = checker.model.forward
    failed: list[int] = []

    def forward(**inputs: Any) -> Any:
        size = int(inputs["input_ids"].shape[0])
        if size > rows:
            failed.append(size)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(**inputs)

    checker.model.forward = forward
    return failed


def test_out_of_memory_halves_the_batch_and_gives_the_same_verdicts(
    model_dirs: dict[str, Path],
) -> None:
    options: dict[str, Any] = {"max_length": 96, "segment_tokens": 24, "cache_size": 0}
    items = items_for(CLAIMS, REFERENCES)
    want = NLIChecker(model_dirs["deberta_v2"], **options).check_batch(items)
    checker = NLIChecker(model_dirs["deberta_v2"], batch_tokens=4096, **options)
    failed = _fail_batches_larger_than(checker, rows=3)
    got = checker.check_batch(items)
    assert_same_verdicts(got, want)
    assert failed and checker.counts.oom_retries == len(failed)
    assert checker.budget.tokens < 4096


def test_an_unknown_label_scheme_fails_at_load_and_labels_overrides_it(tmp_path: Path) -> None:
    directory = save_model(tmp_path / "generic", "bert", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(LabelSchemeError, match=r"LABEL_0.*Pass labels="):
        NLIChecker(directory)
    with pytest.raises(LabelSchemeError, match="names 2 classes; the model has 3"):
        NLIChecker(directory, labels={0: "supported", 1: "unsupported"})
    checker = NLIChecker(directory, labels={0: "contradiction", 1: "entailment", 2: "neutral"})
    assert checker.scheme.classes == (C, E, N)


def test_a_two_label_support_model_reads_supported_as_entailment(tmp_path: Path) -> None:
    directory = save_model(tmp_path / "support", "bert", {0: "unsupported", 1: "supported"})
    checker = NLIChecker(directory, max_length=128)
    verdicts = checker.check_batch(items_for(CLAIMS, REFERENCES))
    assert len(verdicts) == len(CLAIMS)
    assert {v.label for v in verdicts} <= {E, N}
    for verdict in verdicts:
        assert verdict.probabilities is not None
        assert verdict.probabilities[C] == 0.0
        assert verdict.probabilities[E] + verdict.probabilities[N] == pytest.approx(1.0)


def test_empty_references_are_neutral_and_bad_options_are_refused(
    minilm_nli: NLIChecker, model_dirs: dict[str, Path]
) -> None:
    (verdict,) = minilm_nli.check_batch(items_for(CLAIMS[:1], ["", "   "]))
    assert verdict.label is N and verdict.evidence == ()
    with pytest.raises(ValueError, match="dtype"):
        NLIChecker(model_dirs["bert"], dtype="float8")
    with pytest.raises(ValueError, match="segment_tokens"):
        NLIChecker(model_dirs["bert"], max_length=64, segment_tokens=64)
    with pytest.raises(ValueError, match="top_k_segments"):
        NLIChecker(model_dirs["bert"], top_k_segments=0)
    with pytest.raises(ValueError, match="leaves no room for a claim"):
        NLIChecker(model_dirs["bert"], max_length=16, segment_tokens=8)


def test_bfloat16_runs_when_asked(model_dirs: dict[str, Path]) -> None:
    checker = NLIChecker(model_dirs["bert"], dtype="bfloat16", max_length=128)
    assert next(checker.model.parameters()).dtype == torch.bfloat16
    assert checker.model.config._attn_implementation == "eager"  # faster than sdpa in CPU bf16
    verdicts = checker.check_batch(items_for(CLAIMS[:2], REFERENCES))
    assert len(verdicts) == 2 and all(v.label is not None for v in verdicts)


def test_bfloat16_with_fp32_rechecks_gives_the_fp32_labels(model_dirs: dict[str, Path]) -> None:
    options: dict[str, Any] = {"max_length": 96, "segment_tokens": 24, "cache_size": 0}
    premises = [r for r in REFERENCES for _ in CLAIMS]
    hypotheses = CLAIMS * len(REFERENCES)
    exact = NLIChecker(model_dirs["minilm"], **options).classify_pairs(premises, hypotheses)
    bf16 = NLIChecker(model_dirs["minilm"], dtype="bfloat16", **options)
    reduced = bf16.classify_pairs(premises, hypotheses)
    checker = NLIChecker(model_dirs["minilm"], dtype="bfloat16", recheck_in_fp32=True, **options)
    assert checker.tie_guard is not None
    checker.tie_guard = TieGuard(calibration_pairs=4, audit_every=1_000)
    got = checker.classify_pairs(premises, hypotheses)
    assert likeliest(got) == likeliest(exact)
    guard = checker.tie_guard
    assert 0 < guard.max_error < 0.1  # bf16 moved probabilities, a little
    rechecked = [
        i
        for i, p in enumerate(got)
        if all(p[label] == pytest.approx(exact[i][label], abs=1e-5) for label in Label)
    ]
    # Pairs 0-3 calibrate; the rest are judged by the margin they set (pair 4, the first and
    # here only audit, is observed after that judgement and may widen it for later calls).
    error = max(abs(reduced[i][label] - exact[i][label]) for i in range(4) for label in Label)
    margin = 2 * guard.safety * error
    near_ties = [i for i, p in enumerate(reduced) if top_two_margin(list(p.values())) < margin]
    assert set(range(5)) | set(near_ties) <= set(rechecked)
    assert checker.counts.pairs_rechecked == len(rechecked) < len(got)


def near_tie_model(directory: Path) -> Path:
    """A BERT classifier whose CONTRADICTION and NEUTRAL rows differ by a hair (0.003 x noise
    on weights of scale 0.2): every pair's label between the two hangs on a difference far below
    an int8 quantization step, so int8 alone mislabels many pairs and fp32 re-checks must fix
    them."""
    save_model(directory, "bert", LABEL_ORDERS["bert"])
    model = AutoModelForSequenceClassification.from_pretrained(directory)
    noise = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.classifier.weight[1] = model.classifier.weight[0] + 0.003 * noise
        model.classifier.bias[1] = model.classifier.bias[0]
    model.save_pretrained(directory)
    return directory


def test_int8_with_fp32_rechecks_gives_the_fp32_labels_that_int8_alone_misses(
    tmp_path: Path,
) -> None:
    directory = near_tie_model(tmp_path / "near-tie")
    options: dict[str, Any] = {"max_length": 96, "cache_size": 0}
    premises = [r for r in REFERENCES for _ in CLAIMS]
    hypotheses = CLAIMS * len(REFERENCES)
    exact = likeliest(NLIChecker(directory, **options).classify_pairs(premises, hypotheses))
    int8 = NLIChecker(directory, dtype="int8", **options)
    assert int8.dtype == torch.qint8
    assert not any(isinstance(m, torch.nn.Linear) for m in int8.model.modules())
    alone = likeliest(int8.classify_pairs(premises, hypotheses))
    flipped = sum(a != b for a, b in zip(alone, exact, strict=True))
    assert flipped > 0
    checker = NLIChecker(directory, dtype="int8", recheck_in_fp32=True, **options)
    assert checker.tie_guard is not None
    checker.tie_guard = TieGuard(calibration_pairs=4, audit_every=1_000)
    assert likeliest(checker.classify_pairs(premises, hypotheses)) == exact
    assert checker.tie_guard.max_error > 0
    assert flipped <= checker.counts.pairs_rechecked <= len(exact)


def test_dtypes_are_validated_and_int8_is_refused_off_the_cpu(model_dirs: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match=r"dtype must be one of \('auto', .*'int8'\), got 'int4'"):
        NLIChecker(model_dirs["bert"], dtype="int4")  # type: ignore[arg-type]
    for device in ("cuda", "cuda:1", "mps"):
        with pytest.raises(ValueError, match=f"runs on a CPU only, not on '{device}'; on a GPU"):
            NLIChecker(model_dirs["bert"], device=device, dtype="int8")
    with pytest.raises(ValueError, match=r"reduced-precision dtype \(bfloat16, float16, int8\)"):
        NLIChecker(model_dirs["bert"], dtype="float32", recheck_in_fp32=True)


def test_checks_answers_through_the_monitor(minilm_nli: NLIChecker) -> None:
    with RefCheckMonitor(checker=minilm_nli, exporters=[]) as monitor:
        result = monitor.check(
            answer="The Eiffel Tower was finished in 1889. It is in Berlin.",
            references=REFERENCES,
        )
    assert result.outcome is Outcome.CHECKED, result.message
    assert result.checker == "nli"
    assert len(result.verdicts) == len(result.claims) == 2
    assert all(v.label is not None and v.evidence for v in result.verdicts)


def test_model_inputs_and_segments_match_the_tokenizers_own_calls(minilm_nli: NLIChecker) -> None:
    """The fast path (each text encoded once, arrays filled directly, sentences counted in one
    call) feeds the model exactly what the tokenizer's pair call and `pad` would."""
    long_reference = " ".join(REFERENCES * 6)  # longer than max_length: the segment is cut
    pairs = [(claim, segment) for claim in CLAIMS[:3] for segment in [*REFERENCES, long_reference]]
    encoded = minilm_nli.pairs.encode(pairs)
    target = max(len(ids) for ids, _ in encoded)
    assert target == minilm_nli.max_length  # the long reference was cut to fit
    want = minilm_nli.tokenizer(
        [segment for _, segment in pairs],
        [claim for claim, _ in pairs],
        truncation="only_first",
        max_length=target,
        padding="max_length",
    )
    got = minilm_nli.pairs.padded(encoded, target)
    assert set(got) == {"input_ids", "token_type_ids", "attention_mask"}
    for name, array in got.items():
        assert array.tolist() == want[name]
    one_at_a_time = segment_text(
        long_reference,
        max_tokens=minilm_nli.segment_tokens,
        overlap_tokens=minilm_nli.segment_overlap_tokens,
        count_tokens=lambda t: len(minilm_nli.tokenizer(t, add_special_tokens=False)["input_ids"]),
    )
    spans = minilm_nli.segments.spans([long_reference])[long_reference]
    assert spans == tuple((s.start, s.end) for s in one_at_a_time)
