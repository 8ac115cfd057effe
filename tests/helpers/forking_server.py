"""A forking WSGI server (a process per request, forked from the server that built the
monitor) serving `server_apps.wsgi`: `python -m forking_server PORT` (0: a free port), which
prints `Listening on 127.0.0.1:PORT` once it listens."""

from __future__ import annotations

import socketserver
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

if __name__ == "__main__":
    from server_apps import wsgi

    class ForkingWSGIServer(socketserver.ForkingMixIn, WSGIServer):
        pass

    server = ForkingWSGIServer(("127.0.0.1", int(sys.argv[1])), WSGIRequestHandler)
    server.set_app(wsgi)
    print(f"Listening on 127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()
