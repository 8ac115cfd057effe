"""`refcheck review FILE --web`: the same labeller as a page in the reviewer's browser.

Served on the loopback address only (127.0.0.1, port 0 by default: the one taken is printed),
by the standard library's HTTP server: no dependency. The page's address carries a random
token that every API call must send back in a header, and a request for another host name is
refused, so another web page the reviewer has open cannot label (or read) the file. The
page writes the app's text with `textContent`, never as HTML. Keys as in the terminal.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from refcheck_callbacks.cli.exit_status import EXIT_OK
from refcheck_callbacks.errors import RefCheckError
from refcheck_callbacks.review.audit_book import LABELS
from refcheck_callbacks.review.session import ReviewSession

MAX_BODY = 4096
_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>refcheck review</title>
<style>body{font:15px/1.45 system-ui,sans-serif;max-width:60em;margin:1em auto;padding:0 1em}
h2{font-size:1em;margin:1.2em 0 .2em}mark{background:#ffd54f}#keys{position:sticky;bottom:0;
background:#eee;padding:.4em}.dim{color:#777}#claim{font-weight:bold;font-size:1.1em}</style>
</head><body><div id="title"></div><div id="status" class="dim"></div><div id="main"></div>
<div id="keys">e Entailment &middot; n Neutral &middot; c Contradiction &middot; s skip &middot;
b back</div><script>
const token = new URLSearchParams(location.search).get("token");
function el(tag, text, cls) { const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
function cut(c) { const p = el("p"); p.append(c.before);
  if (c.marked) { const m = el("mark", c.marked); p.append(m); }
  p.append(c.after); if (c.left_out) p.append(el("span", " [... " + c.left_out +
  " more characters not shown]", "dim")); return p; }
function show(state) {
  document.getElementById("title").textContent = "refcheck review " + state.file + " - " +
    (state.view ? "claim " + (state.view.position + 1) + " of " + state.total : "end") +
    " (" + state.labelled + " labelled)";
  document.getElementById("status").textContent = state.status || "";
  const main = document.getElementById("main"); main.replaceChildren();
  const v = state.view;
  if (!v) { main.append(el("h2", state.labelled === state.total ? "All " + state.total +
    " claims are labelled." : "End of the file: " + state.labelled + " of " + state.total +
    " claims are labelled.")); return; }
  if (v.question) { main.append(el("h2", "Question")); main.append(cut(v.question)); }
  main.append(el("h2", "Claim " + v.claim_number + " of " + v.claims_in_answer +
    " of answer " + v.answer_number)); const c = cut(v.claim); c.id = "claim"; main.append(c);
  let checker = v.predicted || "no label";
  if (v.probabilities) checker += " (" + Object.entries(v.probabilities).map(
    ([k, p]) => k + " " + p.toFixed(2)).join(", ") + ")";
  main.append(el("p", "Checker: " + checker));
  const label = el("p", "Your label: " + (v.label === null ? "none yet" : v.label));
  label.id = "label"; main.append(label);
  if (v.evidence) { main.append(el("h2", "Evidence, in reference [" +
    (v.evidence_reference + 1) + "]")); const e = cut(v.evidence); e.id = "evidence";
    main.append(e); }
  main.append(el("h2", "References"));
  v.references.forEach((r, i) => { const p = cut(r.text);
    p.prepend("[" + (i + 1) + "]" + (r.id ? " " + r.id : "") + ": "); main.append(p); });
  if (v.references_left_out) main.append(el("p", "[... " + v.references_left_out +
    " more references]", "dim"));
  main.append(el("h2", "Answer")); main.append(cut(v.answer));
}
async function request(path, body) {
  try {
    const r = await fetch(path, {method: body ? "POST" : "GET", body: body &&
      JSON.stringify(body), headers: {"X-Refcheck-Token": token,
      "Content-Type": "application/json"}});
    if (!r.ok) throw new Error("HTTP " + r.status + " " + r.statusText);
    show(await r.json());
  } catch (error) {
    document.getElementById("status").textContent = "The review server did not answer (" +
      error.message + "): nothing was saved. Is refcheck review still running?";
  }
}
// One call at a time, in the order of the keys: the server takes them as typed (the browser
// could otherwise send them on parallel connections), and the last answer shown is the last.
let queue = Promise.resolve();
function call(path, body) { queue = queue.then(() => request(path, body)); }
const keys = {e: "Entailment", 1: "Entailment", n: "Neutral", 2: "Neutral",
  c: "Contradiction", 3: "Contradiction"};
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key.toLowerCase();
  if (keys[key]) call("/api/act", {action: "label", label: keys[key]});
  else if (key === "s") call("/api/act", {action: "skip"});
  else if (key === "b") call("/api/act", {action: "back"});
});
call("/api/view");
</script></body></html>"""


class _Desk:
    """The session behind the page, one request at a time."""

    def __init__(self, session: ReviewSession) -> None:
        self.session = session
        self.lock = threading.Lock()
        self.status = ""

    def state(self) -> dict[str, Any]:
        view = self.session.view()
        return {
            "file": self.session.book.path.name,
            "total": self.session.total,
            "labelled": self.session.book.labelled(),
            "status": self.status,
            "view": None if view is None else view.as_dict(),
        }

    def act(self, action: object, label: object) -> None:
        if action == "skip":
            self.session.skip()
        elif action == "back":
            self.session.back()
        elif action == "label" and label in LABELS and not self.session.done:
            position = self.session.position
            try:
                self.session.give(str(label))
                self.status = f"claim {position + 1}: {label}, saved"
            except (OSError, RefCheckError) as exc:
                self.status = f"NOT SAVED: {exc}"


def _handler(desk: _Desk, token: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return  # the reviewer's terminal shows the address, not every request

        def _allowed(self, api: bool) -> bool:
            host = self.headers.get("Host", "")
            port = self.server.server_port  # type: ignore[attr-defined]
            if host not in (f"127.0.0.1:{port}", f"localhost:{port}"):
                self.send_error(HTTPStatus.FORBIDDEN, "wrong host")
                return False
            if api and not secrets.compare_digest(self.headers.get("X-Refcheck-Token", ""), token):
                self.send_error(HTTPStatus.FORBIDDEN, "wrong token")
                return False
            return True

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _state(self) -> None:
            with desk.lock:
                state = desk.state()
            self._send(json.dumps(state).encode("utf-8"), "application/json")

        def do_GET(self) -> None:
            path = self.path.partition("?")[0]
            if path == "/" and self._allowed(api=False):
                self._send(_PAGE.encode("utf-8"), "text/html; charset=utf-8")
            elif path == "/api/view" and self._allowed(api=True):
                self._state()
            elif path not in ("/", "/api/view"):
                self.send_error(HTTPStatus.NOT_FOUND)

        def do_POST(self) -> None:
            if self.path != "/api/act":
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            if not self._allowed(api=True):
                return
            length = int(self.headers.get("Content-Length", "0") or 0)
            if not 0 < length <= MAX_BODY:
                self.send_error(HTTPStatus.BAD_REQUEST, "a small JSON body")
                return
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, RecursionError):
                self.send_error(HTTPStatus.BAD_REQUEST, "not JSON")
                return
            if isinstance(body, dict):
                with desk.lock:
                    desk.act(body.get("action"), body.get("label"))
            self._state()

    return Handler


def serve(session: ReviewSession, port: int) -> int:
    """Serve the page until interrupted (Ctrl-C)."""
    token = secrets.token_urlsafe(16)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(_Desk(session), token))
    address = f"http://127.0.0.1:{server.server_address[1]}/?token={token}"
    print(f"refcheck: review at {address} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print(
        f"refcheck: {session.book.labelled()} of {session.total} claims labelled in "
        f"{session.book.path}",
        file=sys.stderr,
    )
    return EXIT_OK
