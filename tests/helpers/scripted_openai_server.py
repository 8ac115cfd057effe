"""A real HTTP server on 127.0.0.1 that speaks OpenAI chat-completions with scripted replies.

litellm talks to it exactly as it would to vLLM or any OpenAI-compatible endpoint: a real
socket, real JSON, real status codes and headers. Tests script what each request gets back
(content, status, headers, delay, finish reason) and assert on what the server received.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PRICED_MODEL = "openai/gpt-4o-mini"
"""A model litellm has a price for: cost is computed from the server's token counts."""
UNPRICED_MODEL = "openai/served-by-vllm"
"""A name only our server knows, as with a self-hosted vLLM model: no cost, tokens only."""
COUNTED = object()
"""`Reply.usage` by default: the usage object made of `prompt_tokens` and `completion_tokens`."""
NO_USAGE = object()
"""`Reply.usage` for a reply without a `usage` key at all."""


@dataclass
class Reply:
    """What the server answers to one request.

    `content` is the assistant message; a list gives one choice per item, a str is repeated
    for every choice the request asked for (`n`).
    """

    content: str | list[str] = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str = "stop"
    model: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    raw: bytes | None = None
    """A body sent as-is instead of a completion: the server then stands in for any JSON API
    (a refcheck service, in the remote client's tests)."""
    top_logprobs: list[dict[str, float]] | None = None
    """Per generated token, the likeliest tokens and their log-probabilities (as vLLM returns
    them for `logprobs=true`); the first of each step is the token generated."""
    usage: Any = COUNTED
    """The `usage` sent: by default the counts above; `NO_USAGE` leaves the key out; anything
    else is sent as it is (null, zeros, negatives, text, a huge number: what providers and
    proxies have been seen to send)."""


@dataclass
class Received:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def prompt(self) -> str:
        """All message contents joined: what the model was shown."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


Responder = Callable[[Received], Reply]


def completion_body(reply: Reply, request: Received) -> dict[str, Any]:
    n = int(request.body.get("n") or 1)
    contents = reply.content if isinstance(reply.content, list) else [reply.content] * n
    body = {
        "id": f"chatcmpl-{int(request.at * 1e6)}",
        "object": "chat.completion",
        "created": int(request.at),
        "model": reply.model or request.body.get("model", "scripted"),
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": reply.finish_reason,
                "logprobs": _logprobs(reply.top_logprobs),
            }
            for i, text in enumerate(contents)
        ],
    }
    if reply.usage is COUNTED:
        body["usage"] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
    elif reply.usage is not NO_USAGE:
        body["usage"] = reply.usage
    return body


def _logprobs(steps: list[dict[str, float]] | None) -> dict[str, Any] | None:
    if steps is None:
        return None
    return {
        "content": [
            {
                "token": next(iter(step)),
                "logprob": next(iter(step.values())),
                "bytes": None,
                "top_logprobs": [
                    {"token": token, "logprob": logprob, "bytes": None}
                    for token, logprob in step.items()
                ],
            }
            for step in steps
        ]
    }


class ScriptedOpenAIServer:
    """Serves scripted replies on 127.0.0.1:<free port>; records every request.

    Script with `respond(callable)` (a reply computed from the request) or `queue(*replies)`
    (replies handed out in order; when they run out the server answers 500 "script exhausted",
    so a test that sends more requests than it expected fails loudly).
    """

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was handling at once."""
        self._lock = threading.Lock()
        self._generation = 0
        """Bumped by `reset`: requests of an earlier test no longer count as in flight."""
        self._cancel = threading.Event()
        self._responder: Responder | None = None
        self._queue: list[Reply] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"

    def respond(self, responder: Responder) -> None:
        with self._lock:
            self._responder, self._queue = responder, []

    def queue(self, *replies: Reply | str) -> None:
        with self._lock:
            self._responder = None
            self._queue = [r if isinstance(r, Reply) else Reply(content=r) for r in replies]

    def reset(self) -> None:
        with self._lock:
            self.received.clear()
            self.in_flight = self.max_in_flight = 0
            self._generation += 1
            # Wake replies still sleeping for an earlier test; they end without answering.
            self._cancel.set()
            self._cancel = threading.Event()
            self._responder, self._queue = None, []

    def chat_requests(self) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path.endswith("/chat/completions")]

    def close(self) -> None:
        self._cancel.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _enter(self) -> tuple[int, threading.Event]:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self._generation, self._cancel

    def _leave(self, generation: int) -> None:
        with self._lock:
            if generation == self._generation:
                self.in_flight -= 1

    def _next_reply(self, request: Received) -> Reply:
        with self._lock:
            self.received.append(request)
            if self._responder is not None:
                responder = self._responder
            elif self._queue:
                return self._queue.pop(0)
            else:
                return Reply(status=500, content="script exhausted")
        return responder(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                request = Received(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw or b"{}"),
                    at=time.time(),
                )
                generation, cancel = server._enter()
                try:
                    reply = server._next_reply(request)
                    if reply.delay and cancel.wait(reply.delay):
                        self.close_connection = True
                        return
                    self._send(reply, request)
                finally:
                    server._leave(generation)

            def _send(self, reply: Reply, request: Received) -> None:
                if reply.raw is not None:
                    self._write(reply, reply.raw)
                    return
                if reply.status == 200:
                    payload: dict[str, Any] = completion_body(reply, request)
                else:
                    message = reply.content if isinstance(reply.content, str) else "error"
                    payload = {"error": {"message": message, "type": "scripted", "code": None}}
                self._write(reply, json.dumps(payload).encode())

            def _write(self, reply: Reply, data: bytes) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                # The client may have given up (its deadline): nothing left to tell it.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        return Handler
