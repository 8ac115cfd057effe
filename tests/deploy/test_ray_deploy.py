"""deploy/ray/: the Serve config and the KubeRay RayService say the same thing, and it is valid.

The config is validated with Ray Serve's own schema and our builder's arguments; the CPU
variant of it really runs in tests/serve/test_serve_cli.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from required import import_or_skip

import_or_skip("ray", "the serve extra is not installed")
from ray._common.utils import import_attr  # noqa: E402
from ray.serve.schema import ServeDeploySchema  # noqa: E402

from refcheck_callbacks.serve.app import (  # noqa: E402
    CHECKER_DEPLOYMENT,
    EXTRACTOR_DEPLOYMENT,
    GATEWAY_DEPLOYMENT,
    ServiceArgs,
    build,
)
from refcheck_callbacks.serve.component import BatchSettings  # noqa: E402

RAY = Path(__file__).resolve().parents[2] / "deploy" / "ray"


def _load(name: str) -> Any:
    return yaml.safe_load((RAY / name).read_text(encoding="utf-8"))


def test_the_serve_config_names_our_builder_deployments_and_batching() -> None:
    config = ServeDeploySchema.model_validate(_load("serve-config.yaml"))
    [app] = config.applications
    assert import_attr(app.import_path) is build
    args = ServiceArgs.model_validate(app.args)
    assert args.checker.startswith("nli:") and args.token_sha256 is None  # token from a Secret
    deployments = {d.name: d for d in app.deployments}
    assert set(deployments) == {GATEWAY_DEPLOYMENT, CHECKER_DEPLOYMENT, EXTRACTOR_DEPLOYMENT}
    checker = deployments[CHECKER_DEPLOYMENT]
    assert checker.ray_actor_options.num_gpus == 1
    batching = BatchSettings.model_validate(checker.user_config)
    assert checker.max_ongoing_requests >= 2 * batching.max_batch_size
    assert checker.autoscaling_config["max_replicas"] > checker.autoscaling_config["min_replicas"]


def test_the_rayservice_serves_the_same_config_on_a_gpu_pool_with_the_token_secret() -> None:
    service = _load("rayservice.yaml")
    assert service["kind"] == "RayService"
    spec = service["spec"]
    assert yaml.safe_load(spec["serveConfigV2"]) == _load("serve-config.yaml")
    cluster = spec["rayClusterConfig"]
    [gpu] = cluster["workerGroupSpecs"]
    [worker] = gpu["template"]["spec"]["containers"]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "1"
    [head] = cluster["headGroupSpec"]["template"]["spec"]["containers"]
    for container in (head, worker):
        [env] = [e for e in container["env"] if e["name"] == "REFCHECK_SERVE_TOKEN"]
        assert env["valueFrom"]["secretKeyRef"]["name"] == "refcheck-serve"


def test_the_builder_makes_an_application_from_config_args() -> None:
    application = build({"checker": "embedded", "extractor": "sentence"})
    assert type(application).__name__ == "Application"
    with pytest.raises(ValueError, match="checker_spec"):
        build({"checker_spec": "embedded"})
