"""`refcheck data download`: fetch labelled sets from their pinned sources, sha256-checked.

Every file is streamed into a temporary file beside its destination while it is hashed, and
moved into place only when its sha256 is the pinned one, so a failed or tampered download
never leaves a file the loaders would read. Files already present with the right hash are kept
without a request. Each set's folder also gets `SOURCE.md`: where every file came from, the
license, and, where no license text could be pinned, why (see `sources`).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from refcheck_callbacks.bench.data_dir import DATA_DIR_ENV, data_dir
from refcheck_callbacks.bench.sources import GITHUB_RAW, SOURCES, DatasetSource, SourceFile
from refcheck_callbacks.errors import DataDownloadError, DatasetUnavailableError
from refcheck_callbacks.support.http_deadline import DeadlineFetch

CHUNK = 1 << 20
MAX_FILE_BYTES = 64 << 20
"""No pinned file is larger than 4 MB; a response beyond this is not the pinned file."""
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError)


@dataclass
class DownloadReport:
    """What `download` did, file by file."""

    root: Path
    saved: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    """Already present with the pinned sha256: not fetched again."""


def download(
    names: Sequence[str] | None = None,
    root: Path | None = None,
    base_url: str = GITHUB_RAW,
    timeout: float = 60.0,
) -> DownloadReport:
    """Fetch the sets `names` (default: all) into `root` (default: `data_dir()`).

    `base_url` replaces `https://raw.githubusercontent.com` (a mirror with the same
    `<repo>/<commit>/<path>` layout). Each file gets `timeout` seconds in all, from connecting
    to its last byte: a server that trickles bytes cannot hold the download. Raises
    `DataDownloadError` on the first file that cannot be fetched in time or does not match its
    pinned sha256; files saved before it stay, and the failed one leaves nothing behind.
    """
    chosen = list(names) if names else list(SOURCES)
    unknown = [name for name in chosen if name not in SOURCES]
    if unknown:
        raise DatasetUnavailableError(
            f"unknown dataset {', '.join(unknown)}; choose from {', '.join(SOURCES)}"
        )
    report = DownloadReport(root if root is not None else data_dir())
    for name in chosen:
        source = SOURCES[name]
        folder = report.root / name
        for file in source.files:
            destination = folder / file.name
            if destination.is_file() and _sha256(destination) == file.sha256:
                report.kept.append(destination)
                continue
            _fetch(file, file.url(base_url), destination, timeout)
            report.saved.append(destination)
        (folder / "SOURCE.md").write_text(provenance(source), encoding="utf-8")
    return report


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch(file: SourceFile, url: str, destination: Path, timeout: float) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        dir=destination.parent, prefix=f".{destination.name}.", suffix=".part"
    )
    try:
        with os.fdopen(handle, "wb") as out:
            digest = _stream(url, out, destination, timeout)
        if digest != file.sha256:
            raise DataDownloadError(
                f"{url} has sha256 {digest}, not the pinned {file.sha256}; nothing was saved "
                f"as {destination}. The source changed or the download was altered: report it, "
                "or copy a verified file there by hand."
            )
        os.replace(temporary, destination)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _stream(url: str, out: BinaryIO, destination: Path, timeout: float) -> str:
    """Copy the response body into `out` (a binary file) within `timeout` seconds in all,
    returning its sha256."""
    digest = hashlib.sha256()
    size = 0
    with DeadlineFetch(timeout) as fetch:
        try:
            with fetch.open(url) as response:
                for chunk in iter(lambda: response.read1(CHUNK), b""):
                    size += len(chunk)
                    if size > MAX_FILE_BYTES:
                        raise DataDownloadError(f"{url} is larger than {MAX_FILE_BYTES} bytes")
                    digest.update(chunk)
                    out.write(chunk)
        except (*_NETWORK_ERRORS, OSError) as exc:
            # Once the deadline has shut the connection, whatever the read raised is its echo.
            if not fetch.expired:
                if not isinstance(exc, _NETWORK_ERRORS):
                    raise
                reason = getattr(exc, "reason", None) or exc
                raise DataDownloadError(
                    f"cannot download {url}: {reason}. Without network access, copy that file "
                    f"to {destination} by hand, or point {DATA_DIR_ENV} at a folder that has "
                    "the sets."
                ) from exc
    if fetch.expired:
        raise DataDownloadError(
            f"{url} did not finish downloading within {timeout:g} s ({size} bytes came); "
            f"nothing was saved as {destination}. On a slow link, rerun with a larger "
            "--timeout (seconds per file)."
        )
    return digest.hexdigest()


def provenance(source: DatasetSource) -> str:
    """SOURCE.md for a set: each file's origin and hash, and its license."""
    lines = [f"# {source.name}", "", "Fetched by `refcheck data download`, unchanged:", ""]
    for file in source.files:
        origin = f"https://github.com/{file.repo}/blob/{file.commit}/{file.path}"
        lines.append(f"- `{file.name}`: {origin} (sha256 `{file.sha256}`)")
    licenses = [file.name for file in source.files if file.is_license]
    lines += ["", f"License: {source.license}."]
    if licenses:
        lines.append(f"License text: {', '.join(licenses)}.")
    if source.license_note:
        lines.append(source.license_note)
    return "\n".join(lines) + "\n"
