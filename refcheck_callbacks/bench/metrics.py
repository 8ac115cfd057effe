"""Classification and correlation metrics for checker benchmarks, in plain Python.

The numbers papers in this field report: accuracy, macro-F1 and per-label precision / recall /
F1 for 3-way labels; balanced accuracy and AUROC of a support score for binary labels;
Pearson and Spearman correlation of response-level hallucination rates. Written here, not
taken from scikit-learn, so `refcheck bench` needs no extra dependency; the tests compare every
function with scikit-learn. Undefined values (a class never predicted, a constant series)
follow scikit-learn's convention of 0 for P / R / F1 and are None for AUROC and correlations.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=Hashable)


class LabelScores(BaseModel):
    precision: float
    recall: float
    f1: float
    support: int
    """How many gold examples carry this label."""


class RocCurve(BaseModel):
    """Points of the ROC curve, from (0, 0) to (1, 1), one per distinct score threshold."""

    false_positive_rate: list[float]
    true_positive_rate: list[float]


def confusion_matrix(
    gold: Sequence[T], predicted: Sequence[T], labels: Sequence[T]
) -> list[list[int]]:
    """Counts with gold labels as rows and predictions as columns, both in `labels` order."""
    position = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, predicted, strict=True):
        if g in position and p in position:
            matrix[position[g]][position[p]] += 1
    return matrix


def accuracy(gold: Sequence[T], predicted: Sequence[T]) -> float:
    if not gold:
        return 0.0
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold)


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def per_label_scores(
    gold: Sequence[T], predicted: Sequence[T], labels: Sequence[T]
) -> dict[T, LabelScores]:
    matrix = confusion_matrix(gold, predicted, labels)
    scores = {}
    for i, label in enumerate(labels):
        true_positive = matrix[i][i]
        predicted_count = sum(row[i] for row in matrix)
        gold_count = sum(matrix[i])
        precision = _ratio(true_positive, predicted_count)
        recall = _ratio(true_positive, gold_count)
        scores[label] = LabelScores(
            precision=precision,
            recall=recall,
            f1=_ratio(2 * precision * recall, precision + recall),
            support=gold_count,
        )
    return scores


def macro_f1(gold: Sequence[T], predicted: Sequence[T], labels: Sequence[T]) -> float:
    """The unweighted mean of each label's F1: rare labels count as much as common ones."""
    scores = per_label_scores(gold, predicted, labels)
    return sum(s.f1 for s in scores.values()) / len(labels)


def balanced_accuracy(gold: Sequence[bool], predicted: Sequence[bool]) -> float:
    """The mean recall of both classes; 0.5 for a checker that always says the same."""
    recalls = []
    for cls in (True, False):
        members = [p for g, p in zip(gold, predicted, strict=True) if g is cls]
        if members:
            recalls.append(sum(p is cls for p in members) / len(members))
    return sum(recalls) / len(recalls) if recalls else 0.0


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def auroc(positive: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Probability that a random positive outscores a random negative (ties count half).

    None when only one class is present: the ranking is then undefined.
    """
    n_pos = sum(positive)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = average_ranks(scores)
    positive_rank_sum = sum(r for r, p in zip(ranks, positive, strict=True) if p)
    return (positive_rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def roc_curve(positive: Sequence[bool], scores: Sequence[float]) -> RocCurve | None:
    n_pos = sum(positive)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    pairs = sorted(zip(scores, positive, strict=True), key=lambda pair: -pair[0])
    fpr, tpr = [0.0], [0.0]
    tp = fp = 0
    for i, (score, is_positive) in enumerate(pairs):
        tp += is_positive
        fp += not is_positive
        if i + 1 == len(pairs) or pairs[i + 1][0] != score:
            fpr.append(fp / n_neg)
            tpr.append(tp / n_pos)
    return RocCurve(false_positive_rate=fpr, true_positive_rate=tpr)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Linear correlation; None for fewer than two points or a constant series."""
    n = len(x)
    if n < 2:
        return None
    mean_x, mean_y = sum(x) / n, sum(y) / n
    cov = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y, strict=True))
    var_x = sum((a - mean_x) ** 2 for a in x)
    var_y = sum((b - mean_y) ** 2 for b in y)
    if var_x == 0 or var_y == 0:
        return None
    return cov / math.sqrt(var_x * var_y)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Rank correlation: Pearson on average ranks."""
    return pearson(average_ranks(x), average_ranks(y))


def histogram(values: Sequence[float], bins: int = 20) -> list[int]:
    """Counts of values in `bins` equal-width bins over [0, 1]; 1.0 falls in the last bin."""
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value * bins)))] += 1
    return counts


def _ranked_questions(
    groups: Sequence[str], relevant: Sequence[bool], scores: Sequence[float]
) -> list[list[bool]]:
    """Per question with both a relevant and an irrelevant passage (WikiQA's and TREC QA's
    usual filter), its passages' labels in rank order, ties broken against the relevant ones."""
    by_group: dict[str, list[tuple[float, bool]]] = {}
    for group, label, score in zip(groups, relevant, scores, strict=True):
        by_group.setdefault(group, []).append((score, label))
    ranked = []
    for rows in by_group.values():
        if all(label for _, label in rows) or not any(label for _, label in rows):
            continue
        rows.sort(key=lambda row: (-row[0], row[1]))
        ranked.append([label for _, label in rows])
    return ranked


def mean_average_precision(
    groups: Sequence[str], relevant: Sequence[bool], scores: Sequence[float]
) -> float | None:
    """Answer selection's MAP: per question, the mean precision at each relevant passage's
    rank, averaged over the questions `_ranked_questions` keeps (None when none is left)."""
    precisions = []
    for labels in _ranked_questions(groups, relevant, scores):
        hits, total = 0, 0.0
        for rank, label in enumerate(labels, start=1):
            if label:
                hits += 1
                total += hits / rank
        precisions.append(total / hits)
    return sum(precisions) / len(precisions) if precisions else None


def mean_reciprocal_rank(
    groups: Sequence[str], relevant: Sequence[bool], scores: Sequence[float]
) -> float | None:
    """Answer selection's MRR: per question, 1 / the rank of its first relevant passage,
    averaged over the questions `_ranked_questions` keeps (None when none is left)."""
    ranks = [labels.index(True) + 1 for labels in _ranked_questions(groups, relevant, scores)]
    return sum(1 / rank for rank in ranks) / len(ranks) if ranks else None
