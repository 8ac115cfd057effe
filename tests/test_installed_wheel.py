"""The built wheel works outside the repository: installed offline into a new virtualenv from
the wheels the lock resolved (`make setup` downloads them into .wheelhouse), `refcheck demo`
prints its verdict table from the packaged demo; installed without extras, the commands that
need the embedded checker say which extra to install, once, without a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = Path(os.environ.get("REFCHECK_WHEELHOUSE", REPO / ".wheelhouse"))
INSTALL_EMBEDDED = "pip install 'refcheck-callbacks[embedded]'"


def _run(
    command: list[str | Path], cwd: Path, env: dict[str, str], status: int = 0
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == status, (
        f"{command} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def offline_env() -> dict[str, str]:
    """Nothing from this machine's pip configuration (indexes, wheel folders): the wheelhouse
    and the wheel built here are the only sources, and no network is used."""
    assert any(WHEELHOUSE.glob("torch-*.whl")), (
        f"no locked wheels in {WHEELHOUSE}: `make setup` downloads them (REFCHECK_WHEELHOUSE "
        "points elsewhere)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHONPATH"))}
    return env | {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, offline_env: dict[str, str]) -> Path:
    """The project's wheel, built from a copy of what it is made of, so no build/ folder is
    left in the checkout (where stale modules would find their way into later wheels)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "source"
    shutil.copytree(REPO / "refcheck_callbacks", source / "refcheck_callbacks",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", dist, source],
        tmp_path, offline_env,
    )  # fmt: skip
    (built,) = dist.glob("refcheck_callbacks-*.whl")
    return built


def _install(requirement: str, folder: Path, env: dict[str, str]) -> Path:
    """A new virtualenv in `folder` with `requirement` installed offline; its bin folder."""
    venv = folder / "venv"
    _run([sys.executable, "-m", "venv", venv], folder, env)
    python = venv / "bin" / "python"
    _run(
        [python, "-m", "pip", "install", "-q", "--no-index", "--only-binary", ":all:",
         "--find-links", WHEELHOUSE, requirement],
        folder, env,
    )  # fmt: skip
    where = _run([python, "-c", "import refcheck_callbacks; print(refcheck_callbacks.__file__)"],
                 folder, env).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(venv)
    return venv / "bin"


@pytest.mark.slow
def test_the_wheel_installs_offline_and_runs_the_demo(
    tmp_path: Path, wheel: Path, offline_env: dict[str, str]
) -> None:
    bin_folder = _install(f"{wheel}[embedded]", tmp_path, offline_env)
    out = _run([bin_folder / "refcheck", "demo"], tmp_path, offline_env).stdout
    assert "checking the example answers directly" in out  # [embedded] has no langchain-core
    examples = json.loads((REPO / "refcheck_callbacks/demo/rag_examples.json").read_text())
    assert out.count("\nQ: ") == len(examples) and out.count("outcome=checked") >= 2, out
    assert "claim" in out and "verdict" in out and "evidence" in out
    assert "The Eiffel Tower is 450 metres tall." in out
    assert "contradiction" in out
    _check_with_the_shipped_reader(bin_folder, tmp_path, offline_env)


def _check_with_the_shipped_reader(bin_folder: Path, folder: Path, env: dict[str, str]) -> None:
    """`--checker reader` reads with the weights the wheel carries, in a network namespace of
    its own (no route anywhere: a download would fail)."""
    records = [
        {"response": "Canberra is the capital of Australia. It was founded in 1913.",
         "reference": "Canberra is the capital city of Australia. It was founded in 1913."},
    ]  # fmt: skip
    (folder / "reader_in.json").write_text(json.dumps(records), encoding="utf-8")
    command = [bin_folder / "refcheck", "extract-check", "--checker", "reader", "--no-progress",
               "--input", "reader_in.json", "--output", "reader_out.json"]  # fmt: skip
    _run(["unshare", "--user", "--map-root-user", "--net", *command], folder, env)
    [record] = json.loads((folder / "reader_out.json").read_text(encoding="utf-8"))
    assert len(record["ys"]) == 2 and None not in record["ys"], record
    assert "reader" in json.dumps(record["refcheck"]["checker"]), record["refcheck"]


@pytest.mark.slow
def test_without_the_embedded_extra_the_commands_say_what_to_install(
    tmp_path: Path, wheel: Path, offline_env: dict[str, str]
) -> None:
    """A plain install (pydantic, the OpenTelemetry API, platformdirs: about 50 MB)."""
    refcheck = _install(str(wheel), tmp_path, offline_env) / "refcheck"
    records = [
        {"response": f"The tower is {height} metres tall.", "reference": "It is 330 metres."}
        for height in (330, 450, 300)
    ]
    (tmp_path / "in.json").write_text(json.dumps(records), encoding="utf-8")
    file_command = [refcheck, "extract-check", "--input", "in.json", "--output", "out.json"]
    for command in (file_command, [refcheck, "demo"], [refcheck, "bench", "--dataset", "all"]):
        done = _run(command, tmp_path, offline_env, status=2)
        output = done.stdout + done.stderr
        assert output.count(INSTALL_EMBEDDED) == 1, output
        assert "refcheck: error: the " in done.stderr and "embedded checker needs" in done.stderr
        assert "Traceback" not in output and "ModuleNotFoundError" not in output, output
    assert not (tmp_path / "out.json").exists()
