"""docs/bench.md's results table is what `refcheck bench` prints today.

The table is `bench.md` as the command writes it. Two small sets are rerun here (a few seconds)
and their rows compared cell by cell, all but `claims/s` (the machine's speed): any change to
the default checker's verdicts moves them, and the doc must be regenerated with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refcheck_callbacks.cli.main import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "bench.md"
RERUN = ("begin", "faithdial")


def _rows(markdown: str) -> dict[str, dict[str, str]]:
    """Each embedded-checker row of the results table, by dataset, cell by column name, without
    the claims/s cell."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in markdown.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[:2] == ["dataset", "checker"]:
            header = cells
        elif header and len(cells) == len(header) and cells[1] == "embedded":
            rows.setdefault(cells[0], dict(zip(header, cells, strict=True)))
            rows[cells[0]].pop("claims/s", None)
    return rows


@pytest.mark.labelled_data(*RERUN)
def test_the_documented_rows_are_what_the_command_prints(tmp_path: Path) -> None:
    documented = _rows(DOC.read_text(encoding="utf-8"))
    datasets = [option for name in RERUN for option in ("--dataset", name)]
    assert main(["bench", *datasets, "--output-dir", str(tmp_path), "--no-progress"]) == 0
    printed = _rows((tmp_path / "bench.md").read_text(encoding="utf-8"))

    assert sorted(printed) == sorted(RERUN)
    for dataset in RERUN:
        assert documented.get(dataset) == printed[dataset], (
            f"docs/bench.md's {dataset} row is not what `refcheck bench` prints: regenerate the "
            "table with `refcheck bench --dataset all` and paste its bench.md"
        )
