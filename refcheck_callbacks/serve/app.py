"""The Ray Serve application behind `refcheck serve`: a gateway and one deployment per component.

    Gateway (HTTP: /v1/check, /v1/extract, /v1/stats, /healthz, /readyz)
      -> Checker   (Component, role checker: `@serve.batch` over every caller)
      -> Extractor (Component, role extractor; only with an extractor spec)

`build` is the import path a Serve config names (`refcheck_callbacks.serve.app:build`, with
`ServiceArgs` as its `args`); its deployments are named `Gateway`, `Checker` and `Extractor`,
so the config's `deployments:` entries set their replicas, `ray_actor_options` (`num_gpus`,
`num_cpus`), `autoscaling_config` and `user_config` (`BatchSettings`). The `refcheck serve`
flags build the same application with `Scaling` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from ray.serve import Application

from refcheck_callbacks.remote.answering import Role
from refcheck_callbacks.remote.wire import DEFAULT_MAX_CALL_INPUTS, DEFAULT_MAX_REQUEST_BYTES
from refcheck_callbacks.serve.component import BatchSettings, Component
from refcheck_callbacks.serve.gateway import Gateway, GatewayOptions

CHECKER_DEPLOYMENT = "Checker"
EXTRACTOR_DEPLOYMENT = "Extractor"
GATEWAY_DEPLOYMENT = "Gateway"


class ServiceArgs(BaseModel):
    """What the service runs: the `args` of a Serve config's application."""

    model_config = ConfigDict(extra="forbid")

    checker: str = "embedded"
    """A checker spec: `embedded`, `nli:MODEL`, `llm:MODEL`, `py:module:Factory`."""
    checker_api_base: str | None = None
    extractor: str | None = None
    """An extractor spec (`sentence`, `llm:MODEL`, `py:...`); None serves no /v1/extract."""
    extractor_api_base: str | None = None
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, ge=1024)
    max_call_inputs: int = Field(default=DEFAULT_MAX_CALL_INPUTS, ge=1)
    """Claims (answers, to extract) per call at most; a larger call gets a 413."""
    token_sha256: str | None = None
    """SHA-256 hex of the bearer token. Leave it out to have the gateway read
    `REFCHECK_SERVE_TOKEN` from its environment (a Kubernetes Secret), or to run open."""


@dataclass(frozen=True)
class Scaling:
    """Replicas, resources and batching of one component deployment."""

    replicas: int = 1
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    autoscale: tuple[int, int] | None = None
    """(min, max) replicas: Serve adds replicas while each holds more than
    `target_ongoing_requests` calls, and removes idle ones; `replicas` is then ignored."""
    target_ongoing_requests: float = 4.0
    batch: BatchSettings = field(default_factory=BatchSettings)
    max_queued_requests: int = 256
    """Calls waiting for a replica at most; beyond it the gateway answers 503 + Retry-After."""

    def options(self) -> dict[str, Any]:
        """The deployment options these settings amount to."""
        options: dict[str, Any] = {
            "ray_actor_options": {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus},
            "user_config": self.batch.model_dump(),
            # One batch running and the next one filling, per replica.
            "max_ongoing_requests": max(2 * self.batch.max_batch_size, 4),
            "max_queued_requests": self.max_queued_requests,
        }
        if self.autoscale is None:
            options["num_replicas"] = self.replicas
        else:
            low, high = self.autoscale
            options["autoscaling_config"] = {
                "min_replicas": low,
                "max_replicas": high,
                "target_ongoing_requests": self.target_ongoing_requests,
            }
        return options


def build(args: dict[str, Any]) -> Application:
    """The application for a Serve config's `args` (see `ServiceArgs`)."""
    return build_application(ServiceArgs.model_validate(args or {}))


def build_application(
    args: ServiceArgs, checker: Scaling | None = None, extractor: Scaling | None = None
) -> Application:
    """The gateway bound to its components; default `Scaling` where none is given."""
    checker_app = Component.options(
        name=CHECKER_DEPLOYMENT, **(checker or Scaling()).options()
    ).bind(Role.CHECKER.value, args.checker, args.checker_api_base)
    extractor_app = None
    if args.extractor is not None:
        extractor_app = Component.options(
            name=EXTRACTOR_DEPLOYMENT, **(extractor or Scaling()).options()
        ).bind(Role.EXTRACTOR.value, args.extractor, args.extractor_api_base)
    options = GatewayOptions(
        max_request_bytes=args.max_request_bytes,
        max_call_inputs=args.max_call_inputs,
        token_sha256=args.token_sha256,
    )
    # The gateway only parses JSON and awaits its components: it reserves no CPU.
    return Gateway.options(name=GATEWAY_DEPLOYMENT, ray_actor_options={"num_cpus": 0}).bind(
        checker_app, extractor_app, options
    )
