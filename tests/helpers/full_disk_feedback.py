"""`monitor.feedback` on a disk that fills up and then has room again, run as
`python full_disk_feedback.py MECHANISM FOLDER`; prints one JSON line of what it saw.

MECHANISM is how the disk fills:
- `file-size-limit`: RLIMIT_FSIZE a few bytes above the file's size (SIGXFSZ ignored, so the
  kernel writes what fits and then refuses with EFBIG, as a full disk refuses with ENOSPC);
  room again: the limit lifted;
- `full-tmpfs`: FOLDER is a small tmpfs of its own (`unshare --mount`), filled by another file
  until the kernel answers ENOSPC; room again: that file deleted.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from pathlib import Path

from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor

REFERENCE = "The tower stands in Paris. " * 300
"""Long enough that a record spans pages: a write to a full tmpfs stops part way."""


def fill(mechanism: str, folder: Path, file: Path) -> None:
    if mechanism == "file-size-limit":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file.stat().st_size + 100, hard))
        return
    with (folder / "filler").open("wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"x" * 4096)
        except OSError:
            pass


def make_room(mechanism: str, folder: Path) -> None:
    if mechanism == "file-size-limit":
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    else:
        (folder / "filler").unlink()


def main(mechanism: str, folder: Path) -> None:
    file = folder / "feedback.jsonl"
    with RefCheckMonitor(
        checker=KeywordChecker(), placement="thread", conflict=None, feedback_file=file
    ) as monitor:
        for response_id in ("first", "on-a-full-disk", "with-room-again"):
            monitor.check(
                answer="The tower stands in Paris.", references=[REFERENCE], response_id=response_id
            )
        recorded = [monitor.feedback("first", True)]
        before = file.read_bytes()
        fill(mechanism, folder, file)
        recorded.append(monitor.feedback("on-a-full-disk", True))
        on_full_disk = file.read_bytes()
        make_room(mechanism, folder)
        recorded.append(monitor.feedback("with-room-again", True))
        print(
            json.dumps(
                {
                    "recorded": recorded,
                    "unchanged_on_a_full_disk": on_full_disk == before,
                    "refused": monitor.stats.snapshot(),
                    "file": file.read_text(encoding="utf-8"),
                }
            )
        )


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
