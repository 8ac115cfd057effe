"""Keeping one checking process running for the app, and every batch sent to it answered.

A daemon thread of ours runs an asyncio loop that owns the child: it spawns it, sends it the
batches the monitor's worker hands over (`submit`, from any thread), reads its replies, and
starts another when it ends. Every batch gets an answer, whatever happens:

- the child crashes or is killed: the batches it held fail (`CheckingProcessError`, saying
  how it ended); batches not yet sent wait for the next child, which starts at once, or after
  a growing pause (up to `MAX_PAUSE`) while children keep dying young;
- the child ends before it is ready: the batches waiting for it fail at once with how it
  ended, and after `MAX_UNREADY` such children in a row no other is started (a start that
  fails that way every time would fail for ever);
- the child hangs: a batch not answered within `answer_timeout` of being sent (twice each
  stage's deadline, which is the most the pipeline takes on a batch, plus `ANSWER_MARGIN`)
  means it no longer works; it is killed and replaced;
- no child becomes ready (it keeps dying young, or its components take for ever to load): a
  batch that waited `start_timeout` to be sent fails;
- the child cannot build its components (`StartFailed`), or it exits because the app's main
  module lacks its `if __name__ == "__main__":` guard (`child.UNGUARDED_MAIN_EXIT`): that
  will not change by retrying, so every batch fails at once with its error, and no other
  child is started.

With `falls_back` (a monitor left at the default placement), a child that cannot start here
at all (no guard, a factory it cannot import, a process that cannot spawn) sets `unstartable`
before its batches fail, and the runner checks them in its thread instead; nothing is logged
as an error then.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future

from refcheck_callbacks.engine.placement.child import UNGUARDED_MAIN_EXIT
from refcheck_callbacks.engine.placement.components import Recipe
from refcheck_callbacks.engine.placement.messages import (
    CallFailed,
    Ready,
    Reply,
    StartFailed,
    Stop,
    ToApp,
    encode,
)
from refcheck_callbacks.engine.placement.spawned import Failure, PendingCall, SpawnedChild
from refcheck_callbacks.errors import (
    CheckingProcessError,
    MonitorUnavailableError,
    PlacementError,
)
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckRequest

ANSWER_MARGIN = 5.0
"""Seconds, beyond the pipeline's own deadlines, for a reply to come back."""
START_TIMEOUT = 120.0
"""Seconds a batch may wait for a checking process to be ready (spawned, components built)."""
YOUNG = 10.0
"""A child that ends sooner than this after starting died young: the next start waits."""
FIRST_PAUSE = 0.5
MAX_PAUSE = 30.0
MAX_UNREADY = 3
"""Children in a row that end before they are ready (a component that kills its process at
import, a model load the OOM killer stops): then no other is started."""


def _lost(why: str) -> Failure:
    return Failure(CheckingProcessError.__name__, why)


class Supervisor:
    """The checking process's keeper; see the module doc. `close` ends it for good."""

    def __init__(
        self, recipe: Recipe, start_timeout: float = START_TIMEOUT, falls_back: bool = False
    ) -> None:
        timeouts = recipe.settings.timeouts
        self.answer_timeout = 2 * (timeouts.extract + timeouts.check) + ANSWER_MARGIN
        self.start_timeout = start_timeout
        self.restarts = 0
        """Children started after the first: each one replaced a child that ended."""
        self.falls_back = falls_back
        self.unstartable: str | None = None
        """Why no checking process can start here, once known (with `falls_back` only)."""
        self.ready: Ready | None = None
        """What the latest child said when it became ready (its components' names)."""
        self.child: SpawnedChild | None = None
        self._recipe = recipe
        self._context = multiprocessing.get_context("spawn")
        self._ids = itertools.count()
        self._waiting: deque[PendingCall] = deque()
        self._broken: Failure | None = None
        self._closing = False
        self._ended = False
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._closed = asyncio.Event()
        self._thread = threading.Thread(target=self._main, name="refcheck-process", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- from any thread -------------------------------------------------------------------

    def submit(self, requests: Sequence[CheckRequest]) -> Future[Reply | Failure]:
        """The answer to one batch, soon: a reply, or why there is none. Never raises."""
        future: Future[Reply | Failure] = Future()
        call = PendingCall(next(self._ids), tuple(requests), future)
        with self._lock:
            if not self._ended:
                self._loop.call_soon_threadsafe(self._accept, call)
                return future
        call.resolve(_unavailable())
        return future

    def close(self, timeout: float | None) -> None:
        """Stop the child (it finishes the batches it holds first) and the loop, within
        `timeout`; past it the child is killed."""
        try:
            self._loop.call_soon_threadsafe(self._begin_closing)
        except RuntimeError:
            return
        self._thread.join(timeout)
        child = self.child
        if self._thread.is_alive() and child is not None:
            child.kill("was stopped at shutdown")

    def abandon(self) -> None:
        """After `os.fork`, in the new process: this supervisor's thread does not exist
        there, and its child belongs to the parent."""
        child = self.child
        if child is not None:
            child.abandon()

    # -- on the loop -----------------------------------------------------------------------

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._supervise())
        except BaseException:
            logger.exception("refcheck: the checking process's supervisor failed")
        finally:
            self._end()

    def _end(self) -> None:
        """Answer every batch still here, also those handed over meanwhile, and close."""
        self._closing = True
        with self._lock:
            self._ended = True
        self._loop.run_until_complete(asyncio.sleep(0))  # `_accept`s already scheduled
        child = self.child
        if child is not None:  # only when `_supervise` itself failed (a bug of ours)
            child.kill("was stopped: its supervisor failed")
            self._resolve_all(child.calls.values(), _lost(f"the checking process {child.ended}"))
        self._resolve_all(self._waiting, _unavailable())
        self._loop.close()

    async def _supervise(self) -> None:
        await self._keep_a_child()
        # Broken: the loop stays, to fail each batch at once with why, until `close`.
        await self._closed.wait()

    async def _keep_a_child(self) -> None:
        young = unready = 0
        while not self._closing and self._broken is None:
            started = time.monotonic()
            ended, held, was_ready = await self._run_one()
            if self._closing or self._broken is not None:
                break
            unready = 0 if was_ready else unready + 1
            if not was_ready:
                # Nothing will be sent before a child is ready: what waits fails now, with
                # how this one ended, instead of waiting `start_timeout` for the next.
                held += len(self._waiting)
                if unready >= MAX_UNREADY:
                    self._break(_lost(f"{ended} ({unready} in a row)"))
                    break
                self._resolve_all(self._waiting, _lost(ended))
            self.restarts += 1
            logger.warning(
                "refcheck: %s; %d batch(es) it held failed; starting another", ended, held
            )
            young = young + 1 if time.monotonic() - started < YOUNG else 0
            if young:
                pause = min(MAX_PAUSE, FIRST_PAUSE * 2 ** (young - 1))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._closed.wait(), pause)

    async def _run_one(self) -> tuple[str, int, bool]:
        """One child from spawn to its end: how it ended, how many batches failed, and
        whether it was ever ready."""
        try:
            child = SpawnedChild(self._context, self._recipe)
        except Exception as exc:
            why = f"the checking process could not be started ({exc!r})"
            if self.falls_back:
                self._break(Failure(PlacementError.__name__, why), unstartable=True)
            else:
                logger.exception("refcheck: the checking process could not be started")
            return why, 0, False
        self.child = child
        try:
            await child.serve(self._on_message)
        except Exception:
            logger.exception("refcheck: serving the checking process failed")
            child.kill("was stopped: the app could not talk to it")
        self.child = None
        if child.ready is None and child.process.exitcode == UNGUARDED_MAIN_EXIT:
            self._break(Failure(PlacementError.__name__, _unguarded_main()), unstartable=True)
        held = list(child.calls.values())
        ended = f"the checking process {child.ended}"
        self._resolve_all(held, _lost(f"{ended} while it held this request"))
        if child.ready is None:
            return f"{ended} before it was ready", len(held), False
        return ended, len(held), True

    def _on_message(self, child: SpawnedChild, message: ToApp) -> None:
        if isinstance(message, Ready):
            child.ready = self.ready = message
            while self._waiting:
                self._send(child, self._waiting.popleft())
        elif isinstance(message, StartFailed):
            why = f"the checking process could not build its components: {message.message}"
            self._break(Failure(message.error_type, why), message.unreadable_recipe)
        else:
            call = child.calls.pop(message.id, None)
            if call is not None:
                call.resolve(message if isinstance(message, Reply) else _failed_call(message))

    def _break(self, failure: Failure, unstartable: bool = False) -> None:
        """No child will ever work (see the module doc): fail every batch with `failure`;
        with `falls_back`, where no child can start at all, the runner takes them instead."""
        self._broken = failure
        if unstartable and self.falls_back:
            self.unstartable = failure.message
        else:
            logger.error("refcheck: %s; every request will fail with it", failure.message)
        self._resolve_all(self._waiting, failure)

    def _accept(self, call: PendingCall) -> None:
        if call.future.done():  # the caller gave up before we got it
            return
        if self._broken is not None or self._closing:
            call.resolve(self._broken or _unavailable())
            return
        child = self.child
        if child is not None and child.ready is not None:
            self._send(child, call)
        else:
            call.timer = self._loop.call_later(self.start_timeout, self._never_sent, call)
            self._waiting.append(call)

    def _send(self, child: SpawnedChild, call: PendingCall) -> None:
        if call.future.done():
            return
        if call.timer is not None:
            call.timer.cancel()
        call.timer = self._loop.call_later(self.answer_timeout, self._unanswered, child, call)
        child.send_call(call)

    def _unanswered(self, child: SpawnedChild, call: PendingCall) -> None:
        if call.id in child.calls:
            child.kill(f"did not answer a batch within {self.answer_timeout:g}s and was stopped")

    def _never_sent(self, call: PendingCall) -> None:
        if call in self._waiting:
            self._waiting.remove(call)
            call.resolve(_lost(f"no checking process was ready within {self.start_timeout:g}s"))

    def _begin_closing(self) -> None:
        self._closing = True
        self._closed.set()
        self._resolve_all(self._waiting, _unavailable())
        child = self.child
        if child is None:
            return
        if child.ready is None:
            child.kill("was stopped at shutdown")
        else:
            child.send(encode(Stop()))

    @staticmethod
    def _resolve_all(calls: Iterable[PendingCall], answer: Failure) -> None:
        for call in list(calls):
            call.resolve(answer)
        if isinstance(calls, deque):
            calls.clear()


def _unavailable() -> Failure:
    return Failure(
        MonitorUnavailableError.__name__, "the monitor shut down before this request was checked"
    )


def _unguarded_main() -> str:
    main = getattr(sys.modules.get("__main__"), "__file__", None) or "the app's main module"
    return (
        f'placement="process" needs the app\'s entry point under `if __name__ == "__main__":`. '
        f"The checking process imports {main} again (multiprocessing's spawn does), and there it "
        "built a RefCheckMonitor at import, outside that guard, so it would run the app itself. "
        "Move the code that starts the app, the monitor included, under the guard, or use "
        'placement="thread"'
    )


def _failed_call(message: CallFailed) -> Failure:
    return Failure(message.error_type, message.message)
