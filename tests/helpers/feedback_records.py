"""Reading a feedback file the way `refcheck calibrate` reads labelled records: its own reader,
and the record shape it documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from refcheck_callbacks.bench.labelled_records import read_labelled_records

CALIBRATE_LABELS = {"Entailment", "Neutral", "Contradiction", True, False, None}


def calibrate_records(path: Path) -> list[dict[str, Any]]:
    """The file's records, each checked for what `refcheck calibrate` needs: JSON Lines of
    RefChecker records with claims, a parallel list of labels (Entailment / Neutral /
    Contradiction, true / false, null for a claim not labelled) and reference text."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for record in records:
        assert isinstance(record["claims"], list) and all(record["claims"])
        assert len(record["labels"]) == len(record["claims"])
        assert set(record["labels"]) <= CALIBRATE_LABELS
        assert all(ref["text"] for ref in record["references"]) and record["references"]
        assert len(record["predicted"]) == len(record["claims"])
    read = read_labelled_records(path)
    assert read.problems == [], read.problems
    assert read.records == len(records)
    labelled = sum(label is not None for record in records for label in record["labels"])
    assert len(read.examples) == labelled, "calibrate reads every labelled claim of the file"
    return records
