"""A checking process started without the app's main module (`without_app_main`, what the
zero-code monitor uses): an unguarded script keeps the process placement and runs once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.pipeline import StageTimeouts
from refcheck_callbacks.engine.placement.components import Recipe, Settings, without_app_main

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
SPEC = "py:scripted_checkers:KeywordChecker"
SETTINGS = Settings(Aggregator.STRICT, StageTimeouts(), None)


def test_only_a_recipe_of_specs_goes_without_main() -> None:
    from scripted_checkers import KeywordChecker

    assert Recipe.of("sentence", SPEC, SETTINGS).app_main
    with without_app_main():
        assert not Recipe.of("sentence", SPEC, SETTINGS).app_main
        # A factory may live in main: its child imports main as spawn always does.
        assert Recipe.of("sentence", KeywordChecker, SETTINGS).app_main


def test_an_unguarded_script_checks_in_a_child_that_does_not_run_it_again(
    tmp_path: Path,
) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "from refcheck_callbacks import RefCheckMonitor\n"
        "from refcheck_callbacks.engine.placement.components import without_app_main\n"
        "print('app ran', flush=True)\n"
        "with without_app_main():\n"
        f"    monitor = RefCheckMonitor(checker={SPEC!r}, exporters=[])\n"
        "result = monitor.check(answer='The tower is in Paris.', references=['Paris.'])\n"
        "print(result.placement.value, result.outcome.value, flush=True)\n"
        "monitor.shutdown()\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(HELPERS)}
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["app ran", "process checked"], out.stderr
    assert "PlacementWarning" not in out.stderr
