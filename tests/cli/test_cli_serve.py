"""`refcheck serve`'s options become the service's settings, before anything starts."""

from __future__ import annotations

import pytest

pytest.importorskip("ray", reason="the serve extra is not installed")

from refcheck_callbacks.cli.main import build_parser
from refcheck_callbacks.cli.serve import _launch, _open_warning


def test_the_call_limit_and_a_callers_share_reach_the_gateway_and_the_replicas() -> None:
    args = build_parser().parse_args(
        ["serve", "--max-call-inputs", "1000", "--max-caller-inputs", "64", "--batch-wait", "0"]
    )
    launch = _launch(args, token=None, autoscale=None)
    assert launch.args.max_call_inputs == 1000
    assert launch.checker.batch.max_caller_inputs == 64
    assert launch.checker.batch.batch_wait_timeout_s == 0
    defaults = _launch(build_parser().parse_args(["serve"]), token=None, autoscale=None)
    assert (defaults.args.max_call_inputs, defaults.checker.batch.max_caller_inputs) == (4096, 256)


def test_the_open_service_warning_names_who_can_call_it() -> None:
    assert "any local user" in _open_warning("127.0.0.1", 8000)
    assert "anyone who reaches 0.0.0.0" in _open_warning("0.0.0.0", 8000)
