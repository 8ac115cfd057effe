"""The supervisor of a checking process, with a child that keeps dying before it is ready."""

from __future__ import annotations

import time

from child_components import dies_while_building

from refcheck_callbacks import Aggregator, CheckingProcessError, CheckRequest, StageTimeouts
from refcheck_callbacks.engine.placement.components import Recipe, Settings
from refcheck_callbacks.engine.placement.spawned import Failure
from refcheck_callbacks.engine.placement.supervisor import Supervisor


def test_a_child_dying_young_is_restarted_with_growing_pauses_and_waiting_work_fails_in_time():
    settings = Settings(Aggregator.STRICT, StageTimeouts(), None)
    recipe = Recipe.of("sentence", dies_while_building, settings)
    supervisor = Supervisor(recipe, start_timeout=4.0)
    try:
        started = time.monotonic()
        answer = supervisor.submit([CheckRequest(answer="It is in Paris.")]).result(timeout=30)
        waited = time.monotonic() - started
    finally:
        supervisor.close(timeout=5)
    assert isinstance(answer, Failure)
    assert answer.error_type == CheckingProcessError.__name__
    assert "no checking process was ready within 4s" in answer.message
    assert 3.5 < waited < 10
    # Pauses of 0.5, 1 and 2 s between starts: a few restarts in 4 s, not one per spawn time.
    assert 1 <= supervisor.restarts <= 4
