"""Which claims are not independent of each other, and how much that widens a flag share.

The claims of one answer share its question and references, and the same claim can come back
in many answers (a popular question, a cached reply): such claims are flagged together, so a
flag share over them varies more than a binomial one. Claims are joined into clusters when
they share an answer or their text (`cluster_ids`), and the clustering's cost is measured as
a design effect (`design_effect`), which `posterior` divides the claim counts by.
"""

from __future__ import annotations

from collections.abc import Sequence


def cluster_ids(answers: Sequence[Sequence[str]]) -> list[list[int]]:
    """A cluster id per claim of each answer (given as its claims' texts): claims of one
    answer share one, and so do answers with a claim of the same text (union-find)."""
    parent = list(range(len(answers)))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    first_with: dict[str, int] = {}
    for index, claims in enumerate(answers):
        for text in claims:
            key = " ".join(text.lower().split())
            other = first_with.setdefault(key, index)
            parent[root(index)] = root(other)
    return [[root(index)] * len(claims) for index, claims in enumerate(answers)]


def flag_clusters(ids: Sequence[int], flagged: Sequence[bool]) -> list[tuple[int, int]]:
    """(flagged, claims) per cluster, from a cluster id and a flag per claim."""
    counts: dict[int, list[int]] = {}
    for cluster, flag in zip(ids, flagged, strict=True):
        entry = counts.setdefault(cluster, [0, 0])
        entry[0] += int(flag)
        entry[1] += 1
    return [(hits, total) for hits, total in counts.values()]


def design_effect(clusters: Sequence[tuple[int, int]]) -> float:
    """How much more a flag share varies than a binomial one over the same claims, given
    (flagged, claims) per cluster: the cluster-robust variance of the ratio over
    `q (1 - q) / n`, at least 1. One cluster, or a share of 0 or 1, tells nothing: 1."""
    n, groups = float(sum(total for _, total in clusters)), len(clusters)
    if groups < 2 or n <= 0:
        return 1.0
    share = sum(count for count, _ in clusters) / n
    binomial = share * (1.0 - share) / n
    if binomial <= 0.0:
        return 1.0
    spread = sum((count - share * total) ** 2 for count, total in clusters)
    robust = groups / (groups - 1) * spread / n**2
    return max(1.0, robust / binomial)
