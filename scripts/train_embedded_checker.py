"""Train the embedded checker on the labelled sets and write the parameters the package ships.

    python scripts/train_embedded_checker.py            # cross-validate, then train and write
    python scripts/train_embedded_checker.py --no-write # cross-validate only
    python scripts/train_embedded_checker.py --fold-honest  # also per-fold token tables
    python scripts/train_embedded_checker.py --record-only  # re-record the reference checks
    python scripts/train_embedded_checker.py --leave-one-set-out  # a checker per held-out set

Seeded and deterministic. Steps:
1. Distil a static token table from the bundled MiniLM (PCA to 256 dimensions) and SIF token
   weights from token counts in the data's texts, then fit the table so that static text
   vectors approximate the full MiniLM's embeddings of the data's claims and segments
   (`fit_token_table`; no labels involved), and store it as int8.
2. Compute `features.FEATURE_NAMES` for every labelled example of every loadable set, plus
   3,000 perturbed supported claims (a figure changed, a negation added or dropped) that
   count as unsupported contradictions: the sets rarely show such edits, users make them.
   Heads: support = mean logit of a logistic regression and boosted trees, trained with every
   (set, supported) cell weighing the same; contradiction = logistic regression on
   Climate-FEVER (REFUTES vs NOT_ENOUGH_INFO), WiCE's neutrals and the perturbed claims.
3. Five-fold cross-validation split by `LabelledExample.group` (no text on both sides),
   pooled over the sets. Inside each training part, an inner split gives out-of-fold logits
   for Platt scaling and the entailment threshold, so nothing is tuned on the test fold.
   The raw-similarity and lexical-overlap baselines run through the same procedure with one
   feature each, as does the issue's baseline: the full MiniLM transformer's cosine of the
   claim to its best segment. `--fold-honest` also fits the token table per fold on the
   training part's texts only, so the test fold's texts are new to the table, as a user's are.
4. Train on everything the same way and write `embedded_model.npz` / `.json`.
5. `--leave-one-set-out`: for each set, a checker trained without it (and every group it shares
   with the others), its token table fit without its texts, written to
   build/embedded_checker/folds/without-SET.npz and scored on that set and its planted edits
   the way the reader's folds are (`training.reader_evaluation.evaluate_fold`, the same claims):
   the honest "before" of a leave-one-set-out comparison. The shipped parameters are untouched.
Embeddings and features are cached in build/embedded_checker (gitignored).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys

# Many small matrix products: BLAS threads only spin against each other on a busy machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from refcheck_callbacks.bench.datasets import DATASET_NAMES, load_dataset
from refcheck_callbacks.check.embedded import features, static_embeddings
from refcheck_callbacks.check.embedded import model as embedded_model
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.embedded.features import (
    FEATURE_NAMES,
    SEGMENT_WORDS,
    claim_features,
    prepare_references,
)
from refcheck_callbacks.check.embedded.model import Blend, EmbeddedModel, Head, Trees, save_model
from refcheck_callbacks.check.embedded.static_embeddings import StaticEmbeddings, load_tokenizer
from refcheck_callbacks.check.segments import segment_references
from refcheck_callbacks.embeddings.minilm import SentenceEncoder, bundled_minilm_path
from refcheck_callbacks.text import lexical
from refcheck_callbacks.types import CheckItem, Claim, Label, Reference

log = logging.getLogger("train_embedded_checker")
REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "build" / "embedded_checker"
SEED = 0
DIMENSIONS = 256
FOLDS = 5
INNER_FOLDS = 3
BASELINES = {"static similarity": "sim_top1", "lexical overlap": "coverage_all"}
THREE_WAY = ("climate_fever", "wice")
SYNTHETIC = 3000
"""Perturbed supported claims (changed figure, flipped negation) added as unsupported."""
REGULARISATION = 0.05
"""Inverse L2 strength of the logistic heads; 0.05 and 0.5 were tried, 0.05 generalised better."""


@dataclass(frozen=True)
class Item:
    """A (claim, references) pair to featurise; synthetic items carry their source's group."""

    dataset: str
    group: str
    claim: str
    references: tuple[str, ...]
    supported: bool
    label: Label | None


def load_items() -> list[Item]:
    return [
        Item(ex.dataset, ex.group, ex.claim, tuple(ex.references), bool(ex.supported), ex.label)
        for name in DATASET_NAMES
        for ex in load_dataset(name)
    ]


# --- 1. the static token table ---------------------------------------------------------------


def static_arrays(items: list[Item], tokenizer: Any, fit_on: list[Item] | None) -> dict[str, Any]:
    """The int8 token table and SIF weights; with `fit_on`, the table is fit to the full
    MiniLM's embeddings of those items' texts (`fit_token_table`), else the per-token
    distillation as it is."""
    raw_path = CACHE / "raw_token_vectors.npy"
    if not raw_path.exists():
        log.info("distilling token vectors from MiniLM (once; slow on two cores)")
        np.save(raw_path, static_embeddings.distil_token_vectors(SentenceEncoder()))
    raw = np.load(raw_path)
    reduced = PCA(DIMENSIONS, random_state=SEED).fit_transform(raw)
    texts = sorted({t for item in items for t in (item.claim, *item.references)})
    counts = np.zeros(len(raw), dtype=np.float64)
    for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
        np.add.at(counts, encoding.ids, 1.0)
    weights = static_embeddings.sif_weights(counts)
    if fit_on is not None:
        reduced = fitted_table(reduced, weights, tokenizer, corpus_texts(fit_on), items)
    scales = np.maximum(np.abs(reduced).max(axis=1), 1e-9) / 127.0
    return {
        "token_vectors_q": np.round(reduced / scales[:, None]).astype(np.int8),
        "token_scales": scales.astype(np.float32),
        "token_weights": weights.astype(np.float32),
    }


def fitted_table(
    initial: Any, weights: Any, tokenizer: Any, texts: list[str], items: list[Item]
) -> Any:
    """`fit_token_table` on `texts` (a subset of `corpus_texts(items)`), cached per text set."""
    settings = f"{FIT_EPOCHS} {FIT_BATCH} {FIT_LEARNING_RATE} {SEED}\n"
    digest = hashlib.sha1((settings + "\n".join(texts)).encode()).hexdigest()[:12]
    path = CACHE / f"token_table_{digest}.npy"
    if not path.exists():
        corpus = corpus_texts(items)
        index = {text: row for row, text in enumerate(corpus)}
        targets = full_minilm_embeddings(corpus)[[index[text] for text in texts]]
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        ids = [np.asarray(encoding.ids, dtype=np.int64) for encoding in encodings]
        np.save(path, fit_token_table(initial, weights.astype(np.float32), ids, targets))
    return np.load(path)


FIT_EPOCHS = 6
"""On one group split, the held-out groups' texts stopped gaining cosine after 5-6 epochs
(0.661 -> 0.755; the fit texts went on to 0.886 by 8): more epochs only memorise the fit texts."""
FIT_BATCH = 256
FIT_LEARNING_RATE = 3e-3


def fit_token_table(initial: Any, weights: Any, token_ids: list[Any], targets: Any) -> Any:
    """Token vectors whose SIF-weighted mean approximates the transformer's sentence embedding.

    Tokenlearn-style: the per-token distillation (`initial`) sees each token alone, never in
    the texts it occurs in, so the mean of its vectors is a poor stand-in for the transformer's
    reading of a sentence. Here the table is fit so that the static
    text embedding (unit token vectors, SIF weights, as `StaticEmbeddings.embed` computes it),
    mapped by a semi-orthogonal 256 -> 384 matrix, has a high cosine with the full MiniLM's
    embedding of the same text (Adam on the table; the map re-solved by Procrustes each
    epoch). A semi-orthogonal map keeps cosines, so the checker needs no map at check time:
    its 256-d cosines are those of the mapped vectors. Only tokens seen in `token_ids` move.
    """
    import torch

    torch.manual_seed(SEED)
    table = torch.nn.Parameter(torch.tensor(initial, dtype=torch.float32))
    weight = torch.tensor(weights, dtype=torch.float32)
    target = torch.nn.functional.normalize(torch.tensor(targets, dtype=torch.float32), dim=1)
    flat = torch.tensor(np.concatenate(token_ids), dtype=torch.int64)
    offsets = torch.tensor(np.cumsum([0] + [len(ids) for ids in token_ids[:-1]]))
    lengths = torch.tensor([len(ids) for ids in token_ids])

    def embed(rows: Any) -> Any:
        starts, sizes = offsets[rows], lengths[rows]
        ids = torch.cat(
            [flat[a : a + n] for a, n in zip(starts.tolist(), sizes.tolist(), strict=True)]
        )
        bag = torch.repeat_interleave(torch.arange(len(rows)), sizes)
        vectors = torch.nn.functional.normalize(table[ids], dim=1) * weight[ids, None]
        out = torch.zeros(len(rows), table.shape[1]).index_add_(0, bag, vectors)
        return torch.nn.functional.normalize(out, dim=1)

    def procrustes() -> Any:
        with torch.no_grad():
            static = torch.cat([embed(r) for r in torch.arange(len(lengths)).split(4096)])
        u, _, vt = torch.linalg.svd(target.T @ static, full_matrices=False)
        return u @ vt, float((torch.sum((static @ (u @ vt).T) * target, 1)).mean())

    optimiser = torch.optim.Adam([table], lr=FIT_LEARNING_RATE)
    generator = torch.Generator().manual_seed(SEED)
    usable = torch.nonzero(lengths > 0)[:, 0]
    for epoch in range(FIT_EPOCHS):
        rotation, fit = procrustes()
        log.info("token table fit: epoch %d, mean cosine to full MiniLM %.4f", epoch, fit)
        for rows in usable[torch.randperm(len(usable), generator=generator)].split(FIT_BATCH):
            cosine = torch.sum((embed(rows) @ rotation.T) * target[rows], dim=1)
            optimiser.zero_grad()
            (1.0 - cosine).mean().backward()
            optimiser.step()
    log.info("token table fit: final mean cosine %.4f", procrustes()[1])
    return table.detach().numpy()


# --- 2. features -----------------------------------------------------------------------------


def _fingerprint(arrays: dict[str, Any], items: list[Item]) -> str:
    digest = hashlib.sha1()
    for module in (features, lexical, static_embeddings):
        digest.update(Path(module.__file__ or "").read_bytes())
    for key in sorted(arrays):
        digest.update(np.ascontiguousarray(arrays[key]).tobytes())
    for item in items:
        digest.update(item.claim.encode())
        digest.update(str(len(item.references)).encode())
    return digest.hexdigest()[:16]


def featurise(items: list[Item], static: StaticEmbeddings, arrays: dict[str, Any]) -> Any:
    path = CACHE / f"features_{_fingerprint(arrays, items)}.npy"
    if path.exists():
        return np.load(path)
    matrix = np.zeros((len(items), len(FEATURE_NAMES)), dtype=np.float32)
    order = sorted(range(len(items)), key=lambda i: items[i].references)
    prepared, key = None, None
    for done, index in enumerate(order):
        if items[index].references != key:
            key = items[index].references
            prepared = prepare_references(list(key), static)
        assert prepared is not None
        matrix[index] = claim_features(items[index].claim, prepared, static).values
        if done % 2000 == 0:
            log.info("features %d / %d", done, len(items))
    np.save(path, matrix)
    return matrix


FULL_MINILM_COLUMN = "full_sim_all"
"""The issue's raw-similarity baseline: the transformer's cosine of the claim to its best
segment of all."""


def full_minilm_similarity(items: list[Item], embeddings: Any) -> Any:
    """`FULL_MINILM_COLUMN` per item, from `full_minilm_embeddings(corpus_texts(items))`."""
    index = {text: row for row, text in enumerate(corpus_texts(items))}
    out = np.zeros((len(items), 1), dtype=np.float32)
    for row, item in enumerate(items):
        segments = segment_references(list(item.references), SEGMENT_WORDS, 0)
        if segments:
            rows = [index[segment.text] for segment in segments]
            out[row, 0] = (embeddings[rows] @ embeddings[index[item.claim]]).max()
    return out


def corpus_texts(items: list[Item]) -> list[str]:
    """Every claim and every reference segment the checker embeds: what the table is fit on."""
    texts = {item.claim for item in items}
    for references in {item.references for item in items}:
        texts |= {s.text for s in segment_references(list(references), SEGMENT_WORDS, 0)}
    return sorted(texts)


def full_minilm_embeddings(texts: list[str]) -> Any:
    """The transformer's sentence embedding of each text (slow once, cached): the targets the
    static table is fit to, no labels involved."""
    digest = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:12]
    path = CACHE / f"full_minilm_embeddings_{digest}.npy"
    if not path.exists():
        log.info("embedding %d texts with the full MiniLM (once; slow on two cores)", len(texts))
        np.save(path, SentenceEncoder(cache_size=0).encode(texts).astype(np.float16))
    return np.load(path).astype(np.float32)


# --- synthetic contradictions for the contradiction head --------------------------------------

_NEGATABLE = (" is ", " was ", " are ", " were ", " has ", " have ", " can ", " will ")


def perturb(claim: str, rng: np.random.Generator) -> str | None:
    """A supported claim turned false: one figure changed, or a negation added or removed."""
    found = list(lexical.NUMBER_PATTERN.finditer(claim))
    if found:
        match = found[int(rng.integers(len(found)))]
        value = float(match.group().replace(",", ""))
        is_year = 1000 <= value <= 2100 and value.is_integer()
        new = value + int(rng.integers(1, 9)) if is_year else value * rng.choice([0.5, 1.5, 3.0])
        text = str(int(new)) if is_year or float(new).is_integer() else f"{new:.1f}"
        return claim[: match.start()] + text + claim[match.end() :]
    if " not " in claim:
        return claim.replace(" not ", " ", 1)
    for verb in _NEGATABLE:
        if verb in claim:
            return claim.replace(verb, f"{verb}not ", 1)
    return None


def synthetic_contradictions(items: list[Item], limit: int) -> list[Item]:
    rng = np.random.default_rng(SEED)
    out = []
    for index in rng.permutation(len(items)):
        item = items[index]
        if not item.supported or len(out) >= limit:
            continue
        changed = perturb(item.claim, rng)
        if changed and changed != item.claim:
            out.append(
                Item("synthetic", item.group, changed, item.references, False, Label.CONTRADICTION)
            )
    return out


# --- 3. heads, calibration, threshold ----------------------------------------------------------


def dataset_weights(items: list[Item]) -> Any:
    """Every set weighs the same in total, whatever its size."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.dataset] = counts.get(item.dataset, 0) + 1
    return np.array([len(items) / (len(counts) * counts[item.dataset]) for item in items])


def balanced_weights(items: list[Item]) -> Any:
    """Every (set, supported) cell weighs the same: a claim's score is then comparable across
    sets whatever their share of supported claims, so one threshold serves them all."""
    cells: dict[tuple[str, bool], int] = {}
    for item in items:
        cells[(item.dataset, item.supported)] = cells.get((item.dataset, item.supported), 0) + 1
    return np.array(
        [len(items) / (len(cells) * cells[(item.dataset, item.supported)]) for item in items]
    )


def fit_head(x: Any, y: Any, weights: Any) -> Head:
    model = LogisticRegression(C=REGULARISATION, max_iter=3000)
    model.fit(x, y, sample_weight=weights)
    return Head(
        [model.coef_.T.astype(np.float32)], [model.intercept_.astype(np.float32)], (1.0, 0.0)
    )


def trees_from_sklearn(model: HistGradientBoostingClassifier) -> Trees:
    """Padded (tree, node) arrays from a fitted binary HistGradientBoostingClassifier."""
    nodes = [predictors[0].nodes for predictors in model._predictors]
    width = max(len(tree) for tree in nodes)

    def padded(field: str, dtype: Any) -> Any:
        out = np.zeros((len(nodes), width), dtype=dtype)
        for index, tree in enumerate(nodes):
            out[index, : len(tree)] = tree[field]
        return out

    return Trees(
        feature=padded("feature_idx", np.int16),
        threshold=padded("num_threshold", np.float32),
        left=padded("left", np.int16),
        right=padded("right", np.int16),
        leaf=padded("is_leaf", bool),
        value=padded("value", np.float32),
        baseline=float(np.ravel(model._baseline_prediction)[0]),
    )


def fit_support_head(x: Any, y: Any, weights: Any) -> Blend:
    """A linear head and boosted trees on the same rows; their logits are averaged."""
    boosted = HistGradientBoostingClassifier(
        max_iter=200,
        learning_rate=0.05,
        max_leaf_nodes=15,
        min_samples_leaf=40,
        l2_regularization=1.0,
        random_state=SEED,
    ).fit(x, y, sample_weight=weights)
    trees = trees_from_sklearn(boosted)
    sample = x[:256]
    assert np.allclose(trees.logit(sample), boosted.decision_function(sample), atol=1e-4)
    return Blend(fit_head(x, y, weights), trees, (1.0, 0.0))


def head_logit(head: Head | Blend, x: Any) -> Any:
    p = head.probability(x)
    return np.log(np.clip(p, 1e-12, 1)) - np.log(np.clip(1 - p, 1e-12, 1))


def platt(logits: Any, y: Any, weights: Any) -> tuple[float, float]:
    model = LogisticRegression(C=1e4, max_iter=1000).fit(logits[:, None], y, sample_weight=weights)
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def best_threshold(p: Any, y: Any, datasets: Any) -> float:
    """The P(entailment) cut that maximises balanced accuracy, averaged over the sets."""
    candidates = np.quantile(p, np.linspace(0.02, 0.98, 97))

    def score(t: float) -> float:
        return float(
            np.mean(
                [
                    balanced_accuracy_score(y[datasets == d], p[datasets == d] >= t)
                    for d in np.unique(datasets)
                ]
            )
        )

    return float(max(candidates, key=score))


def contradiction_rows(items: list[Item]) -> Any:
    """Rows that teach contradiction vs neutral: Climate-FEVER, WiCE's neutrals, synthetic."""
    return np.array(
        [
            item.label in (Label.CONTRADICTION, Label.NEUTRAL)
            and item.dataset in ("climate_fever", "wice", "synthetic")
            for item in items
        ]
    )


def train(x: Any, items: list[Item], columns: Any) -> EmbeddedModel:
    """Standardise, fit both heads, Platt-scale and threshold on inner out-of-fold logits."""
    x = x[:, columns]
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    real = np.array([item.dataset != "synthetic" for item in items])
    supported = np.array([item.supported for item in items])
    weights = dataset_weights(items)
    contra_rows = contradiction_rows(items)
    is_contra = np.array([item.label is Label.CONTRADICTION for item in items])
    # Perturbed claims are unsupported by construction: they teach the support head that a
    # changed figure or an added negation matters even where the sets rarely show one.
    balanced = balanced_weights(items)
    support = fit_support_head(z, supported, balanced)
    contradiction = fit_head(z[contra_rows], is_contra[contra_rows], None)
    oof_support = np.zeros(len(items))
    oof_contra = np.zeros(len(items))
    splitter = StratifiedGroupKFold(INNER_FOLDS, shuffle=True, random_state=SEED)
    groups = np.array([item.group for item in items])
    for train_rows, test_rows in splitter.split(z, supported, groups):
        tr = np.zeros(len(items), bool)
        tr[train_rows] = True
        s = fit_support_head(z[tr], supported[tr], balanced[tr])
        oof_support[test_rows] = head_logit(s, z[test_rows])
        c = fit_head(z[tr & contra_rows], is_contra[tr & contra_rows], None)
        oof_contra[test_rows] = head_logit(c, z[test_rows])
    support = replace(support, platt=platt(oof_support[real], supported[real], weights[real]))
    contradiction = replace(
        contradiction, platt=platt(oof_contra[contra_rows], is_contra[contra_rows], None)
    )
    calibrated = 1 / (1 + np.exp(-(oof_support * support.platt[0] + support.platt[1])))
    datasets = np.array([item.dataset for item in items])
    threshold = best_threshold(calibrated[real], supported[real], datasets[real])
    names = tuple(np.array((*FEATURE_NAMES, FULL_MINILM_COLUMN))[columns])
    return EmbeddedModel(
        names, mean.astype(np.float32), scale.astype(np.float32), support, contradiction, threshold
    )


# --- cross-validation and metrics -------------------------------------------------------------


def expected_calibration_error(p: Any, y: Any, bins: int = 10) -> float:
    """Mean |accuracy - confidence| over equal-width probability bins, weighted by bin size."""
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(
        sum(
            abs(y[edges == b].mean() - p[edges == b].mean()) * (edges == b).mean()
            for b in range(bins)
            if (edges == b).any()
        )
    )


def dataset_metrics(items: list[Item], probabilities: Any, labels: list[Label]) -> dict[str, Any]:
    datasets = np.array([item.dataset for item in items])
    supported = np.array([item.supported for item in items])
    entailed = np.array([label is Label.ENTAILMENT for label in labels])
    report: dict[str, Any] = {}
    for name in DATASET_NAMES:
        rows = datasets == name
        scores = {
            "n": int(rows.sum()),
            "auroc": float(roc_auc_score(supported[rows], probabilities[rows, 0])),
            "balanced_accuracy": float(balanced_accuracy_score(supported[rows], entailed[rows])),
            "ece": expected_calibration_error(probabilities[rows, 0], supported[rows]),
        }
        if name in THREE_WAY:
            gold = [items[i].label.value for i in np.flatnonzero(rows)]  # type: ignore[union-attr]
            predicted = [labels[i].value for i in np.flatnonzero(rows)]
            scores["macro_f1"] = float(
                f1_score(gold, predicted, labels=sorted(set(gold)), average="macro")
            )
        report[name] = scores
    report["pooled_ece"] = expected_calibration_error(probabilities[:, 0], supported)
    climate = datasets == "climate_fever"
    order = [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION]
    gold = np.array([order.index(items[i].label) for i in np.flatnonzero(climate)])  # type: ignore[arg-type]
    top = probabilities[climate].argmax(axis=1)
    report["climate_fever_three_way_ece"] = expected_calibration_error(
        probabilities[climate].max(axis=1), (top == gold).astype(float)
    )
    return report


def cross_validate(
    x: Any, items: list[Item], columns: Any, fold_x: Callable[[list[Item]], Any] | None = None
) -> dict[str, Any]:
    """Out-of-fold metrics per set; `fold_x`, given a fold's training items, returns features
    for all items computed without the test fold's texts (the fold-honest token table)."""
    real = np.array([item.dataset != "synthetic" for item in items])
    real_rows = np.flatnonzero(real)
    groups = np.array([item.group for item in items])
    strata = np.array([f"{item.dataset}:{item.supported}" for item in items])
    probabilities = np.zeros((len(items), 3))
    labels: list[Label] = [Label.NEUTRAL] * len(items)
    splitter = StratifiedGroupKFold(FOLDS, shuffle=True, random_state=SEED)
    for number, (_, test_part) in enumerate(
        splitter.split(real_rows, strata[real_rows], groups[real_rows])
    ):
        test_rows = real_rows[test_part]
        test_groups = set(groups[test_rows])
        train_rows = np.array([i for i in range(len(items)) if groups[i] not in test_groups])
        train_items = [items[i] for i in train_rows]
        fold = x if fold_x is None else fold_x(train_items)
        model = train(fold[train_rows], train_items, columns)
        probabilities[test_rows] = model.probabilities(fold[test_rows][:, columns])
        for row in test_rows:
            labels[row] = model.label(probabilities[row])
        log.info("fold %d: %d train, %d test", number, len(train_rows), len(test_rows))
    return dataset_metrics(
        [items[i] for i in real_rows], probabilities[real_rows], [labels[i] for i in real_rows]
    )


def markdown_table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| set | n | method | AUROC | balanced acc. | macro-F1 (3-way) | ECE |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in DATASET_NAMES:
        for method, report in results.items():
            row = report[name]
            f1 = f"{row['macro_f1']:.3f}" if "macro_f1" in row else "–"
            lines.append(
                f"| {name} | {row['n']} | {method} | {row['auroc']:.3f} | "
                f"{row['balanced_accuracy']:.3f} | {f1} | {row['ece']:.3f} |"
            )
    return "\n".join(lines)


# Fixed inputs whose probabilities are recorded at training time; the tests replay them.
REFERENCE_CHECKS = [
    {
        "claim": "The Eiffel Tower is 450 metres tall.",
        "references": [
            "The tower is 330 metres tall, about the same height as an 81-storey building."
        ],
    },
    {
        "claim": "The Eiffel Tower is 330 metres tall.",
        "references": [
            "The tower is 330 metres tall, about the same height as an 81-storey building."
        ],
    },
    {
        "claim": "Python was first released in 1994.",
        "references": ["Python was created by Guido van Rossum and first released in 1991."],
    },
    {
        "claim": "The tower was originally painted bright green to honour the French navy.",
        "references": ["The tower has been repainted 19 times since it was built."],
    },
    {
        "claim": "Swallows feed on insects caught in flight.",
        "references": [
            "Swallows are small passerine birds found around the world.",
            "They feed on insects caught in flight.",
        ],
    },
]


def record_reference_checks() -> list[dict[str, Any]]:
    """The shipped checker's output on `REFERENCE_CHECKS`, read back from the written files."""
    checker = EmbeddedChecker()
    items = [
        CheckItem(
            claim=Claim(text=case["claim"]),
            references=[Reference(text=text) for text in case["references"]],
            request_id=f"reference-{index}",
            claim_index=0,
        )
        for index, case in enumerate(REFERENCE_CHECKS)
    ]
    return [
        {
            **case,
            "label": verdict.label.value if verdict.label else None,
            "probabilities": {k.value: v for k, v in (verdict.probabilities or {}).items()},
        }
        for case, verdict in zip(REFERENCE_CHECKS, checker.check_batch(items), strict=True)
    ]


def write_reference_checks(fitted: bool) -> None:
    """Record `REFERENCE_CHECKS` and the environment into the shipped metadata; `fitted`: the
    parameters were fitted in this environment too."""
    metadata = json.loads(embedded_model.METADATA_PATH.read_text(encoding="utf-8"))
    metadata["reference_checks"] = record_reference_checks()
    environment = embedded_model.numeric_environment()
    recorded = metadata.get("environment", {})
    metadata["environment"] = {
        "fitted": environment if fitted else recorded.get("fitted"),
        "recorded": environment,
    }
    embedded_model.METADATA_PATH.write_text(json.dumps(metadata, indent=2) + "\n", "utf-8")


def held_out_model(items: list[Item], held_out: str, tokenizer: Any, output: Path) -> None:
    """Train and write the checker of a leave-one-set-out fold: no example of `held_out` and
    none sharing a group with it (synthetic claims carry their source's group), the token
    table fit on the remaining texts only, as `--fold-honest` fits it (the table and the
    features are cached, so a fold trains again in about a minute)."""
    excluded = {item.group for item in items if item.dataset == held_out}
    kept = [item for item in items if item.group not in excluded]
    arrays = static_arrays(items, tokenizer, kept)
    x = featurise(kept, StaticEmbeddings.from_arrays(arrays, tokenizer), arrays)
    model = train(x, kept, np.arange(len(FEATURE_NAMES)))
    counts = {name: sum(item.dataset == name for item in kept) for name in DATASET_NAMES}
    output.parent.mkdir(parents=True, exist_ok=True)
    save_model(
        model,
        arrays,
        {"seed": SEED, "dimensions": DIMENSIONS, "held_out": held_out, "trained_on": counts},
        path=output,
        metadata_path=output.with_suffix(".json"),
    )
    log.info("wrote %s, trained without %s", output, held_out)


def leave_one_set_out(items: list[Item], tokenizer: Any, limit: int) -> str:
    """Each set scored by the checker trained without it (`held_out_model`); the table."""
    from refcheck_callbacks.training.reader_evaluation import evaluate_fold, markdown_table

    scores = []
    for name in DATASET_NAMES:
        path = CACHE / "folds" / f"without-{name}.npz"
        held_out_model(items, name, tokenizer, path)
        checkers = {"embedded, without the set": EmbeddedChecker(model_path=path)}
        scores += evaluate_fold(name, checkers, limit=limit, seed=SEED)
        log.info("scored the fold without %s", name)
    table = markdown_table(scores)
    (CACHE / "folds" / "leave-one-set-out.md").write_text(table + "\n", encoding="utf-8")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="cross-validate only")
    parser.add_argument(
        "--fold-honest",
        action="store_true",
        help="also cross-validate with the token table fit per fold on the training part's "
        "texts only (five table fits; checks that fitting on all texts leaks nothing)",
    )
    parser.add_argument(
        "--record-only",
        action="store_true",
        help="train nothing: re-record the shipped parameters' reference checks and the "
        "environment they were recorded in (after a change to inference arithmetic)",
    )
    parser.add_argument(
        "--leave-one-set-out",
        action="store_true",
        help="train a checker without each set in turn and score it on that set (at most "
        "--eval-limit claims, as the reader's folds); the shipped parameters untouched",
    )
    parser.add_argument("--eval-limit", type=int, default=1000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.record_only:
        write_reference_checks(fitted=False)
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    real = load_items()
    items = real + synthetic_contradictions(real, limit=SYNTHETIC)
    tokenizer = load_tokenizer(bundled_minilm_path())
    if args.leave_one_set_out:
        print(leave_one_set_out(items, tokenizer, args.eval_limit))
        return

    def features_with(fit_on: list[Item] | None) -> tuple[Any, dict[str, Any]]:
        arrays = static_arrays(items, tokenizer, fit_on)
        return featurise(items, StaticEmbeddings.from_arrays(arrays, tokenizer), arrays), arrays

    x, arrays = features_with(items)
    x_distilled, _ = features_with(None)
    full = full_minilm_similarity(items, full_minilm_embeddings(corpus_texts(items)))
    every = np.arange(len(FEATURE_NAMES))
    sim, lexical_overlap = (np.array([FEATURE_NAMES.index(f)]) for f in BASELINES.values())
    results = {"learned": cross_validate(x, items, every)}
    if args.fold_honest:

        def honest(train_items: list[Item]) -> Any:
            return features_with(train_items)[0]

        results["learned, fold-honest table"] = cross_validate(x, items, every, honest)
        results["static similarity, fold-honest table"] = cross_validate(x, items, sim, honest)
    results["learned, per-token table"] = cross_validate(x_distilled, items, every)
    results["static similarity"] = cross_validate(x, items, sim)
    results["static similarity, per-token table"] = cross_validate(x_distilled, items, sim)
    results["lexical overlap"] = cross_validate(x, items, lexical_overlap)
    results["full-MiniLM raw similarity"] = cross_validate(
        np.concatenate([x, full], axis=1), items, np.array([len(FEATURE_NAMES)])
    )
    table = markdown_table(results)
    print(table)
    for method, report in results.items():
        pooled, three_way = report["pooled_ece"], report["climate_fever_three_way_ece"]
        print(f"{method}: pooled ECE {pooled:.3f}, climate_fever 3-way ECE {three_way:.3f}")
    (CACHE / "cv_results.json").write_text(json.dumps(results, indent=2))
    if args.no_write:
        return
    model = train(x, items, every)
    counts = {name: sum(item.dataset == name for item in real) for name in DATASET_NAMES}
    save_model(
        model,
        arrays,
        {
            "seed": SEED,
            "dimensions": DIMENSIONS,
            "trained_on": counts,
            "synthetic_contradictions": len(items) - len(real),
            "cross_validation": results,
            "cross_validation_table": table,
        },
    )
    write_reference_checks(fitted=True)
    log.info(
        "wrote %s (%.1f MB)",
        embedded_model.MODEL_PATH,
        embedded_model.MODEL_PATH.stat().st_size / 1e6,
    )


if __name__ == "__main__":
    sys.exit(main())
