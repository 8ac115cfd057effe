"""`RunStates` under concurrency: callbacks from many threads alias, read and free runs at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from refcheck_callbacks.integrations.shared.run_state import RunStates


def test_threads_starting_aliasing_and_freeing_runs_leave_nothing_behind() -> None:
    runs: RunStates[list[str]] = RunStates()
    barrier = threading.Barrier(8)

    def app_thread(thread: int) -> int:
        barrier.wait()
        seen = 0
        for i in range(300):
            root = (thread, i)
            runs.start(root, [])
            parent = root
            for depth in range(5):
                child = (thread, i, depth)
                state = runs.alias(child, parent)
                assert state is not None
                state.append(f"{depth}")
                parent = child
            assert runs.root_of(parent) == root
            popped = runs.pop(root)
            assert popped == ["0", "1", "2", "3", "4"]
            seen += 1
        return seen

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(app_thread, range(8))) == 8 * 300
    assert len(runs) == 0 and runs.alias_count == 0


def test_aliases_racing_the_free_of_their_root_never_leak() -> None:
    """A child callback that arrives while another thread ends the root is either attached
    (and freed with it) or refused; it is never left in the table."""
    runs: RunStates[object] = RunStates()
    for round_ in range(200):
        root = ("root", round_)
        runs.start(root, object())
        go = threading.Event()

        def alias_many(root: tuple[str, int] = root, go: threading.Event = go) -> None:
            go.wait()
            for child in range(200):
                runs.alias((root, child), root)

        aliasers = [threading.Thread(target=alias_many) for _ in range(3)]
        for thread in aliasers:
            thread.start()
        go.set()
        runs.pop(root)
        for thread in aliasers:
            thread.join()
    assert len(runs) == 0 and runs.alias_count == 0


def test_overflow_and_expiry_evict_each_run_once_with_its_reason() -> None:
    now = [0.0]
    evicted: list[tuple[str, str]] = []
    runs: RunStates[str] = RunStates(
        ttl=10.0, max_runs=3, on_evict=lambda state, why: evicted.append((state, why)),
        clock=lambda: now[0],
    )  # fmt: skip
    for name in "abcd":
        runs.start(name, name)
    assert evicted == [("a", "overflow")]
    runs.alias("b.child", "b")
    now[0] = 11.0
    assert runs.sweep() == 3
    assert evicted[1:] == [("b", "expired"), ("c", "expired"), ("d", "expired")]
    assert len(runs) == 0 and runs.alias_count == 0
    assert runs.alias("late", "b") is None and runs.get("b.child") is None
