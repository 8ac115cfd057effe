"""The bench metrics agree with scikit-learn / SciPy, and handle the undefined cases."""

from __future__ import annotations

import random

import pytest
from scipy import stats
from sklearn import metrics as skm

from refcheck_callbacks.bench import metrics

LABELS = ["entailment", "neutral", "contradiction"]


def _three_way(seed: int, n: int = 300) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    gold = [rng.choice(LABELS) for _ in range(n)]
    # A checker that is right about 60% of the time and never says contradiction on seed 2.
    pool = LABELS[:2] if seed == 2 else LABELS
    predicted = [g if rng.random() < 0.6 else rng.choice(pool) for g in gold]
    return gold, predicted


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_three_way_metrics_match_scikit_learn(seed: int) -> None:
    gold, predicted = _three_way(seed)
    assert metrics.accuracy(gold, predicted) == pytest.approx(skm.accuracy_score(gold, predicted))
    assert (
        metrics.confusion_matrix(gold, predicted, LABELS)
        == skm.confusion_matrix(gold, predicted, labels=LABELS).tolist()
    )
    assert metrics.macro_f1(gold, predicted, LABELS) == pytest.approx(
        skm.f1_score(gold, predicted, labels=LABELS, average="macro", zero_division=0)
    )
    precision, recall, f1, support = skm.precision_recall_fscore_support(
        gold, predicted, labels=LABELS, zero_division=0
    )
    scores = metrics.per_label_scores(gold, predicted, LABELS)
    for i, label in enumerate(LABELS):
        assert scores[label].precision == pytest.approx(precision[i])
        assert scores[label].recall == pytest.approx(recall[i])
        assert scores[label].f1 == pytest.approx(f1[i])
        assert scores[label].support == support[i]


def test_a_label_never_predicted_scores_zero_like_scikit_learn() -> None:
    gold = ["entailment", "neutral", "neutral", "contradiction"]
    predicted = ["entailment", "neutral", "neutral", "neutral"]
    scores = metrics.per_label_scores(gold, predicted, LABELS)
    assert scores["contradiction"].precision == 0.0
    assert scores["contradiction"].f1 == 0.0
    assert metrics.macro_f1(gold, predicted, LABELS) == pytest.approx(
        skm.f1_score(gold, predicted, labels=LABELS, average="macro", zero_division=0)
    )


def _binary(seed: int, n: int = 400) -> tuple[list[bool], list[float]]:
    rng = random.Random(seed)
    gold = [rng.random() < 0.3 for _ in range(n)]
    # Rounded scores make many ties, which AUROC and the ROC curve must handle.
    scores = [round(min(1.0, max(0.0, rng.gauss(0.65 if g else 0.45, 0.2))), 1) for g in gold]
    return gold, scores


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_metrics_match_scikit_learn(seed: int) -> None:
    gold, scores = _binary(seed)
    predicted = [s >= 0.5 for s in scores]
    assert metrics.balanced_accuracy(gold, predicted) == pytest.approx(
        skm.balanced_accuracy_score(gold, predicted)
    )
    assert metrics.auroc(gold, scores) == pytest.approx(skm.roc_auc_score(gold, scores))
    fpr, tpr, _ = skm.roc_curve(gold, scores, drop_intermediate=False)
    curve = metrics.roc_curve(gold, scores)
    assert curve is not None
    assert curve.false_positive_rate == pytest.approx(fpr.tolist())
    assert curve.true_positive_rate == pytest.approx(tpr.tolist())


def test_auroc_by_hand() -> None:
    # Positives 0.9, 0.5; negatives 0.5, 0.1: pairs won 1 + 1 + 0.5 (tie) + 1 of 4.
    assert metrics.auroc([True, True, False, False], [0.9, 0.5, 0.5, 0.1]) == pytest.approx(0.875)
    assert metrics.auroc([True, False], [0.2, 0.8]) == 0.0


def test_undefined_values_are_none_not_a_crash() -> None:
    assert metrics.auroc([True, True], [0.1, 0.9]) is None
    assert metrics.roc_curve([False, False], [0.1, 0.9]) is None
    assert metrics.pearson([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is None
    assert metrics.spearman([1.0], [2.0]) is None
    assert metrics.balanced_accuracy([True, True], [True, False]) == 0.5
    assert metrics.accuracy([], []) == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_correlations_match_scipy(seed: int) -> None:
    rng = random.Random(seed)
    gold = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(80)]
    predicted = [min(1.0, max(0.0, g + rng.gauss(0, 0.3))) for g in gold]
    assert metrics.pearson(predicted, gold) == pytest.approx(stats.pearsonr(predicted, gold)[0])
    assert metrics.spearman(predicted, gold) == pytest.approx(
        stats.spearmanr(predicted, gold).statistic
    )


def test_average_ranks_share_ties() -> None:
    assert metrics.average_ranks([10.0, 20.0, 10.0, 30.0]) == [1.5, 3.0, 1.5, 4.0]


def test_histogram_bins_cover_zero_to_one_inclusive() -> None:
    assert metrics.histogram([0.0, 0.04, 0.05, 0.5, 0.99, 1.0], bins=20) == [
        2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2,
    ]  # fmt: skip


def _ranked_questions(seed: int) -> tuple[list[str], list[bool], list[float]]:
    rng = random.Random(seed)
    groups, relevant, scores = [], [], []
    for question in range(40):
        size = rng.randint(2, 9)
        labels = [rng.random() < 0.3 for _ in range(size)]
        groups += [f"q{question}"] * size
        relevant += labels
        scores += [rng.random() + (0.4 if label else 0.0) for label in labels]
    return groups, relevant, scores


@pytest.mark.parametrize("seed", [0, 1])
def test_map_and_mrr_match_scikit_learn_per_question(seed: int) -> None:
    groups, relevant, scores = _ranked_questions(seed)
    precisions, reciprocal = [], []
    for question in dict.fromkeys(groups):
        labels = [r for g, r in zip(groups, relevant, strict=True) if g == question]
        values = [s for g, s in zip(groups, scores, strict=True) if g == question]
        if any(labels) and not all(labels):
            precisions.append(skm.average_precision_score(labels, values))
            # The best-ranked relevant passage: one query's label ranking precision at its rank.
            best = max(v for v, label in zip(values, labels, strict=True) if label)
            reciprocal.append(skm.label_ranking_average_precision_score(
                [[v == best for v in values]], [values]
            ))  # fmt: skip
    assert metrics.mean_average_precision(groups, relevant, scores) == pytest.approx(
        sum(precisions) / len(precisions)
    )
    assert metrics.mean_reciprocal_rank(groups, relevant, scores) == pytest.approx(
        sum(reciprocal) / len(reciprocal)
    )


def test_mrr_by_hand() -> None:
    groups = ["a", "a", "a", "b", "b", "c", "d", "d"]
    relevant = [False, True, True, True, False, True, False, True]
    scores = [0.9, 0.5, 0.1, 0.8, 0.2, 0.3, 0.4, 0.4]
    # a: first relevant at rank 2; b: rank 1; c: no negative, left out; d: a tie goes against
    # the relevant passage (rank 2).
    assert metrics.mean_reciprocal_rank(groups, relevant, scores) == pytest.approx(
        (1 / 2 + 1 + 1 / 2) / 3
    )
    assert metrics.mean_reciprocal_rank(["a"], [True], [0.5]) is None
