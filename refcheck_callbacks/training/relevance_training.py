"""Train the relevance head (`check.relevance`) and write the parameters the package ships.

    python -m refcheck_callbacks.training.relevance_training            # evaluate, train, write
    python -m refcheck_callbacks.training.relevance_training --no-write # evaluate only

Seeded and deterministic; resumable: features and the full MiniLM baseline's embeddings are
cached under `--work-dir` (default /tmp/refcheck_relevance, outside the repository) by a
digest of the data and of the feature code's names, so a second run starts where the first
stopped. Steps:
1. Features (`features.FEATURE_NAMES`) for every WikiQA train/dev and TREC QA TRAIN/DEV pair.
2. Dev-split figures: a head trained on the two train splits, scored on each dev split (MAP,
   pooled AUROC: the dev negatives are topical sentences without the answer, RGB's kind),
   beside the cosine of the full MiniLM transformer and of the static table alone (before).
3. Leave-one-set-out: a head trained on one set's train split, scored on the other's dev.
4. The shipped head: trained on all four splits; its relevance threshold is the one that gave
   the best balanced accuracy on the dev splits in step 2.
5. Claim relevance: a logistic (classes balanced) of each ExpertQA claim's cosine to its
   question and the rest of its answer (`features.claim_context_cosines`), on the experts'
   `informativeness`. One monotone map of one signal: its AUROC is the same in and out of
   sample, beside the head's question-only score (before). Written to
   `check/relevance/head.json` with the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from refcheck_callbacks.bench.metrics import auroc, mean_average_precision
from refcheck_callbacks.check.relevance import features
from refcheck_callbacks.check.relevance.head import HEAD_PATH, RelevanceHead
from refcheck_callbacks.training.relevance_data import (
    SPLITS,
    RelevancePair,
    load_claim_relevance,
    load_pairs,
)

SEED = 13
HIDDEN = 16
"""Units of the head's one hidden layer (0: a logistic regression)."""
TRAIN_SPLITS = {"wikiqa": "train", "trecqa": "TRAIN"}
DEV_SPLITS = {"wikiqa": "dev", "trecqa": "DEV"}


def _digest(pairs: list[RelevancePair], salt: str) -> str:
    digest = hashlib.sha256(salt.encode("utf-8"))
    for pair in pairs:
        digest.update(f"{pair.question}\t{pair.passage}\n".encode())
    return digest.hexdigest()[:16]


def _cached(path: Path, compute: Any) -> Any:
    if path.exists():
        return np.load(path)["values"]
    values = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path.with_suffix(".tmp.npz"), values=values)
    path.with_suffix(".tmp.npz").replace(path)
    return values


def _features(pairs: list[RelevancePair]) -> Any:
    from refcheck_callbacks.check.relevance.scorer import shipped_static

    static = shipped_static()
    rows: Any = np.zeros((len(pairs), len(features.BASE_NAMES)), dtype=np.float32)
    by_question: dict[str, list[int]] = {}
    for index, pair in enumerate(pairs):
        by_question.setdefault(pair.question_id + pair.question, []).append(index)
    for indices in by_question.values():
        passages = features.prepare_passages([pairs[i].passage for i in indices], static)
        rows[indices] = features.base_features(pairs[indices[0]].question, passages, static)
    return rows


def _in_context(pairs: list[RelevancePair], base: Any) -> Any:
    """Full feature rows: each question's candidates are the passages retrieved together."""
    rows: Any = np.zeros((len(pairs), len(features.FEATURE_NAMES)), dtype=np.float32)
    by_question: dict[str, list[int]] = {}
    for index, pair in enumerate(pairs):
        by_question.setdefault(pair.question_id + pair.question, []).append(index)
    for indices in by_question.values():
        rows[indices] = features.in_context(base[indices])
    return rows


def _alone(base: Any) -> Any:
    """Full feature rows of each passage retrieved alone (a request with one reference, an
    answer scored against its question): the in-context signals are all zero."""
    return np.concatenate(
        [base, np.zeros((len(base), len(features.IN_CONTEXT)), dtype=np.float32)], axis=1
    )


def _minilm_cosine(pairs: list[RelevancePair]) -> Any:
    """The issue's baseline: the full MiniLM transformer's cosine of question and passage."""
    from refcheck_callbacks.embeddings.minilm import SentenceEncoder

    encoder = SentenceEncoder(cache_size=50_000)
    questions = encoder.encode([pair.question for pair in pairs])
    passages = encoder.encode([pair.passage for pair in pairs])
    return (questions * passages).sum(axis=1)


def fit_head(x: Any, y: Any, hidden: int = HIDDEN, seed: int = SEED) -> RelevanceHead:
    """A seeded MLP (or logistic regression) on standardised features, classes balanced."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    mean = x.mean(axis=0)
    scale = np.maximum(x.std(axis=0), 1e-6)
    z = (x - mean) / scale
    if hidden == 0:
        model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
        model.fit(z, y)
        weights, biases = [model.coef_.T], [model.intercept_]
    else:
        positives = max(1, int(y.sum()))
        repeat = max(1, round((len(y) - positives) / positives))
        balanced_x = np.concatenate([z, np.repeat(z[y == 1], repeat - 1, axis=0)])
        balanced_y = np.concatenate([y, np.ones(positives * (repeat - 1))])
        model = MLPClassifier(
            hidden_layer_sizes=(hidden,),
            alpha=1e-2,
            max_iter=400,
            random_state=seed,
            early_stopping=True,
            validation_fraction=0.1,
        )
        model.fit(balanced_x, balanced_y)
        weights, biases = list(model.coefs_), list(model.intercepts_)
    return RelevanceHead(features.FEATURE_NAMES, mean, scale, weights, biases, threshold=0.5)


def _figures(pairs: list[RelevancePair], scores: Any) -> dict[str, float | None]:
    labels = [pair.relevant for pair in pairs]
    groups = [pair.question_id for pair in pairs]
    map_ = mean_average_precision(groups, labels, [float(s) for s in scores])
    area = auroc(labels, [float(s) for s in scores])
    return {
        "map": None if map_ is None else round(map_, 4),
        "auroc": None if area is None else round(area, 4),
    }


def claim_calibration(head: RelevanceHead) -> tuple[float, float, dict[str, Any]]:
    """The claim-relevance logistic's slope and intercept, and its figures (step 5)."""
    from sklearn.linear_model import LogisticRegression

    from refcheck_callbacks.check.relevance.scorer import shipped_static

    static = shipped_static()
    claims = load_claim_relevance()
    by_answer: dict[str, list[int]] = {}
    for index, claim in enumerate(claims):
        by_answer.setdefault(claim.question_id, []).append(index)
    cosines: Any = np.zeros(len(claims))
    question_only: Any = np.zeros(len(claims))
    for indices in by_answer.values():
        question, texts = claims[indices[0]].question, [claims[i].claim for i in indices]
        passages = features.prepare_passages(texts, static)
        cosines[indices] = features.claim_context_cosines(question, passages, static)
        question_only[indices] = head.probability(
            features.query_features(question, passages, static)
        )
    labels = np.array([claim.relevant for claim in claims], dtype=np.int64)
    model = LogisticRegression(C=1e4, class_weight="balanced").fit(cosines[:, None], labels)
    figures = {
        "claims": len(claims),
        "relevant": int(labels.sum()),
        "auroc_before": round(auroc(labels.tolist(), question_only.tolist()) or 0.0, 4),
        "auroc_after": round(auroc(labels.tolist(), cosines.tolist()) or 0.0, 4),
    }
    return float(model.coef_[0][0]), float(model.intercept_[0]), figures


def _best_threshold(labels: Any, scores: Any) -> float:
    best, cut = -1.0, 0.5
    for candidate in np.linspace(0.05, 0.95, 91):
        predicted = scores >= candidate
        recall = predicted[labels == 1].mean()
        specificity = (~predicted[labels == 0]).mean()
        if (recall + specificity) / 2 > best:
            best, cut = (recall + specificity) / 2, float(candidate)
    return cut


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/refcheck_relevance"))
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--out", type=Path, default=HEAD_PATH)
    parser.add_argument("--hidden", type=int, default=HIDDEN)
    parser.add_argument("--no-baseline", action="store_true", help="skip the full MiniLM cosine")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    salt = ",".join(features.BASE_NAMES)
    data: dict[tuple[str, str], tuple[list[RelevancePair], Any, Any | None, Any]] = {}
    for dataset, splits in SPLITS.items():
        for split in splits:
            pairs = load_pairs(dataset, split)
            key = _digest(pairs, salt)
            base = _cached(args.work_dir / f"features-{key}.npz", lambda p=pairs: _features(p))
            x = _in_context(pairs, base)
            alone = _alone(base)
            baseline = None
            if not args.no_baseline:
                plain = _digest(pairs, "minilm")
                baseline = _cached(
                    args.work_dir / f"minilm-{plain}.npz", lambda p=pairs: _minilm_cosine(p)
                )
            data[dataset, split] = (pairs, x, baseline, alone)
            print(f"features {dataset} {split}: {len(pairs)} pairs", file=sys.stderr)

    def stack(keys: list[tuple[str, str]]) -> tuple[Any, Any]:
        """Every pair twice: among its question's candidates, and alone."""
        x = np.concatenate([data[k][1] for k in keys] + [data[k][3] for k in keys])
        y = np.concatenate([[p.relevant for p in data[k][0]] for k in keys] * 2)
        return x, y.astype(np.float64)

    report: dict[str, Any] = {"dev": {}, "leave_one_set_out": {}}
    train_keys = list(TRAIN_SPLITS.items())
    head = fit_head(*stack(train_keys), hidden=args.hidden)
    dev_scores, dev_labels = [], []
    cosine_index = features.FEATURE_NAMES.index("cosine")
    for dataset, split in DEV_SPLITS.items():
        pairs, x, baseline, alone = data[dataset, split]
        scores = head.probability(x)
        dev_scores.append(scores)
        dev_labels.append([p.relevant for p in pairs])
        report["dev"][dataset] = {
            "after": _figures(pairs, scores),
            "after_alone": _figures(pairs, head.probability(alone)),
            "static_cosine": _figures(pairs, x[:, cosine_index]),
            **({"minilm_cosine": _figures(pairs, baseline)} if baseline is not None else {}),
        }
    threshold = _best_threshold(np.concatenate(dev_labels), np.concatenate(dev_scores))
    for held_out, other in (("wikiqa", "trecqa"), ("trecqa", "wikiqa")):
        alone = fit_head(
            *stack([(other, TRAIN_SPLITS[other]), (other, DEV_SPLITS[other])]), hidden=args.hidden
        )
        pairs, x, _, _ = data[held_out, DEV_SPLITS[held_out]]
        report["leave_one_set_out"][held_out] = _figures(pairs, alone.probability(x))
    final = fit_head(*stack(list(data)), hidden=args.hidden)
    slope, intercept, report["claim_relevance"] = claim_calibration(final)
    final = RelevanceHead(
        final.feature_names,
        final.mean,
        final.scale,
        final.weights,
        final.biases,
        threshold,
        claim_slope=slope,
        claim_intercept=intercept,
    )
    report["threshold"] = round(threshold, 4)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))
    if not args.no_write:
        payload = final.to_json(seed=SEED, hidden=args.hidden, figures=report)
        args.out.write_text(json.dumps(payload) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
