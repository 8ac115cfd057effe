"""`refcheck bench` end to end: the embedded checker on every shared set that loads, a JSON
result and an HTML report that renders in headless Chromium with its plots visible."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from refcheck_callbacks.bench.datasets import DATASET_NAMES
from refcheck_callbacks.bench.plots import (
    CHECKER_COLOURS,
    HEAT_HIGH,
    SUPPORTED_COLOUR,
    UNSUPPORTED_COLOUR,
)
from refcheck_callbacks.bench.report import render_html
from refcheck_callbacks.bench.results import BenchReport

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LIMIT = 30


pytestmark = [pytest.mark.slow, pytest.mark.labelled_data]


@pytest.fixture(scope="module")
def bench_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("bench")
    run = subprocess.run(
        [
            sys.executable, "-m", "refcheck_callbacks.cli", "bench", "--dataset", "all",
            "--path", str(shared_data), "--limit", str(LIMIT), "--output-dir", str(out),
            "--no-progress",
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    yield out


def test_bench_scores_every_loadable_dataset(bench_run: Path) -> None:
    report: dict[str, Any] = json.loads((bench_run / "bench.json").read_text(encoding="utf-8"))
    BenchReport.model_validate(report)
    assert [d["dataset"] for d in report["datasets"]] == list(DATASET_NAMES)
    assert "no reference texts" in report["unavailable"]["refchecker_annotations"]
    for dataset in report["datasets"]:
        [scores] = dataset["checkers"]
        assert scores["checker"] == "embedded"
        assert scores["examples"] >= LIMIT
        assert scores["failed"] == 0
        binary = scores["binary"]
        assert binary is not None and 0.0 <= binary["balanced_accuracy"] <= 1.0
        assert sum(map(sum, binary["confusion"])) == binary["examples"]
    table = (bench_run / "bench.md").read_text(encoding="utf-8").split("\n\n")[0].splitlines()
    assert [row.split(" | ")[0].lstrip("| ") for row in table[2:]] == list(DATASET_NAMES)
    rows = [json.loads(line) for line in (bench_run / "predictions.jsonl").open(encoding="utf-8")]
    assert len(rows) == sum(d["examples"] for d in report["datasets"])
    assert {row["dataset"] for row in rows} == set(DATASET_NAMES)
    assert all(row["label"] in ("entailment", "neutral", "contradiction") for row in rows)
    by_name = {d["dataset"]: d["checkers"][0] for d in report["datasets"]}
    assert by_name["climate_fever"]["three_way"]["macro_f1"] >= 0.0
    assert by_name["summedits"]["three_way"] is None, "summedits labels are binary"


def _screenshot(html: Path, png: Path, profile: Path) -> Image.Image:
    subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={png}",
            "--window-size=1400,2400", "--hide-scrollbars", html.as_uri(),
        ],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    return Image.open(png).convert("RGB")


def _rgb(colour: str) -> tuple[int, int, int]:
    value = int(colour.lstrip("#"), 16)
    return value >> 16, (value >> 8) & 0xFF, value & 0xFF


def _count(image: Image.Image, colour: tuple[int, int, int], tolerance: int = 6) -> int:
    return sum(
        count
        for count, pixel in image.getcolors(maxcolors=1 << 24) or []
        if all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))
    )


def test_the_html_report_renders_its_plots_offline(bench_run: Path, tmp_path: Path) -> None:
    html = bench_run / "bench.html"
    text = html.read_text(encoding="utf-8")
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org", "")
    assert text.count("<svg") >= 3 * len(DATASET_NAMES)
    image = _screenshot(html, tmp_path / "report.png", tmp_path / "profile")
    assert image.size == (1400, 2400)
    # ROC curve and legend in the first checker's colour, histogram bars in the class
    # colours, and the dark end of the confusion-matrix scale: each plot type is drawn.
    assert _count(image, _rgb(CHECKER_COLOURS[0])) > 200
    assert _count(image, _rgb(SUPPORTED_COLOUR)) > 200
    assert _count(image, _rgb(UNSUPPORTED_COLOUR)) > 200
    # Heat-scale cells for a row share of 0.8 or more; no other colour of the page is this dark
    # a blue (the first checker's blue has green 119).
    dark_cells = sum(
        count
        for count, (r, g, b) in image.getcolors(maxcolors=1 << 24) or []
        if r <= HEAT_HIGH[0] + 50 and g <= HEAT_HIGH[1] + 45 and b >= 100
    )
    assert dark_cells > 500


def test_two_checkers_get_two_roc_curves(bench_run: Path, tmp_path: Path) -> None:
    report = BenchReport.model_validate_json((bench_run / "bench.json").read_text("utf-8"))
    # The same scores under a second name stand in for a second checker in the layout.
    dataset = report.datasets[0]
    twin = dataset.checkers[0].model_copy(update={"checker": "second"})
    dataset.checkers.append(twin)
    html = tmp_path / "two.html"
    html.write_text(render_html(report.model_copy(update={"datasets": [dataset]})), "utf-8")
    image = _screenshot(html, tmp_path / "two.png", tmp_path / "profile")
    assert _count(image, _rgb(CHECKER_COLOURS[1])) > 100
