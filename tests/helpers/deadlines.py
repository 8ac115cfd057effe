"""Timing bounds in tests are the configured deadline plus one shared slack.

A bound written as a bare number (`< 0.5`) hides what it tests and fails on a loaded machine;
`deadline + SLACK` says which promise is checked (`flush(timeout=2)` returns within 2 s) and
allows the same scheduling margin everywhere. Bounds that also cover a process's teardown
(`faults/test_process_end.py`) or an LLM call's retries (`faults/test_llm_faults_end_to_end.py`)
keep their own, larger margins beside them.
"""

SLACK = 1.5
"""Seconds a deadline may be overrun by thread wake-ups on a loaded machine (2 shared cores)."""

AT_ONCE = 0.0
"""The deadline of a call that promises not to wait (a full queue refuses at once)."""
