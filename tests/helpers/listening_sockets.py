"""The TCP sockets a process tree listens on, read from Linux's `/proc` (what `ss -ltnp` shows).

`process_tree(pid)` is the process and every descendant (a `refcheck serve` process and the
Ray cluster it started: GCS, raylet, agents, workers); `listening(pids)` maps each listening
socket's inode, from `/proc/net/tcp` and `tcp6`, to the process holding it.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    pid: int
    process: str
    host: str
    port: int

    @property
    def loopback_only(self) -> bool:
        address = ipaddress.ip_address(self.host)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback


def _parents() -> dict[int, int]:
    """Each running process's parent."""
    parents = {}
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            # The command name (field 2) is in parentheses and may hold spaces.
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    return parents


def process_tree(root: int) -> dict[int, str]:
    """`root` and its descendants, each with its command line (cut to 120 characters)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    tree, pending = {}, [root]
    while pending:
        pid = pending.pop()
        try:
            command = (_PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        tree[pid] = command.decode(errors="replace").strip()[:120]
        pending += children.get(pid, [])
    return tree


def _address(hex_address: str) -> tuple[str, int]:
    host_hex, port_hex = hex_address.split(":")
    raw = bytes.fromhex(host_hex)
    # The kernel writes each 32-bit word of the address in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, words), int(port_hex, 16)


def _listening_inodes() -> dict[str, tuple[str, int]]:
    inodes = {}
    for table in ("tcp", "tcp6"):
        lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        for fields in (line.split() for line in lines):
            if fields[3] == _LISTEN:
                inodes[fields[9]] = _address(fields[1])
    return inodes


def listening(tree: dict[int, str]) -> list[Listener]:
    """Every listening TCP socket held by a process of `tree`."""
    inodes = _listening_inodes()
    found = []
    for pid, command in tree.items():
        try:
            links = [fd.readlink().name for fd in (_PROC / str(pid) / "fd").iterdir()]
        except OSError:
            continue
        for link in links:
            inode = link.removeprefix("socket:[").removesuffix("]")
            if link.startswith("socket:[") and inode in inodes:
                host, port = inodes[inode]
                found.append(Listener(pid, command, host, port))
    return sorted(set(found), key=lambda listener: (listener.pid, listener.port))
