"""`refcheck serve`: a checker (and optionally an extractor) as a Ray Serve service.

The options are parsed here; Ray is imported only when the command runs (`refcheck_callbacks.
serve`), so `refcheck --help` stays instant and works without the `serve` extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from refcheck_callbacks.cli.component_names import describe
from refcheck_callbacks.contract.registry import CHECKERS, EXTRACTORS
from refcheck_callbacks.errors import ServiceStartError
from refcheck_callbacks.remote.wire import (
    DEFAULT_MAX_CALL_INPUTS,
    DEFAULT_MAX_REQUEST_BYTES,
    TOKEN_ENV,
)

if TYPE_CHECKING:
    from refcheck_callbacks.serve.launch import Launch

_SUMMARY = "run a checker (and an extractor) as a Ray Serve service that apps call over HTTP"

_DESCRIPTION = f"""\
{_SUMMARY}.

Apps use it with RemoteChecker("http://HOST:PORT") (spec remote:http://HOST:PORT) and
RemoteExtractor. Each component is a deployment whose replicas merge the calls of every app
into one model call (@serve.batch). Routes: POST /v1/check, POST /v1/extract (with
--extractor), GET /v1/stats (recent batches), GET /healthz, GET /readyz.

  refcheck serve --checker nli:MODEL --num-gpus 1 --replicas 2
  refcheck serve --address auto --checker embedded --extractor sentence
  refcheck serve --config deploy/ray/serve-config.yaml

A bearer token (--token, or {TOKEN_ENV}) is then required on every call but the
health and readiness probes. Without --address a local Ray cluster is started (and stopped),
every port of it on 127.0.0.1. A call holds at most --max-call-inputs claims, and a caller's
claims are checked in parts of --max-caller-inputs that take turns with other callers'.
"""

_SCALING_FLAGS = (
    "replicas", "num_cpus", "num_gpus", "autoscale", "target_ongoing_requests",
    "max_batch_size", "batch_wait", "max_caller_inputs", "max_queued_requests",
)  # fmt: skip


def add_serve_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve",
        help=_SUMMARY,
        description=_DESCRIPTION,
        epilog=f"Checker specs:\n{describe(CHECKERS)}\n\nExtractor specs:\n{describe(EXTRACTORS)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run_serve)
    what = parser.add_argument_group("what to serve")
    what.add_argument("--checker", default=None, metavar="SPEC", help="default: embedded")
    what.add_argument("--checker-api-base", metavar="URL", help="endpoint of an llm:MODEL checker")
    what.add_argument("--extractor", metavar="SPEC", help="also serve /v1/extract with it")
    what.add_argument("--extractor-api-base", metavar="URL", help="endpoint of an llm extractor")
    what.add_argument(
        "--config", type=Path, metavar="FILE",
        help="a Serve config file (as `serve deploy` and KubeRay take; see deploy/ray/) instead "
        "of the component and scaling options",
    )  # fmt: skip
    where = parser.add_argument_group("where")
    where.add_argument(
        "--address", metavar="ADDRESS",
        help="a running Ray cluster (auto, HOST:PORT, ray://HOST:10001); default: start a "
        "local one for the service",
    )  # fmt: skip
    where.add_argument("--host", default="127.0.0.1", help="HTTP bind address (127.0.0.1)")
    where.add_argument("--port", type=int, default=8000, help="HTTP port (8000)")
    where.add_argument("--name", default="refcheck", help="the Serve application's name")
    where.add_argument("--route-prefix", default="/", help="URL prefix of every route (/)")
    calls = parser.add_argument_group("calls")
    calls.add_argument(
        "--token", help=f"bearer token every call must carry (default: ${TOKEN_ENV}, if set)"
    )
    calls.add_argument(
        "--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES,
        help=f"largest request body accepted (default {DEFAULT_MAX_REQUEST_BYTES})",
    )  # fmt: skip
    calls.add_argument(
        "--max-call-inputs", type=int, default=DEFAULT_MAX_CALL_INPUTS, metavar="N",
        help="claims per check call (answers per extract call) accepted; a larger call gets a "
        f"413 that says how to split it (default {DEFAULT_MAX_CALL_INPUTS})",
    )  # fmt: skip
    scale = parser.add_argument_group("checker replicas and batching")
    scale.add_argument("--replicas", type=int, default=None, help="checker replicas (1)")
    scale.add_argument("--num-cpus", type=float, default=None, help="CPUs per replica (1)")
    scale.add_argument("--num-gpus", type=float, default=None, help="GPUs per replica (0)")
    scale.add_argument(
        "--autoscale", metavar="MIN:MAX",
        help="autoscale the checker between MIN and MAX replicas (instead of --replicas)",
    )  # fmt: skip
    scale.add_argument(
        "--target-ongoing-requests", type=float, default=None,
        help="calls per replica that autoscaling aims for (4)",
    )  # fmt: skip
    scale.add_argument(
        "--max-batch-size", type=int, default=None,
        help="callers' calls merged into one checker call at most (16)",
    )  # fmt: skip
    scale.add_argument(
        "--batch-wait", type=float, default=None, metavar="SECONDS",
        help="how long a call waits for others to join its batch (0.01)",
    )  # fmt: skip
    scale.add_argument(
        "--max-caller-inputs", type=int, default=None, metavar="N",
        help="a caller's claims in one checker call at most: a larger call is checked in parts "
        "that take turns with other callers' (256)",
    )  # fmt: skip
    scale.add_argument(
        "--max-queued-requests", type=int, default=None,
        help="calls waiting for a replica before the service answers 503 (256)",
    )  # fmt: skip


def _fail(message: str) -> int:
    print(f"refcheck serve: error: {message}", file=sys.stderr)
    return 2


def run_serve(args: argparse.Namespace) -> int:
    given = [flag for flag in _SCALING_FLAGS if getattr(args, flag) is not None]
    if args.config is not None and (given or args.checker or args.extractor):
        flags = ", ".join("--" + f.replace("_", "-") for f in given) or "--checker/--extractor"
        return _fail(f"--config replaces the component and scaling options; drop {flags}")
    if args.config is not None and not args.config.is_file():
        return _fail(f"config file not found: {args.config}")
    if args.replicas is not None and args.replicas < 1:
        return _fail("--replicas must be at least 1")
    try:
        autoscale = _autoscale(args.autoscale)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        from refcheck_callbacks.serve.launch import serve_until_stopped
    except ImportError as exc:
        return _fail(f"{exc}; install the serve extra: pip install 'refcheck-callbacks[serve]'")
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None:
        print(_open_warning(args.host, args.port), file=sys.stderr)
    try:
        launch = _launch(args, token, autoscale)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        serve_until_stopped(launch)
    except ServiceStartError as exc:
        return _fail(str(exc))
    return 0


def _open_warning(host: str, port: int) -> str:
    """The one line that says who can call a service without a token."""
    who = (
        "any local user (any process on this machine)"
        if host in ("127.0.0.1", "localhost", "::1")
        else f"anyone who reaches {host}"
    )
    return (
        f"refcheck serve: warning: no token, so {who} can call port {port} and send it text "
        f"to check; set --token or {TOKEN_ENV}"
    )


def _autoscale(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    low, sep, high = value.partition(":")
    if not sep or not low.isdigit() or not high.isdigit() or not 0 <= int(low) <= int(high):
        raise ValueError(f"--autoscale takes MIN:MAX replicas, like 1:4; not {value!r}")
    return int(low), int(high)


def _launch(
    args: argparse.Namespace, token: str | None, autoscale: tuple[int, int] | None
) -> Launch:
    """The launch the options describe (ValueError for a bad combination)."""
    from pydantic import ValidationError

    from refcheck_callbacks.serve.app import Scaling, ServiceArgs
    from refcheck_callbacks.serve.component import BatchSettings
    from refcheck_callbacks.serve.gateway import token_digest
    from refcheck_callbacks.serve.launch import Launch

    if args.config is not None and token is not None:
        # A local cluster's replicas inherit it; a running cluster needs it in its own
        # environment (deploy/ray/ takes it from a Kubernetes Secret).
        os.environ[TOKEN_ENV] = token
    defaults = Scaling()
    try:
        checker = Scaling(
            replicas=args.replicas if args.replicas is not None else defaults.replicas,
            num_cpus=args.num_cpus if args.num_cpus is not None else defaults.num_cpus,
            num_gpus=args.num_gpus if args.num_gpus is not None else defaults.num_gpus,
            autoscale=autoscale,
            target_ongoing_requests=args.target_ongoing_requests
            or defaults.target_ongoing_requests,
            batch=BatchSettings(
                max_batch_size=args.max_batch_size or defaults.batch.max_batch_size,
                batch_wait_timeout_s=defaults.batch.batch_wait_timeout_s
                if args.batch_wait is None
                else args.batch_wait,
                max_caller_inputs=args.max_caller_inputs or defaults.batch.max_caller_inputs,
            ),
            max_queued_requests=args.max_queued_requests or defaults.max_queued_requests,
        )
        service = ServiceArgs(
            checker=args.checker or "embedded",
            checker_api_base=args.checker_api_base,
            extractor=args.extractor,
            extractor_api_base=args.extractor_api_base,
            max_request_bytes=args.max_request_bytes,
            max_call_inputs=args.max_call_inputs,
            token_sha256=None if token is None else token_digest(token),
        )
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc
    return Launch(
        args=service,
        checker=checker,
        address=args.address,
        host=args.host,
        port=args.port,
        name=args.name,
        route_prefix=args.route_prefix,
        config=args.config,
    )
