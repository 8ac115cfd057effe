"""A real headless Chromium driven over the Chrome DevTools Protocol, as a person's browser.

Chromium binds its DevTools port itself (`--remote-debugging-port=0`) and prints the address
it took on stderr, so no port is picked and bound later. One page (the `about:blank` it opens)
is attached in flat mode: every command carries the page's session id over the one browser
socket. Waiting is polling the page with a deadline, never sleeping for a guessed time.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
START_TIMEOUT = 60.0
"""Seconds Chromium may take to say where its DevTools listen (a cold start on 2 loaded cores)."""
REPLY_TIMEOUT = 30.0
"""Seconds one DevTools command may take to be answered."""
POLL = 0.02
"""Seconds between two looks at the page while waiting for it (a poll, not a guess)."""
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


class DevToolsError(AssertionError):
    """Chromium answered a command with an error, or the page's script threw."""


class Chromium:
    """A headless Chromium with one page, closed (process and profile) by `close`."""

    def __init__(self, profile: Path) -> None:
        self._process = subprocess.Popen(
            [
                CHROMIUM, "--headless=new", "--remote-debugging-port=0",
                f"--user-data-dir={profile}", "--no-sandbox", "--no-first-run",
                "--no-default-browser-check", "about:blank",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self._ids = 0
        self.events: list[dict[str, Any]] = []
        """Every event of the page received so far (after `Runtime.enable`: its exceptions)."""
        try:
            self._socket: ClientConnection = connect(
                self._devtools_address(), max_size=None, open_timeout=REPLY_TIMEOUT, legacy=True
            )  # closed in `close`, which the caller's fixture runs
            self._session = self._attach_to_page()
            self.send("Page.enable")
            self.send("Runtime.enable")
        except BaseException:
            self._process.kill()
            self._stop()
            raise

    def _devtools_address(self) -> str:
        """The browser socket's address, read from Chromium's stderr within the deadline."""
        lines: queue.Queue[str] = queue.Queue()
        stderr = self._process.stderr
        assert stderr is not None

        def read() -> None:  # the rest of stderr is drained so Chromium never blocks on it
            for line in stderr:
                lines.put(line)
            lines.put("")

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        seen: list[str] = []
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if not line:
                raise DevToolsError(f"chromium ended before listening: {''.join(seen)[-2000:]}")
            seen.append(line)
            if found := _LISTENING.search(line):
                return found[1]
        raise DevToolsError(f"chromium did not listen in {START_TIMEOUT} s: {''.join(seen)}")

    def _attach_to_page(self) -> str:
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        reply = self.send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=False
        )
        return str(reply["sessionId"])

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: bool = True
    ) -> dict[str, Any]:
        """Send one command (to the page unless `session=False`) and return its reply's result;
        the events that come first are kept in `events`."""
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._socket.send(json.dumps(message))
        deadline = time.monotonic() + REPLY_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DevToolsError(f"no reply to {method} in {REPLY_TIMEOUT} s")
            reply = json.loads(self._socket.recv(timeout=left))
            if reply.get("id") == self._ids:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            if "method" in reply:
                self.events.append(reply)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        reply = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in reply:
            raise DevToolsError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def navigate(self, url: str) -> None:
        """Open `url` and wait until its document has loaded."""
        reply = self.send("Page.navigate", {"url": url})
        if reply.get("errorText"):
            raise DevToolsError(f"{url}: {reply['errorText']}")
        self.wait_for("document.readyState === 'complete'")

    def press(self, key: str) -> None:
        """Type one printable key, down then up, as a keyboard does."""
        code = f"Key{key.upper()}" if key.isalpha() else f"Digit{key}"
        common = {"key": key, "code": code, "windowsVirtualKeyCode": ord(key.upper())}
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": key, **common})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def wait_for(self, expression: str, timeout: float = REPLY_TIMEOUT) -> Any:
        """The first truthy value of `expression`, polled until `timeout` seconds have passed."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise DevToolsError(f"{expression} still {value!r} after {timeout} s")
            time.sleep(POLL)

    def exceptions(self) -> list[str]:
        """The page's uncaught script errors and console errors so far."""
        found = []
        for event in self.events:
            if event["method"] == "Runtime.exceptionThrown":
                found.append(json.dumps(event["params"]["exceptionDetails"])[:2000])
            elif (
                event["method"] == "Runtime.consoleAPICalled" and event["params"]["type"] == "error"
            ):
                found.append(json.dumps(event["params"]["args"])[:2000])
        return found

    def close(self) -> None:
        with contextlib.suppress(DevToolsError, OSError, ConnectionClosed):
            self.send("Browser.close", session=False)  # gone already: it is stopped below
        self._socket.close()
        self._stop()

    def _stop(self) -> None:
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
