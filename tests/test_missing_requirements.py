"""A test whose requirement is missing skips, saying what is missing, except under `CI=true`,
where it fails: the real-cluster tests (ray) and the labelled-data tests cannot vanish from a
green CI run (`tests/helpers/required.py`).

Each case runs pytest in a child process. Ray is installed here (the serve tests need it), so
the child marks it unimportable the way Python itself does, `sys.modules["ray"] = None`; the
labelled data is missing for real (an empty data folder).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RAY_MODULES = ("tests/deploy/test_ray_deploy.py", "tests/serve/test_service.py",
               "tests/serve/test_serve_cli.py")  # fmt: skip
DATA_MODULE = "tests/bench/test_bench_doc.py"


def _pytest(paths: tuple[str, ...], ci: bool, env: dict[str, str] | None = None,
            block: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """pytest on `paths` in a child, with CI=true or without CI, `block` unimportable."""
    blocking = f"sys.modules[{block!r}] = None; " if block else ""
    arguments = ["-q", "-rs", "-p", "no:cacheprovider", *paths]
    code = f"import sys; {blocking}import pytest; sys.exit(pytest.main({arguments!r}))"
    child_env = {k: v for k, v in os.environ.items() if k != "CI"} | (env or {})
    if ci:
        child_env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=child_env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("ci", [False, True], ids=["local", "ci"])
def test_without_ray_the_cluster_tests_skip_locally_and_fail_in_ci(ci: bool) -> None:
    run = _pytest(RAY_MODULES, ci, block="ray")
    said = "ray cannot be imported (import of ray halted; None in sys.modules): the serve extra"
    if ci:
        assert run.returncode != 0, run.stdout[-2000:]
        assert run.stdout.count(f"CI=true and {said}") == len(RAY_MODULES), run.stdout[-3000:]
    else:  # every test skipped: pytest's "no tests ran" status
        assert run.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, run.stdout[-2000:]
        assert f"SKIPPED [{len(RAY_MODULES)}]" in run.stdout and said in run.stdout, run.stdout
        assert f"{len(RAY_MODULES)} skipped" in run.stdout, run.stdout[-2000:]


@pytest.mark.parametrize("ci", [False, True], ids=["local", "ci"])
def test_without_the_data_the_labelled_tests_skip_locally_and_fail_in_ci(
    ci: bool, tmp_path: Path
) -> None:
    run = _pytest((DATA_MODULE,), ci, env={"REFCHECK_DATA_DIR": str(tmp_path)})
    said = f"labelled data begin, faithdial not in {tmp_path}: run `refcheck data download"
    if ci:
        assert run.returncode != 0 and "1 error" in run.stdout, run.stdout[-2000:]
        assert f"CI=true and {said}" in run.stdout, run.stdout[-2000:]
    else:
        assert run.returncode == 0 and "1 skipped" in run.stdout, run.stdout[-2000:]
        assert said in run.stdout, run.stdout[-2000:]
