"""`refcheck serve` as a user runs it: its own local Ray cluster, stopped mid-run, restarted.

Two app processes keep checking through it. While the service stops, and after it is gone,
their answers end as counted errors within the RemoteChecker deadline, with no exception in the
apps; once the service is back (restarted from the shipped Serve config, on CPU) the next
answers are checked again, with the labels they had before. Its own cluster listens on
loopback only, every process of it, and a service without a token says so once.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from app_processes import RAG_ANSWERS, RemoteApp
from free_ports import PortTaken, start_on_a_port, unassigned_ports
from listening_sockets import listening, process_tree
from required import import_or_skip

import_or_skip("ray", "the serve extra is not installed")
from refcheck_callbacks.serve.launch import PORT_TAKEN  # noqa: E402

pytestmark = pytest.mark.slow

TOKEN = "cli-test-token"
DEADLINE = 3.0
REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / "tests" / "helpers"


class Service:
    """A `refcheck serve` process, its output in a file."""

    def __init__(self, log: Path, *options: str, token: str | None = TOKEN) -> None:
        self.log = log
        env = {**os.environ, "REFCHECK_SERVE_TOKEN": token or ""}
        env.pop("RAY_ADDRESS", None)
        # The replicas import the test helpers' checkers by module path.
        env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), env.get("PYTHONPATH", "")])
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "refcheck_callbacks.cli", "serve", *options],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO,
            )

    def wait_ready(self, timeout: float = 180.0) -> Service:
        """The service, once it says it is ready; `PortTaken` when it said that another
        process holds its port (and ended)."""
        deadline = time.monotonic() + timeout
        while "refcheck serve: ready at" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None and PORT_TAKEN in self.log.read_text():
                raise PortTaken(self.log.read_text()[-500:])
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                pytest.fail(f"refcheck serve did not start:\n{self.log.read_text()[-4000:]}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 90.0) -> int:
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _cpu_config(tmp_path: Path, port: int) -> Path:
    """deploy/ray/serve-config.yaml with the embedded checker on CPU, on 127.0.0.1:port."""
    config = yaml.safe_load((REPO / "deploy/ray/serve-config.yaml").read_text())
    config["http_options"] = {"host": "127.0.0.1", "port": port}
    [app] = config["applications"]
    app["args"]["checker"] = "embedded"
    for deployment in app["deployments"]:
        deployment["ray_actor_options"] = {"num_cpus": 0, "num_gpus": 0}
        deployment.pop("autoscaling_config", None)
        deployment["num_replicas"] = 1
    path = tmp_path / "serve-config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _started(services: list[Service], log: Path, *options: str, **kwargs: Any) -> Service:
    """A `refcheck serve` with `options` (its `--port` among them), once it is ready."""
    service = Service(log, *options, **kwargs)
    services.append(service)
    return service.wait_ready()


@pytest.fixture
def services() -> Iterator[list[Service]]:
    started: list[Service] = []
    yield started
    for service in started:
        service.kill()


def _labels(reply: dict[str, Any]) -> list[list[str | None]]:
    return [r["labels"] for r in reply["results"]]


def test_apps_survive_the_service_stopping_mid_run_and_check_again_after_a_restart(
    tmp_path: Path, services: list[Service]
) -> None:
    first, port = start_on_a_port(
        lambda port: _started(
            services, tmp_path / f"first-{port}.log", "--port", str(port), "--num-cpus", "0"
        )
    )
    url = f"http://127.0.0.1:{port}"
    # The restart takes the same port (the apps know its URL): below the ephemeral range,
    # nothing bound to port 0 or connecting out is given it meanwhile.
    cpu_config = _cpu_config(tmp_path, port)
    apps = [RemoteApp(url, "--deadline", str(DEADLINE), token=TOKEN) for _ in range(2)]
    try:
        before = [app.check(RAG_ANSWERS) for app in apps]
        for reply in before:
            outcomes = [r["outcome"] for r in reply["results"]]
            assert outcomes == ["checked"] * len(RAG_ANSWERS), reply["results"]

        # Stop it while the apps are checking.
        for app in apps:
            app.send(RAG_ANSWERS)
        first.stop()
        during = [app.receive() for app in apps]
        assert first.wait() == 0
        assert "refcheck serve: stopping" in first.log.read_text()
        after = [app.check(RAG_ANSWERS) for app in apps]
        for reply in during + after:
            for result in reply["results"]:
                assert result["outcome"] in ("checked", "error")
                assert result["check_s"] < DEADLINE + 0.5
        for reply in after:
            assert [r["outcome"] for r in reply["results"]] == ["error"] * len(RAG_ANSWERS)
            assert all("remote check failed" in r["message"] for r in reply["results"])
            assert sum(reply["failures"].values()) >= 1

        second = Service(tmp_path / "second.log", "--config", str(cpu_config))
        services.append(second)
        second.wait_ready()
        again = [app.check(RAG_ANSWERS) for app in apps]
        assert [_labels(r) for r in again] == [_labels(r) for r in before]
        assert [app.quit() for app in apps] == [0, 0]
    finally:
        for app in apps:
            app.kill()
    stats = httpx.get(f"{url}/v1/stats", headers={"authorization": f"Bearer {TOKEN}"}).json()
    assert stats["checker"]["name"] == "embedded" and stats["extractor"]["name"] == "sentence"
    second.stop()
    assert second.wait() == 0


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc")
def test_its_own_cluster_listens_on_loopback_only_and_an_open_service_warns_once(
    tmp_path: Path, services: list[Service]
) -> None:
    checker = ["--checker", "py:scripted_checkers:KeywordChecker"]
    service, port = start_on_a_port(
        lambda port: _started(
            services,
            tmp_path / f"open-{port}.log",
            *["--port", str(port), "--num-cpus", "0", *checker],
            token=None,
        )
    )
    body = {
        "requests": [{"request_id": "r", "references": [{"text": "Paris is in France."}]}],
        "claims": [{"claim": {"text": "Paris is in France."}, "request": 0, "claim_index": 0}],
    }
    answered = httpx.post(f"http://127.0.0.1:{port}/v1/check", json=body, timeout=60)
    assert answered.status_code == 200, answered.text  # open: no token asked for
    listeners = listening(process_tree(service.process.pid))
    processes = " ".join(listener.process for listener in listeners)
    # The whole cluster was found: the service's port, GCS, raylet, agents and replicas.
    assert port in {listener.port for listener in listeners}
    for name in ("gcs_server", "raylet", "DashboardAgent", "Gateway", "Checker"):
        assert name in processes, f"no listening socket of {name} in {listeners}"
    exposed = [listener for listener in listeners if not listener.loopback_only]
    assert exposed == [], "\n".join(f"{x.host}:{x.port} {x.process}" for x in exposed)
    service.stop()
    assert service.wait() == 0
    warnings = [
        line for line in service.log.read_text().splitlines() if "refcheck serve: warning" in line
    ]
    assert len(warnings) == 1, warnings
    assert "no token, so any local user" in warnings[0] and "--token" in warnings[0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--config", "deploy/ray/serve-config.yaml", "--replicas", "2"], "drop --replicas"),
        (["--config", "missing.yaml"], "config file not found"),
        (["--autoscale", "4:1"], "--autoscale takes MIN:MAX"),
        (["--replicas", "0"], "--replicas must be at least 1"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(options: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "refcheck_callbacks.cli", "serve", *options],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_a_port_another_process_holds_fails_the_start_saying_so_and_another_port_serves(
    tmp_path: Path, services: list[Service]
) -> None:
    """Issue 47: a Ray Serve proxy could not bind the port its test had picked. `refcheck
    serve` says which address was held and what to do, and exits; started on another port,
    it serves."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        held = holder.getsockname()[1]
        ports = iter([held, *itertools.islice(unassigned_ports(), 3)])
        checker = ["--checker", "py:scripted_checkers:KeywordChecker"]
        service, port = start_on_a_port(
            lambda port: _started(
                services,
                tmp_path / f"serve-{port}.log",
                *["--port", str(port), "--num-cpus", "0", *checker],
            ),
            ports,
        )
    refused = services[0]
    assert port != held and refused.process.poll() not in (None, 0)
    # Its last word (above it, Ray logs the proxy actor's own failure):
    said = refused.log.read_text().strip().splitlines()[-1]
    assert f"the HTTP proxy could not bind 127.0.0.1:{held}" in said and "--port" in said
    reply = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30)
    assert reply.status_code == 200, reply.text
    service.stop()
    assert service.wait() == 0
