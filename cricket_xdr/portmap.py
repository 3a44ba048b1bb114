"""Port mapper client (RFC 1833, version 2) over the generated stubs of rpc_spec/portmap.x.

`rpcbind` accepts SET and UNSET only from local callers: on Linux that is its Unix socket
(`/run/rpcbind.sock`); over TCP loopback it refuses them unless started with `-i`.
`PortmapClient.local()` therefore prefers the Unix socket when it exists.
"""

from __future__ import annotations

import os

from cricket_xdr.portmap_rpc import (
    IPPROTO_TCP,
    IPPROTO_UDP,
    PMAP_PORT,
    PMAP_PROG,
    PMAP_VERS,
    PMAP_VERS_Client,
    mapping,
    pmaplist,
)
from cricket_xdr.rpc.client import Address, RpcClient

__all__ = [
    "IPPROTO_TCP",
    "IPPROTO_UDP",
    "PMAP_PORT",
    "PMAP_PROG",
    "PMAP_VERS",
    "RPCBIND_SOCKETS",
    "PortmapClient",
    "mapping",
]

RPCBIND_SOCKETS = ("/run/rpcbind.sock", "/var/run/rpcbind.sock")


class PortmapClient:
    """Talks to a port mapper at `address` (`(host, port)` or `"unix:/path"`)."""

    def __init__(
        self, address: Address = ("127.0.0.1", PMAP_PORT), *, timeout: float = 10.0
    ) -> None:
        self._rpc = RpcClient(address, timeout=timeout, connect_timeout=timeout)
        self._stub = PMAP_VERS_Client(self._rpc)

    @classmethod
    def local(cls, host: str = "127.0.0.1", *, timeout: float = 10.0) -> PortmapClient:
        """The port mapper of this host: its Unix socket if there is one, else TCP `host`:111."""
        for path in RPCBIND_SOCKETS:
            if os.path.exists(path):
                return cls(f"unix:{path}", timeout=timeout)
        return cls((host, PMAP_PORT), timeout=timeout)

    def null(self) -> None:
        self._stub.PMAPPROC_NULL()

    def set(self, prog: int, vers: int, port: int, prot: int = IPPROTO_TCP) -> bool:
        """Register (prog, vers, prot) at `port`; False when already registered or refused."""
        return bool(self._stub.PMAPPROC_SET(mapping(prog, vers, prot, port)))

    def unset(self, prog: int, vers: int, prot: int = IPPROTO_TCP) -> bool:
        """Remove the registrations of (prog, vers); False when there was none or refused."""
        return bool(self._stub.PMAPPROC_UNSET(mapping(prog, vers, prot, 0)))

    def getport(self, prog: int, vers: int, prot: int = IPPROTO_TCP) -> int:
        """The port (prog, vers, prot) is registered at, 0 when it is not."""
        return int(self._stub.PMAPPROC_GETPORT(mapping(prog, vers, prot, 0)))

    def dump(self) -> list[mapping]:
        """Every registration."""
        out: list[mapping] = []
        node: pmaplist | None = self._stub.PMAPPROC_DUMP()
        while node is not None:
            out.append(node.map)
            node = node.next
        return out

    def close(self) -> None:
        self._rpc.close()

    def __enter__(self) -> PortmapClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
