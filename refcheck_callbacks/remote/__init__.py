"""Checking off the app's process: the wire format and the HTTP client that carries it.

`wire` holds the calls and replies (pydantic models, transport-free); `http` posts them to a
`refcheck serve` service, as `options` (`RemoteOptions`) say. `check.remote.RemoteChecker` and
`extract.remote.RemoteExtractor` are the components an app plugs into its monitor; `serve/` is
the other end.
"""

from refcheck_callbacks.remote.options import RemoteOptions

__all__ = ["RemoteOptions"]
