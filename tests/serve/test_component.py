"""A replica's turn-taking without a cluster: a caller's parts one at a time, other callers'
beside them, and nothing kept once a caller has no part in flight."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("ray", reason="the serve extra is not installed")

from refcheck_callbacks.serve.component import CallerTurns


def test_a_callers_parts_take_turns_while_another_callers_part_runs_beside_them() -> None:
    turns = CallerTurns()
    events: list[tuple[str, str]] = []
    in_flight: list[int] = []

    async def part(caller: str, name: str) -> None:
        async with turns.turn(caller):
            events.append(("in", name))
            in_flight.append(len(turns))
            await asyncio.sleep(0.01)
            events.append(("out", name))

    async def parts() -> None:
        await asyncio.gather(part("a", "a1"), part("a", "a2"), part("b", "b1"))

    asyncio.run(parts())
    order = [f"{what} {name}" for what, name in events]
    assert order.index("out a1") < order.index("in a2")  # one part of a at a time
    assert order.index("in b1") < order.index("out a1")  # b did not wait for a
    assert max(in_flight) == 2 and len(turns) == 0  # two callers in flight, then none kept
