"""The default placement: a checking process wherever one can start, else the thread with one
warning that says why.

Issue 26 measured the thread placement, then the default, taxing the app's own calls while it
checked; the default is now a child process. It must start where apps run: a script, `python
-c`, a notebook's kernel, uvicorn's and gunicorn's workers (gunicorn's forked from a master
that built the monitor, with `--preload`), a server forking a process per request; and fall
back to the thread, with one `PlacementWarning`, where no child can start: components built
in the app, a factory only the app's process knows, a main module without its guard, a
daemonic process.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from free_ports import OutputWatch
from scripted_checkers import KeywordChecker

from refcheck_callbacks import Outcome, Placement, PlacementWarning, RefCheckMonitor

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(HELPERS), os.environ.get("PYTHONPATH", "")]),
}
ANSWER = {"answer": "The tower is in Paris.", "references": ["The tower stands in Paris."]}
SPEC = "py:scripted_checkers:KeywordChecker"
START = 120.0
"""Seconds a server may take to answer its first request (its workers' children start)."""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV
    )


def test_the_default_checks_in_a_child_process() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlacementWarning)
        with RefCheckMonitor(checker=KeywordChecker, exporters=[]) as monitor:
            result = monitor.check(**ANSWER)
            assert monitor.runner.placement is Placement.PROCESS
            assert monitor.runner.pid is not None  # type: ignore[attr-defined]
    assert (result.outcome, result.placement) == (Outcome.CHECKED, Placement.PROCESS)


def test_built_components_check_in_the_thread_with_one_warning_saying_why() -> None:
    with pytest.warns(PlacementWarning) as warned:
        monitor = RefCheckMonitor(checker=KeywordChecker(), exporters=[])
    with monitor:
        result = monitor.check(**ANSWER)
    assert len(warned) == 1
    message = str(warned[0].message)
    assert "not a built KeywordChecker" in message and "placement='thread'" in message
    assert warned[0].filename == __file__  # it points at the app's RefCheckMonitor(...)
    assert (result.outcome, result.placement) == (Outcome.CHECKED, Placement.THREAD)


def test_choosing_the_thread_says_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlacementWarning)
        with RefCheckMonitor(checker=KeywordChecker(), exporters=[], placement="thread") as m:
            assert m.check(**ANSWER).placement is Placement.THREAD


def _in_a_pool_worker(_: int) -> str:
    with RefCheckMonitor(checker=KeywordChecker, exporters=[]) as monitor:
        result = monitor.check(**ANSWER)
    return f"{result.placement.value if result.placement else None} {result.outcome.value}"


def test_a_daemonic_process_checks_in_its_thread() -> None:
    """A multiprocessing pool's worker cannot have children."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(_in_a_pool_worker, [0]) == ["thread checked"]


def test_python_c_starts_a_child_and_a_factory_only_it_knows_falls_back() -> None:
    """`python -c` (as a notebook) has no main file: the child starts; a class defined there
    cannot be imported by the child, which then cannot start: the thread checks, one warning."""
    code = (
        "import warnings\n"
        "from scripted_checkers import KeywordChecker\n"
        "from refcheck_callbacks import RefCheckMonitor\n"
        f"with RefCheckMonitor(checker={SPEC!r}, exporters=[]) as m:\n"
        f"    r = m.check(**{ANSWER!r})\n"
        "    print('spec', r.placement.value, r.outcome.value)\n"
        "class LocalChecker(KeywordChecker):\n    pass\n"
        "with RefCheckMonitor(checker=LocalChecker, exporters=[]) as m:\n"
        f"    r = m.check(**{ANSWER!r})\n"
        f"    r = m.check(**{ANSWER!r})\n"
        "    print('local', r.placement.value, r.outcome.value, m.runner.placement.value)\n"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["spec process checked", "local thread checked thread"]
    assert out.stderr.count("PlacementWarning") == 1, out.stderr
    assert "LocalChecker" in out.stderr and "ERROR" not in out.stderr


def test_a_script_without_the_main_guard_falls_back_to_the_thread(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "from refcheck_callbacks import RefCheckMonitor\n"
        f"monitor = RefCheckMonitor(checker={SPEC!r}, exporters=[])\n"
        f"result = monitor.check(**{ANSWER!r})\n"
        "print(result.placement.value, result.outcome.value)\n"
        "monitor.shutdown()\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=ENV
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["thread checked"]
    assert out.stderr.count("PlacementWarning") == 1
    assert 'if __name__ == "__main__":' in out.stderr and "Traceback" not in out.stderr


STDIN_SCRIPT = f"""
import time
from refcheck_callbacks import PlacementError, RefCheckMonitor

started = time.monotonic()
with RefCheckMonitor(checker={SPEC!r}, exporters=[]) as monitor:
    result = monitor.check(**{ANSWER!r})
    print(result.placement.value, result.outcome.value, monitor.runner.placement.value)
print(f"seconds {{time.monotonic() - started:.2f}}")
try:
    RefCheckMonitor(checker={SPEC!r}, exporters=[], placement="process")
except PlacementError as exc:
    print("PlacementError", exc)
"""


@pytest.mark.parametrize("run", [["-"], []], ids=["python -", "python < script"])
def test_a_script_read_from_stdin_checks_in_the_thread_with_one_warning(run: list[str]) -> None:
    """A heredoc, or an editor's "run selection": its main module, `<stdin>`, is no file a
    child could run again (spawn would try, and fail at every start)."""
    out = subprocess.run(
        [sys.executable, *run], input=STDIN_SCRIPT, capture_output=True, text=True, timeout=120,
        env=ENV,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    checked, _seconds, refused = out.stdout.splitlines()
    assert checked == "thread checked thread"
    assert out.stderr.count("PlacementWarning") == 1, out.stderr
    assert "(<stdin>) is not a file a child process could run again" in out.stderr
    assert "Traceback" not in out.stderr
    assert refused.startswith("PlacementError placement='process' cannot start its child here")


def test_a_notebook_kernel_starts_a_child() -> None:
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", env=ENV)
    outputs: list[str] = []

    def collect(message: dict) -> None:  # type: ignore[type-arg]
        if message["msg_type"] == "stream":
            outputs.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            outputs.append("\n".join(message["content"]["traceback"]))

    try:
        cells = [
            "from refcheck_callbacks import RefCheckMonitor",
            f"monitor = RefCheckMonitor(checker={SPEC!r}, exporters=[])",
            f"result = monitor.check(**{ANSWER!r})",
            "print(result.placement.value, result.outcome.value, monitor.runner.pid is not None)",
            "monitor.shutdown()",
        ]
        for cell in cells:
            client.execute_interactive(cell, timeout=120, output_hook=collect)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "".join(outputs).strip() == "process checked True"


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A web server running tests/helpers/server_apps.py (its command, from the test's
    parameter, with {port}: 0, the server binds a free one and says which); yields its URL."""
    command = [sys.executable, "-m", *request.param.format(port=0).split()]
    process = subprocess.Popen(
        command, cwd=HELPERS, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    output = OutputWatch(process.stdout)
    try:
        yield f"http://127.0.0.1:{output.port(LISTENING)}/"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        text = output.text()
        assert "Traceback" not in text, text[-3000:]
        assert "PlacementWarning" not in text, text[-3000:]


LISTENING = r"(?:running on http://|Listening at: http://|Listening on )127\.0\.0\.1:(?P<port>\d+)"
"""How uvicorn, gunicorn and tests/helpers/forking_server.py say the port they bound."""


def _answers(url: str, count: int) -> list[list[str]]:
    """`count` answers from the server, once it answers (its workers start meanwhile)."""
    deadline = time.monotonic() + START
    answers: list[list[str]] = []
    while len(answers) < count:
        try:
            with urllib.request.urlopen(url, timeout=60) as reply:
                answers.append(reply.read().decode().split())
        except OSError:
            assert time.monotonic() < deadline, "the server never answered"
            time.sleep(0.2)
    return answers


SERVERS = [
    pytest.param("uvicorn server_apps:asgi --port {port} --workers 2", id="uvicorn-workers"),
    pytest.param("gunicorn server_apps:wsgi -b 127.0.0.1:{port} -w 2", id="gunicorn"),
    pytest.param("gunicorn server_apps:wsgi -b 127.0.0.1:{port} -w 2 --preload", id="preforked"),
    pytest.param("forking_server {port}", id="forking"),
]


@pytest.mark.parametrize("server", SERVERS, indirect=True)
def test_server_workers_check_in_children_of_their_own(server: str) -> None:
    """Each worker (spawned by uvicorn; forked by gunicorn, with `--preload` from a master
    that built the monitor and its child first; forked for each request by a forking server)
    checks in a child process of its own."""
    answers = _answers(server, 6)
    assert {(placement, outcome) for placement, outcome, _, _ in answers} == {
        ("process", "checked")
    }
    for _, _, app, checking in answers:
        assert checking != "None" and checking != app
    by_worker: dict[str, set[str]] = {}
    for _, _, app, checking in answers:
        by_worker.setdefault(app, set()).add(checking)
    assert all(len(children) == 1 for children in by_worker.values())
    assert len(set().union(*by_worker.values())) == len(by_worker)
