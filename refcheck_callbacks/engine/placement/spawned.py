"""One checking process, seen from the app: spawned, read from, stopped, and told apart from
a crash.

The process is spawned (a fresh interpreter) with one end of a socket pair; the app keeps the
other. Its end is known by both the socket closing and the process's sentinel, so a reply
written just before a crash is still read, and a child whose socket is held open by a process
of its own is still seen to die.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing.process
import multiprocessing.resource_tracker
import multiprocessing.spawn
import os
import pickle
import signal
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from refcheck_callbacks.engine.placement import child
from refcheck_callbacks.engine.placement.components import Recipe
from refcheck_callbacks.engine.placement.messages import (
    TO_APP,
    Call,
    Ready,
    Reply,
    ToApp,
    encode,
    read_frame,
)
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest

_AFTER_END = 1.0
"""Seconds to wait for the other sign of the end (socket closed, process exited) after one."""


# An app may fork while a supervisor thread spawns a child (gunicorn's `--preload`: the master
# builds the monitor, then forks its workers). What that thread holds then stays held in the
# fork, where no thread will release it, and the fork's own first spawn would wait for ever:
# - the import locks of modules a spawn imports lazily: imported here, before any supervisor;
# - the resource tracker's lock, taken while it starts: a fresh one after a fork.
for _module in (
    "multiprocessing.popen_spawn_posix",
    "multiprocessing.spawn",
    "multiprocessing.connection",
    "subprocess",
    "_posixsubprocess",
):
    with contextlib.suppress(ImportError):
        importlib.import_module(_module)


def _fresh_tracker_lock() -> None:
    """After `os.fork`, in the new process (see above): no thread of the fork holds the
    tracker's lock, so a fresh one is always safe."""
    tracker: Any = multiprocessing.resource_tracker._resource_tracker
    tracker._lock = threading.RLock()


os.register_at_fork(after_in_child=_fresh_tracker_lock)

_preparation_data = multiprocessing.spawn.get_preparation_data


def _preparation_for(name: str) -> dict[str, Any]:
    """spawn's preparation data; for a checking process started without the app's main
    module (`child.STANDALONE_NAME`, `Recipe.app_main`), without it: spawn would otherwise run
    the app's script again in the child. Every other process is prepared as spawn does."""
    data: dict[str, Any] = _preparation_data(name)
    if name == child.STANDALONE_NAME:
        data.pop("init_main_from_name", None)
        data.pop("init_main_from_path", None)
    return data


multiprocessing.spawn.get_preparation_data = _preparation_for


@dataclass(frozen=True)
class Failure:
    """Why a call got no reply: its requests all fail with this."""

    error_type: str
    message: str


@dataclass(eq=False)
class PendingCall:
    """A batch sent, or waiting to be sent, to the checking process."""

    id: int
    requests: tuple[CheckRequest, ...]
    future: Future[Reply | Failure]
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def resolve(self, answer: Reply | Failure) -> None:
        """Give the caller its answer; nothing when the caller has given up (cancelled)."""
        if self.timer is not None:
            self.timer.cancel()
        # The caller may cancel meanwhile (InvalidStateError): then nobody waits for it.
        with contextlib.suppress(InvalidStateError):
            if not self.future.done():
                self.future.set_result(answer)


class SpawnedChild:
    """A checking process and the app's end of its socket."""

    def __init__(self, context: Any, recipe: Recipe) -> None:
        app_end, child_end = socket.socketpair()
        self.process = context.Process(
            # Pickled here and loaded by the child itself, which can then say what went wrong
            # (a factory it cannot import) instead of dying before it can speak.
            target=child.main,
            args=(child_end, pickle.dumps(recipe)),
            name=child.NAME if recipe.app_main else child.STANDALONE_NAME,
            daemon=True,
        )
        try:
            self.process.start()
        except BaseException:
            app_end.close()
            raise
        finally:
            child_end.close()
        self.socket = app_end
        self.pid: int = self.process.pid
        self.ready: Ready | None = None
        self.calls: dict[int, PendingCall] = {}
        """Calls sent and not answered: they fail if the process ends."""
        self.stopped_because: str | None = None
        self._writer: asyncio.StreamWriter | None = None

    def send(self, data: bytes) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(data)

    def send_call(self, call: PendingCall) -> None:
        self.calls[call.id] = call
        self.send(encode(Call(id=call.id, requests=call.requests)))

    def kill(self, because: str) -> None:
        """End the process now (it hangs, or the app shuts down); `because` says why."""
        if self.stopped_because is None:
            self.stopped_because = because
        self.process.kill()

    async def serve(self, on_message: Callable[[SpawnedChild, ToApp], None]) -> None:
        """Hand every message to `on_message` until the process has ended (see `ended`)."""
        loop = asyncio.get_running_loop()
        reader, self._writer = await asyncio.open_unix_connection(sock=self.socket)
        exited: asyncio.Future[None] = loop.create_future()
        sentinel = self.process.sentinel
        loop.add_reader(sentinel, _settle, exited)
        reading = loop.create_task(self._read(reader, on_message))
        try:
            await asyncio.wait({reading, exited}, return_when=asyncio.FIRST_COMPLETED)
            # One sign of the end came: give the other a moment, so that what the child wrote
            # last is read and its exit code is known.
            await asyncio.wait({reading, exited}, timeout=_AFTER_END)
            if not reading.done() or reading.exception() is not None:
                if reading.done():
                    logger.error(
                        "refcheck: bad message from the checking process: %r", reading.exception()
                    )
                self.kill(self.stopped_because or "broke the protocol and was stopped")
                reading.cancel()
            if not exited.done():
                self.kill(self.stopped_because or "closed its socket and was stopped")
                await asyncio.wait({exited}, timeout=_AFTER_END)
        finally:
            loop.remove_reader(sentinel)
            self._writer.close()
        # The sentinel closes while the process exits, a moment before it can be reaped: a
        # blocking wait then is brief, where join(0) could miss the exit code (and the signal).
        self.process.join(_AFTER_END if exited.done() else 0)

    async def _read(
        self, reader: asyncio.StreamReader, on_message: Callable[[SpawnedChild, ToApp], None]
    ) -> None:
        while (frame := await read_frame(reader)) is not None:
            on_message(self, TO_APP.validate_json(frame))

    @property
    def ended(self) -> str:
        """How the process ended, for messages: its pid and its exit code, signal, or why we
        stopped it."""
        return f"(pid {self.pid}) {self._ending()}"

    def _ending(self) -> str:
        code = self.process.exitcode
        if self.stopped_because is not None:
            return self.stopped_because
        if code is None:
            return "is gone"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return "exited" if code == 0 else f"exited with code {code}"

    def abandon(self) -> None:
        """After `os.fork`, in the new process: let go of a child that is not ours. Our copy
        of its socket is closed (so it still sees the app that owns it go), and the process
        object leaves multiprocessing's list of children, whose exit hook would otherwise
        terminate it when this process exits."""
        self.socket.close()
        multiprocessing.process._children.discard(self.process)  # type: ignore[attr-defined]


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
