"""Loaders for the public labelled sets in the data directory (`data_dir`), read as they are.

Every set becomes a list of `LabelledExample`: one claim, the reference texts it is judged
against, and the human label. Labels are mapped onto ours as follows (the raw label is kept
in `source_label`):

- climate_fever: a (claim, one evidence sentence) pair; SUPPORTS -> Entailment, REFUTES ->
  Contradiction, NOT_ENOUGH_INFO -> Neutral; supported = SUPPORTS.
- wice: a claim vs the cited page; supported -> Entailment, partially_supported and
  not_supported -> Neutral; supported = "supported".
- expertqa: a claim vs its retrieved passages; supported = support "Complete" (Partial,
  Incomplete, Missing are not). Skipped: support N/A or absent; evidence that is only a URL.
  Citation markers such as "[3]" are cut from the claim.
- begin: a dialogue response vs its knowledge; supported = "Fully attributable". Skipped:
  "Generic" (no claim to check).
- faithdial: a dialogue response vs its knowledge; supported = "Entailment", not supported =
  "Hallucination" or "Partial Hallucination". Skipped: Generic, Uncooperative, unlabelled.
- summedits: a summary vs its document; supported = label 1.
- faithbench: a summary vs its source; supported = worst-label Consistent or Benign.

WiCE has no refutations: "not supported" means the page does not back the claim, which is
RefChecker's Neutral, not Contradiction. FaithBench's binarisation follows its authors'
(Questionable and Unwanted are hallucinations, Benign is not).

`group` ties together examples that share text, so a split by group never puts the same text
on both sides: the source document (a hash of its normalised text, shared across sets, so a
Wikipedia snippet used by both BEGIN and FaithDial is one group), the question for ExpertQA,
and for Climate-FEVER the claims linked through shared evidence sentences (see
`_HUB_EVIDENCE_CLAIMS`).

`refchecker_annotations` cannot be loaded for checking: its references (NaturalQuestions,
MS MARCO, dolly passages) are not in the data; only its triplets and human labels are.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from refcheck_callbacks.bench.data_dir import data_dir, download_hint, missing_files
from refcheck_callbacks.errors import DatasetUnavailableError
from refcheck_callbacks.types import Label


class LabelledExample(BaseModel):
    """One human-labelled (claim, references) pair from a public set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dataset: str
    example_id: str
    group: str
    """Examples sharing a source document or question; splits never cut a group."""
    claim: str
    references: list[str]
    label: Label | None = None
    """The 3-way label, where the set has one (climate_fever, wice)."""
    supported: bool | None = None
    """Whether the references fully support the claim."""
    response_id: str | None = None
    """Claims of one response share it."""
    source_label: str | None = None
    """The label as written in the data, before mapping."""


def gold_supported(example: LabelledExample) -> bool | None:
    """Whether the references support the claim: its binary label, else its 3-way one."""
    if example.supported is not None:
        return example.supported
    return None if example.label is None else example.label is Label.ENTAILMENT


def _group_of(text: str, kind: str = "text") -> str:
    """A stable id for a text, blind to case and spacing (BEGIN lower-cases its knowledge)."""
    normalised = " ".join(text.lower().split())
    return f"{kind}:{hashlib.sha1(normalised.encode('utf-8')).hexdigest()[:16]}"


_CLIMATE_LABELS = {
    "SUPPORTS": Label.ENTAILMENT,
    "REFUTES": Label.CONTRADICTION,
    "NOT_ENOUGH_INFO": Label.NEUTRAL,
}
_HUB_EVIDENCE_CLAIMS = 2
"""Claims that share an evidence sentence are one group, unless the sentence is a stock one.

About 500 general sentences (the scientific consensus on warming, the rate of sea-level rise)
recur with three or more claims each; linking through them would chain two thirds of the set
into one group. Those few sentences can therefore appear on both sides of a split, each time
with a different claim and so a different (claim, evidence) pair.
"""


def _climate_groups(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Claim id -> group: claims joined through shared evidence sentences (union-find)."""
    claims_per_evidence = Counter(e["evidence"] for row in rows for e in row["evidences"])
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for row in rows:
        for evidence in row["evidences"]:
            if claims_per_evidence[evidence["evidence"]] <= _HUB_EVIDENCE_CLAIMS:
                parent[root("e" + evidence["evidence"])] = root("c" + row["claim_id"])
    return {row["claim_id"]: "climate:" + root("c" + row["claim_id"]) for row in rows}


def _climate_fever(root: Path) -> Iterator[LabelledExample]:
    path = root / "climate_fever" / "climate-fever.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    groups = _climate_groups(rows)
    for row in rows:
        for evidence in row["evidences"]:
            label = _CLIMATE_LABELS[evidence["evidence_label"]]
            yield LabelledExample(
                dataset="climate_fever",
                example_id=f"{row['claim_id']}/{evidence['evidence_id']}",
                group=groups[row["claim_id"]],
                claim=row["claim"],
                references=[evidence["evidence"]],
                label=label,
                supported=label is Label.ENTAILMENT,
                response_id=row["claim_id"],
                source_label=evidence["evidence_label"],
            )


def _wice(root: Path) -> Iterator[LabelledExample]:
    for line in (root / "wice" / "dev.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        page = " ".join(s.strip() for s in row["evidence"] if s.strip())
        yield LabelledExample(
            dataset="wice",
            example_id=row["meta"]["id"],
            group=_group_of(page),
            claim=row["claim"],
            references=[page],
            label=Label.ENTAILMENT if row["label"] == "supported" else Label.NEUTRAL,
            supported=row["label"] == "supported",
            response_id=row["meta"]["id"],
            source_label=row["label"],
        )


# Spaces are tried from the first of a run only (the lookbehind): tried from each space of a
# long run with no marker after it, the pattern would rescan the run each time (quadratic).
_CITATION = re.compile(r"(?<!\s)\s*\[\d+\]")


def _expertqa_passages(evidence: list[str]) -> list[str]:
    """The passages of an evidence list, without the `[n] URL` header; URL-only ones dropped."""
    passages = []
    for item in evidence:
        _, _, passage = item.partition("\n\n")
        if passage.strip():
            passages.append(passage.strip())
    return passages


def _expertqa(root: Path) -> Iterator[LabelledExample]:
    lines = (root / "expertqa" / "rand_val.jsonl").read_text(encoding="utf-8").splitlines()
    for line_number, line in enumerate(lines):
        row = json.loads(line)
        group = _group_of(row["question"], "question")
        for system, answer in row["answers"].items():
            for index, claim in enumerate(answer["claims"]):
                support = claim.get("support")
                passages = _expertqa_passages(claim.get("evidence") or [])
                if support in (None, "N/A") or not passages:
                    continue
                yield LabelledExample(
                    dataset="expertqa",
                    example_id=f"{line_number}/{system}/{index}",
                    group=group,
                    # Citation markers are answer formatting, not content (and not numbers).
                    claim=_CITATION.sub("", claim["claim_string"]).strip(),
                    references=passages,
                    supported=support == "Complete",
                    response_id=f"{line_number}/{system}",
                    source_label=support,
                )


def _dialogue(
    dataset: str,
    files: Iterable[tuple[str, Path]],
    read: Callable[[Path], list[dict[str, str]]],
    columns: tuple[str, str, str],
    supported_labels: frozenset[str],
    unsupported_labels: frozenset[str],
) -> Iterator[LabelledExample]:
    """A response judged against one knowledge snippet; labels outside both sets are skipped."""
    knowledge_column, response_column, label_column = columns
    for source, path in files:
        for row_number, row in enumerate(read(path)):
            raw = (row.get(label_column) or "").strip()
            if raw not in supported_labels and raw not in unsupported_labels:
                continue
            example_id = f"{source}/{row_number}"
            yield LabelledExample(
                dataset=dataset,
                example_id=example_id,
                group=_group_of(row[knowledge_column]),
                claim=row[response_column].strip(),
                references=[row[knowledge_column].strip()],
                supported=raw in supported_labels,
                response_id=example_id,
                source_label=raw,
            )


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _begin(root: Path) -> Iterator[LabelledExample]:
    return _dialogue(
        "begin",
        [(name, root / "begin" / f"dev_{name}.tsv") for name in ("wow", "cmu")],
        _read_tsv,
        ("knowledge", "response", "begin_label"),
        frozenset({"Fully attributable"}),
        frozenset({"Not fully attributable"}),
    )


def _faithdial(root: Path) -> Iterator[LabelledExample]:
    return _dialogue(
        "faithdial",
        [(name, root / "faithdial" / f"gold_{name}.csv") for name in ("wow", "cmu")],
        _read_csv,
        ("evidence", "response", "BEGIN"),
        frozenset({"Entailment"}),
        frozenset({"Hallucination", "Partial Hallucination"}),
    )


def _summedits(root: Path) -> Iterator[LabelledExample]:
    for path in sorted((root / "summedits").glob("*.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            yield LabelledExample(
                dataset="summedits",
                example_id=str(row["id"]),
                group=_group_of(row["doc"]),
                claim=row["summary"].strip(),
                references=[row["doc"]],
                supported=int(row["label"]) == 1,
                response_id=str(row["id"]),
                source_label=str(row["label"]),
            )


_FAITHBENCH_SUPPORTED = frozenset({"Consistent", "Benign"})


def _faithbench(root: Path) -> Iterator[LabelledExample]:
    for row_number, row in enumerate(_read_csv(root / "faithbench" / "FaithBench.csv")):
        example_id = f"faithbench/{row_number}"
        yield LabelledExample(
            dataset="faithbench",
            example_id=example_id,
            group=_group_of(row["source"]),
            claim=row["summary"].strip(),
            references=[row["source"].strip()],
            supported=row["worst-label"] in _FAITHBENCH_SUPPORTED,
            response_id=example_id,
            source_label=row["worst-label"],
        )


_LOADERS: dict[str, Callable[[Path], Iterable[LabelledExample]]] = {
    "climate_fever": _climate_fever,
    "wice": _wice,
    "expertqa": _expertqa,
    "begin": _begin,
    "faithdial": _faithdial,
    "summedits": _summedits,
    "faithbench": _faithbench,
}
DATASET_NAMES: tuple[str, ...] = tuple(_LOADERS)
"""The sets `load_dataset` reads, in a fixed order."""
RELEVANCE = "relevance"
"""Not a set: the `--dataset` name of the relevance bench (`bench.relevance_bench`), which
reads WikiQA, TREC QA, ExpertQA's ratings and the sets above in its own way."""


def load_dataset(
    name: str, path: Path | None = None, limit: int | None = None
) -> list[LabelledExample]:
    """The labelled examples of one set, in file order; `limit` keeps the first ones.

    `path` is the data root holding one folder per set (default: `data_dir()`). A set whose
    files are not all there raises `DatasetUnavailableError` saying how to download it.
    """
    if name == "refchecker_annotations":
        raise DatasetUnavailableError(
            "refchecker_annotations holds no reference texts, so its claims cannot be checked; "
            "use it for triplets and aggregation only"
        )
    loader = _LOADERS.get(name)
    if loader is None:
        raise DatasetUnavailableError(
            f"unknown dataset {name!r}; choose one of {', '.join(DATASET_NAMES)}"
        )
    root = path if path is not None else data_dir()
    missing = missing_files(name, root)
    if missing:
        raise DatasetUnavailableError(
            f"{name} is not in {root} (missing {', '.join(missing)}); "
            + download_hint([name], root)
        )
    examples = loader(root)
    return list(examples if limit is None else islice(examples, limit))
