"""Running one LangChain app in each of the ways its users run it, for tests that assert the
same pairing in all of them: `invoke`, `stream` (a graph's updates, a chain's chunks) and
`astream_events` (the async event stream, read to its end)."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig

MODES = ("invoke", "stream", "astream_events")


def run_in(mode: str, app: Runnable[Any, Any], inputs: Any, config: RunnableConfig) -> None:
    """Run `app` on `inputs` to its end in `mode` (one of `MODES`)."""
    if mode == "invoke":
        app.invoke(inputs, config)
    elif mode == "stream":
        for _ in app.stream(inputs, config):
            pass
    elif mode == "astream_events":

        async def drain() -> None:
            async for _ in app.astream_events(inputs, config):
                pass

        asyncio.run(drain())
    else:
        raise ValueError(f"unknown mode {mode!r}")
