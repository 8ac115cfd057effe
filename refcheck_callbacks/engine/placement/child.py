"""The checking process: builds the pipeline from its recipe and answers the app's calls.

Started by the app with multiprocessing's "spawn" (a fresh interpreter, none of the app's
threads or locks). Each call runs as its own task, so the app's `concurrency` holds here too.
The child never outlives the app: when the socket closes (the app exited or was killed) it
exits at once, whatever its components are doing. Ctrl-C in a terminal, and SIGTERM from a
service manager that signals the whole group (systemd's default), reach the child too; it
ignores both and lets the app decide when it stops, so that an app that finishes its work on
SIGTERM (`install_signal_handlers`) still has its child to finish it with. It runs at a lower
CPU priority than the app (`NICENESS`), so that it never takes a core the app needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import signal
import socket

from refcheck_callbacks.engine.pipeline import Pipeline
from refcheck_callbacks.engine.placement.components import Recipe
from refcheck_callbacks.engine.placement.messages import (
    TO_CHILD,
    Call,
    CallFailed,
    Ready,
    Reply,
    StartFailed,
    Stop,
    encode,
    read_frame,
)
from refcheck_callbacks.support.logs import logger

NAME = "refcheck-checking"
"""The checking process's name (multiprocessing's), set before it imports the app's main."""
STANDALONE_NAME = "refcheck-checking-standalone"
"""The name of a checking process started without the app's main module (`Recipe.app_main`
False): multiprocessing's spawn leaves main alone for this name alone (`spawned`)."""
UNGUARDED_MAIN_EXIT = 86
"""The exit code of a checking process that found itself building a monitor while importing
the app's main module: the app lacks the `if __name__ == "__main__":` guard."""
NICENESS = 10
"""How much lower the child's CPU priority is than the app's: where the two compete for cores,
the app's own work goes first and the checking waits (its queue bounded, its drops counted)."""


def exit_if_reimporting_main() -> None:
    """Called as any monitor is built. In a checking process still importing the app's main
    module (spawn runs it again, as `__mp_main__`), building a monitor means the app's code
    runs at import, outside `if __name__ == "__main__":`: the child would run the app (load
    models, serve requests) and start a child of its own. It exits at once instead, with
    `UNGUARDED_MAIN_EXIT`, which the app reads as that."""
    process = multiprocessing.current_process()
    if getattr(process, "_inheriting", False) and process.name == NAME:
        os._exit(UNGUARDED_MAIN_EXIT)


def main(connection: socket.socket, recipe: bytes) -> None:
    """The child's entry point (a multiprocessing target)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    try:
        asyncio.run(_serve(connection, recipe))
    except BaseException:
        logger.exception("refcheck: the checking process failed")
    # Not a normal interpreter exit: that would wait for stage threads still stuck in a
    # component, and the app has already been answered or has gone.
    os._exit(0)


async def _serve(connection: socket.socket, recipe: bytes) -> None:
    reader, writer = await asyncio.open_unix_connection(sock=connection)
    pipeline = _built(recipe)
    if isinstance(pipeline, StartFailed):
        writer.write(encode(pipeline))
        await writer.drain()
        return
    assert pipeline.checker is not None
    ready = Ready(
        extractor=pipeline.extractor.name,
        checker=pipeline.checker.name,
        placement=pipeline.placement,
    )
    writer.write(encode(ready))
    calls: set[asyncio.Task[None]] = set()
    while True:
        frame = await read_frame(reader)
        if frame is None:
            return  # the app is gone: nobody waits for what is in hand
        message = TO_CHILD.validate_json(frame)
        if isinstance(message, Stop):
            break
        task = asyncio.get_running_loop().create_task(_answer(pipeline, message, writer))
        calls.add(task)
        task.add_done_callback(calls.discard)
    await asyncio.gather(*calls)
    await writer.drain()


def _built(recipe: bytes) -> Pipeline | StartFailed:
    """The pipeline, or why not. A component's import or constructor may raise anything, even
    `SystemExit`; that is reported like any error, or the app would only see the process end
    (SIGINT is ignored here, so no KeyboardInterrupt is the user's)."""
    try:
        loaded: Recipe = pickle.loads(recipe)
    except BaseException as exc:
        return StartFailed(
            error_type=type(exc).__name__,
            message=f"{exc} (the extractor and checker factories must be importable by a "
            "fresh interpreter: define them in a module, not in a notebook or `python -c`)",
            unreadable_recipe=True,
        )
    try:
        return loaded.pipeline()
    except BaseException as exc:
        return StartFailed(error_type=type(exc).__name__, message=str(exc))


async def _answer(pipeline: Pipeline, call: Call, writer: asyncio.StreamWriter) -> None:
    reply: Reply | CallFailed
    try:
        reply = Reply.of(call, await pipeline.run(call.requests))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        logger.exception("refcheck: the pipeline failed on a batch")
        error = type(exc).__name__
        reply = CallFailed(id=call.id, error_type=error, message=f"internal error: {exc}")
    writer.write(encode(reply))
    await writer.drain()
