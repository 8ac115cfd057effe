"""Running the service: connect to a Ray cluster (or start a local one), deploy, wait, clean up.

`refcheck serve` calls `serve_until_stopped`. Without `address` a local Ray cluster is started
for the service and shut down with it, every port of it on 127.0.0.1 (`serve.loopback`); with
one, the application is deployed on that cluster and deleted from it on stop. HTTP binds
127.0.0.1 unless told otherwise. A Serve config file (the format `serve deploy` and KubeRay
take) can replace the component options.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import ray
import yaml
from ray import serve
from ray.serve.schema import ServeDeploySchema

from refcheck_callbacks.errors import ServiceStartError
from refcheck_callbacks.serve.app import Scaling, ServiceArgs, build_application
from refcheck_callbacks.serve.loopback import local_cluster_options

_RUNNING = "RUNNING"
_FAILED = ("DEPLOY_FAILED", "UNHEALTHY")
PROXY_READY_TIMEOUT_ENV = "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"
LOCAL_PROXY_READY_TIMEOUT_S = 60.0


@dataclass
class Launch:
    """Where and what to serve."""

    args: ServiceArgs = field(default_factory=ServiceArgs)
    checker: Scaling = field(default_factory=Scaling)
    extractor: Scaling = field(default_factory=Scaling)
    address: str | None = None
    """A running Ray cluster (`ray://...`, `host:port`, or `auto`); None starts a local one."""
    host: str = "127.0.0.1"
    port: int = 8000
    name: str = "refcheck"
    route_prefix: str = "/"
    config: Path | None = None
    """A Serve config file; its applications replace `args`, `checker` and `extractor`."""
    ready_timeout: float = 900.0
    """Seconds to wait for the replicas to load their models."""


PORT_TAKEN = "could not bind"
"""In the `ServiceStartError` of a service whose HTTP proxy could not bind its address."""


def start_http(http_options: dict[str, Any]) -> None:
    """`serve.start`, whose HTTP proxy binds `host:port` in an actor of its own: a port
    another process holds fails the start, said as a `ServiceStartError` naming the address
    (`PORT_TAKEN`), not as the proxy actor's traceback."""
    try:
        serve.start(http_options=http_options)
    except Exception as exc:
        if "Failed to bind to address" not in str(exc):
            raise
        where = f"{http_options.get('host')}:{http_options.get('port')}"
        raise ServiceStartError(
            f"the HTTP proxy {PORT_TAKEN} {where}: another process listens there; "
            "pick another --port"
        ) from None


def _deploy_config(path: Path, launch: Launch) -> list[str]:
    """Deploy a Serve config file's applications; their names."""
    config = ServeDeploySchema.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    http = config.http_options.model_dump(exclude_unset=True)
    start_http({"host": launch.host, "port": launch.port, **http})
    # `serve run CONFIG` does the same: the controller builds each application from its
    # import path and applies the file's per-deployment options.
    from ray.serve.context import _get_global_client

    _get_global_client().deploy_apps(config)
    return [app.name for app in config.applications]


def _wait_until_running(names: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        statuses = serve.status().applications
        states = {name: statuses[name] for name in names if name in statuses}
        failed = {n: s for n, s in states.items() if s.status in _FAILED}
        if failed:
            detail = "; ".join(f"{n}: {s.message}" for n, s in failed.items())
            raise ServiceStartError(f"the service failed to start: {detail}")
        if len(states) == len(names) and all(s.status == _RUNNING for s in states.values()):
            return
        if time.monotonic() > deadline:
            raise ServiceStartError(f"the service was not ready within {timeout:g}s")
        time.sleep(0.5)


def start(launch: Launch) -> list[str]:
    """Connect or start Ray, deploy the service, wait until it is ready; the app names."""
    # Ray reports usage statistics to its makers unless told not to: nothing leaves the
    # machine that the user did not ask for (an explicit RAY_USAGE_STATS_ENABLED=1 still wins).
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if not ray.is_initialized():
        local: dict[str, Any] = {}
        if launch.address is None:
            # Serve kills an HTTP proxy that is not up within 5 s, and `serve.start` then fails:
            # on a busy host a proxy's start (a new Python process) takes longer. Our own
            # cluster inherits this; an explicit setting still wins.
            os.environ.setdefault(PROXY_READY_TIMEOUT_ENV, str(LOCAL_PROXY_READY_TIMEOUT_S))
            local = local_cluster_options()
        # "local" starts a cluster of our own even when `ray start` left one on this machine.
        ray.init(address=launch.address or "local", namespace="serve", **local)
    if launch.config is not None:
        names = _deploy_config(launch.config, launch)
    else:
        start_http({"host": launch.host, "port": launch.port})
        application = build_application(launch.args, launch.checker, launch.extractor)
        serve.run(application, name=launch.name, route_prefix=launch.route_prefix)
        names = [launch.name]
    _wait_until_running(names, launch.ready_timeout)
    return names


def stop(launch: Launch, names: list[str]) -> None:
    """Delete what `start` deployed; a local cluster goes away with it."""
    if launch.address is None:
        serve.shutdown()
        ray.shutdown()
        return
    for name in names:
        serve.delete(name)


def serve_until_stopped(launch: Launch, stopped: threading.Event | None = None) -> None:
    """Run the service until SIGINT / SIGTERM (or `stopped` is set), then clean up."""
    stopped = stopped or threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    names: list[str] = []
    try:
        names = start(launch)
        # After `ray.init`, which installs handlers of its own that end the process at once.
        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        print(_ready_message(launch, names), file=sys.stderr, flush=True)
        try:
            while not stopped.wait(1.0):
                pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        print("refcheck serve: stopping", file=sys.stderr, flush=True)
    finally:
        if ray.is_initialized():
            stop(launch, names)


def _ready_message(launch: Launch, names: list[str]) -> str:
    if launch.config is not None:
        where = f"http://{launch.host}:{launch.port} (applications of {launch.config})"
        return f"refcheck serve: ready at {where}. Ctrl-C stops it."
    base = f"http://{launch.host}:{launch.port}{launch.route_prefix.rstrip('/')}"
    return (
        f"refcheck serve: ready at {base} (checker {launch.args.checker}"
        + (f", extractor {launch.args.extractor}" if launch.args.extractor else "")
        + f"): POST {base}/v1/check, GET {base}/readyz. Ctrl-C stops it."
    )
