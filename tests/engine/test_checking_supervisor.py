"""The supervisor of a checking process, with a child that keeps dying before it is ready."""

from __future__ import annotations

import time

from child_components import dies_while_building

from refcheck_callbacks import Aggregator, CheckingProcessError, CheckRequest, StageTimeouts
from refcheck_callbacks.engine.placement.components import Recipe, Settings
from refcheck_callbacks.engine.placement.spawned import Failure
from refcheck_callbacks.engine.placement.supervisor import MAX_UNREADY, Supervisor


def test_children_dying_before_ready_fail_waiting_work_at_once_and_stop_being_restarted() -> None:
    settings = Settings(Aggregator.STRICT, StageTimeouts(), None)
    recipe = Recipe.of("sentence", dies_while_building, settings)
    supervisor = Supervisor(recipe, start_timeout=600.0)
    answers: list[Failure] = []
    try:
        while not answers or "in a row" not in answers[-1].message:
            answer = supervisor.submit([CheckRequest(answer="It is in Paris.")]).result(30)
            assert isinstance(answer, Failure)
            answers.append(answer)
        time.sleep(1.0)  # a restart would have started by now (the pauses are 0.5 s, 1 s, ...)
        later = supervisor.submit([CheckRequest(answer="It is in Paris.")]).result(1)
    finally:
        supervisor.close(timeout=5)
    # Each waiting batch failed when its child died, not after `start_timeout`.
    assert {a.error_type for a in answers} == {CheckingProcessError.__name__}
    assert all("exited with code 3 before it was ready" in a.message for a in answers)
    assert f"({MAX_UNREADY} in a row)" in answers[-1].message
    assert supervisor.restarts == MAX_UNREADY - 1
    assert later == answers[-1]
    assert supervisor.child is None
