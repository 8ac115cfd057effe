"""`refcheck serve`'s own Ray cluster listens on 127.0.0.1 only, every port of it.

Ray binds its servers (GCS, raylet and object manager, each worker's gRPC server, the dashboard
and runtime-env agents, the Prometheus exporters of the agent, the dashboard process and the
autoscaler) to all interfaces unless the node's address is a loopback one. `ray.init` turns a
loopback `_node_ip_address` into the machine's routable address, unless multi-node clusters
are off (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, Ray's own default on macOS and Windows): the
service's own cluster has one node, so it turns them off and gives the node 127.0.0.1.

One server ignores the node's address: each Serve replica's inter-deployment gRPC server binds
`[::]`. A replica on a loopback node binds it to the node's address instead. A cluster the
service joins (`--address`) keeps its own settings.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, Final

LOOPBACK: Final = "127.0.0.1"
MULTI_NODE_ENV: Final = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_ALL_INTERFACES = ("[::]", "0.0.0.0", "")


def local_cluster_options() -> dict[str, Any]:
    """`ray.init` options for the service's own one-node cluster on loopback, with the
    dashboard off. Turns multi-node clusters off here and in the cluster's processes."""
    from ray._private import ray_constants

    os.environ[MULTI_NODE_ENV] = "0"
    # Ray read the variable when it was imported, before this process knew it would start
    # a cluster of its own.
    ray_constants.ENABLE_RAY_CLUSTER = False
    return {"_node_ip_address": LOOPBACK, "include_dashboard": False}


class _BindOnNode:
    """Serve's `add_port_to_grpc_server`, with an all-interfaces address made the node's."""

    def __init__(self, bind: Any, node: str) -> None:
        self.bind = bind
        self.node = node

    def __call__(self, server: Any, address: str) -> Any:
        host, _, port = address.rpartition(":")
        return self.bind(server, f"{self.node}:{port}" if host in _ALL_INTERFACES else address)


def replica_server_on_node_address() -> None:
    """In a replica, before Serve starts its inter-deployment gRPC server: on a loopback node,
    bind that server to the node's address rather than `[::]`. Elsewhere, leave it be."""
    import ray
    from ray.serve._private import replica

    node = ray.util.get_node_ip_address()
    bind = getattr(replica, "add_port_to_grpc_server", None)
    if bind is not None and not isinstance(bind, _BindOnNode) and _is_loopback(node):
        replica.add_port_to_grpc_server = _BindOnNode(bind, node)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
