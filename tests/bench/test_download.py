"""`refcheck data download` over real HTTP on loopback, serving a copy of a labelled set laid
out as raw.githubusercontent.com lays it out: <repo>/<commit>/<path>."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from deadlines import SLACK
from loopback_servers import RawHTTPServer, closed_port, http_reply

from refcheck_callbacks.bench.download import download
from refcheck_callbacks.bench.sources import SOURCES
from refcheck_callbacks.cli.main import main
from refcheck_callbacks.errors import DataDownloadError, DatasetUnavailableError

SET = "faithdial"
"""Small (four files, 350 kB), with a license file and a file from a second commit."""


class _Handler(SimpleHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


class Mirror:
    """A loopback HTTP server over a folder; `requests` lists the paths asked for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        handler = type("Handler", (_Handler,), {"requests": self.requests})
        self._server = ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def mirror(shared_data: Path, tmp_path: Path) -> Iterator[Mirror]:
    """A copy of the set from the data folder, served at its upstream paths."""
    for file in SOURCES[SET].files:
        served = tmp_path / "mirror" / file.repo / file.commit / file.path
        served.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared_data / SET / file.name, served)
    server = Mirror(tmp_path / "mirror")
    yield server
    server.close()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.labelled_data(SET)
def test_a_set_is_fetched_checked_and_saved_with_its_license(
    mirror: Mirror, tmp_path: Path
) -> None:
    target = tmp_path / "data"
    report = download([SET], target, base_url=mirror.url)

    source = SOURCES[SET]
    assert sorted(report.saved) == sorted(target / SET / file.name for file in source.files)
    for file in source.files:
        assert _sha256(target / SET / file.name) == file.sha256
    assert (target / SET / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    provenance = (target / SET / "SOURCE.md").read_text(encoding="utf-8")
    assert "License: MIT." in provenance and "License text: LICENSE." in provenance
    assert f"McGill-NLP/FaithDial/blob/{source.files[0].commit}/data-audit/gold/wow.csv" in (
        provenance
    )
    assert not list((target / SET).glob(".*.part"))

    # Present with the pinned hashes: kept, not fetched again.
    fetched = len(mirror.requests)
    again = download([SET], target, base_url=mirror.url)
    assert again.saved == [] and len(again.kept) == len(source.files)
    assert len(mirror.requests) == fetched


@pytest.mark.labelled_data(SET)
def test_a_file_whose_sha256_differs_is_refused_and_nothing_is_saved(
    mirror: Mirror, tmp_path: Path
) -> None:
    altered = SOURCES[SET].files[1]
    served = mirror.root / altered.repo / altered.commit / altered.path
    served.write_bytes(served.read_bytes().replace(b"Hallucination", b"Entailment", 1))
    target = tmp_path / "data"

    with pytest.raises(DataDownloadError) as raised:
        download([SET], target, base_url=mirror.url)

    message = str(raised.value)
    assert altered.url(mirror.url) in message
    assert f"not the pinned {altered.sha256}" in message
    assert "nothing was saved" in message
    assert not (target / SET / altered.name).exists()
    assert not list((target / SET).glob(".*.part"))


@pytest.mark.labelled_data(SET)
def test_the_command_downloads_into_the_data_folder(
    mirror: Mirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("REFCHECK_DATA_DIR", str(tmp_path / "data"))
    assert main(["data", "download", "--dataset", SET, "--base-url", mirror.url]) == 0
    assert f"{len(SOURCES[SET].files)} files downloaded" in capsys.readouterr().err
    assert main(["data", "list"]) == 0
    listing = capsys.readouterr().out
    assert f"data folder: {tmp_path / 'data'}" in listing
    assert [line.split()[:2] for line in listing.splitlines() if SET in line] == [[SET, "present"]]
    assert "wice" in listing and "missing 2/2 files" in listing


def test_offline_the_error_names_the_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    status = main(
        ["data", "download", "--dataset", "wice", "--data-dir", str(tmp_path), "--base-url", base]
    )
    assert status == 1
    error = capsys.readouterr().err
    first = SOURCES["wice"].files[0]
    assert f"cannot download {first.url(base)}" in error
    assert "Connection refused" in error
    assert not list(tmp_path.rglob("*.jsonl"))


def test_an_unknown_set_is_refused_before_any_request(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match="unknown dataset squad"):
        download(["squad"], tmp_path, base_url="http://127.0.0.1:9")


TRICKLE = http_reply(b"x" * 100_000, content_type="text/plain")
"""A reply for any file; `_trickle` sends it at 2 bytes a second."""
HEAD = TRICKLE.index(b"\r\n\r\n") + 4


def _trickle(at_once: int = 0) -> RawHTTPServer:
    """2 bytes a second, the first `at_once` bytes at once: every read gets a byte well within
    any per-read timeout, and the whole file would take 14 hours."""
    return RawHTTPServer(lambda request: TRICKLE, chunk=1, pause=0.5, at_once=at_once)


def _leftovers(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.exists() else []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("at_once", [0, HEAD], ids=["head-trickles", "body-trickles"])
def test_the_timeout_bounds_each_files_whole_download(tmp_path: Path, at_once: int) -> None:
    server = _trickle(at_once)
    base = server.url
    try:
        started = time.monotonic()
        with pytest.raises(DataDownloadError) as raised:
            download(["wice"], tmp_path, base_url=server.url, timeout=1.0)
        elapsed = time.monotonic() - started
    finally:
        server.close()

    assert elapsed < 1.0 + SLACK, f"download(timeout=1) took {elapsed:.1f}s"
    first = SOURCES["wice"].files[0]
    message = str(raised.value)
    assert f"{first.url(base)} did not finish downloading within 1 s" in message
    assert "rerun with a larger --timeout" in message
    assert _leftovers(tmp_path / "wice") == [], "nothing, not even a .part file, is left"


@pytest.mark.timeout(60)
def test_a_terminated_download_leaves_no_part_file(tmp_path: Path) -> None:
    server = _trickle(HEAD)
    command = [sys.executable, "-m", "refcheck_callbacks.cli.main", "data", "download"]
    options = ["--dataset", "wice", "--data-dir", str(tmp_path), "--base-url", server.url]
    app = subprocess.Popen(
        [*command, *options, "--timeout", "600"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        deadline = time.monotonic() + 30
        while not list((tmp_path / "wice").glob(".*.part")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list((tmp_path / "wice").glob(".*.part"))) == 1, "the download never began"
        app.send_signal(signal.SIGTERM)
        _, error = app.communicate(timeout=SLACK)
    finally:
        app.kill()
        server.close()

    assert app.returncode == 130, error
    assert "interrupted; the file being fetched was not kept" in error
    assert "Traceback" not in error
    assert _leftovers(tmp_path / "wice") == []


def test_a_timeout_that_is_not_positive_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["data", "download", "--data-dir", str(tmp_path), "--timeout", "-1"])
    assert status == 2
    assert "--timeout must be more than 0 seconds" in capsys.readouterr().err
    assert _leftovers(tmp_path) == []
