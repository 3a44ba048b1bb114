"""Where data to the server should leave this host: interfaces (pyroute2) and RDMA devices.

`data_link(links, route_index, server_ip)` prefers an InfiniBand interface (ARPHRD_INFINIBAND,
IPoIB) that is up and on the server's subnet, else the interface the kernel routes through.
`local_links()` and `route_index()` read the real tables; tests pass fake `Link` lists.
`rdma_usable(local, remote)`: RDMA needs a verbs device on both ends (`rdma_devices()` lists
this host's, through pyverbs when present, else /sys/class/infiniband).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ARPHRD_INFINIBAND",
    "Link",
    "data_link",
    "local_links",
    "route_index",
    "source_address",
    "rdma_devices",
    "rdma_usable",
]

ARPHRD_INFINIBAND = 32
_IFF_UP = 0x1


@dataclass(frozen=True)
class Link:
    index: int
    name: str
    kind: int  # ARPHRD_* link type
    up: bool
    networks: tuple[str, ...] = field(default=())  # "address/prefix" of each IP address

    @property
    def infiniband(self) -> bool:
        return self.kind == ARPHRD_INFINIBAND

    def address_towards(self, server_ip: str) -> str | None:
        """This link's address on the server's subnet (first address if none is)."""
        ip = ipaddress.ip_address(server_ip)
        ifaces = [ipaddress.ip_interface(n) for n in self.networks]
        for iface in ifaces:
            if iface.version == ip.version and ip in iface.network:
                return str(iface.ip)
        same = [i for i in ifaces if i.version == ip.version]
        return str(same[0].ip) if same else None


def data_link(links: Sequence[Link], route_index: int | None, server_ip: str) -> Link | None:
    """The link copies should use: an up InfiniBand link on the server's subnet first."""
    ip = ipaddress.ip_address(server_ip)
    for link in links:
        if link.infiniband and link.up:
            for net in link.networks:
                iface = ipaddress.ip_interface(net)
                if iface.version == ip.version and ip in iface.network:
                    return link
    return next((link for link in links if link.index == route_index), None)


def local_links() -> list[Link]:
    """This host's interfaces with their addresses (pyroute2)."""
    from pyroute2 import IPRoute  # type: ignore[import-untyped]

    with IPRoute() as ipr:
        nets: dict[int, list[str]] = {}
        for msg in ipr.get_addr():
            nets.setdefault(msg["index"], []).append(
                f"{msg.get_attr('IFA_ADDRESS')}/{msg['prefixlen']}"
            )
        return [
            Link(
                index=msg["index"],
                name=msg.get_attr("IFLA_IFNAME"),
                kind=msg["ifi_type"],
                up=bool(msg["flags"] & _IFF_UP),
                networks=tuple(nets.get(msg["index"], ())),
            )
            for msg in ipr.get_links()
        ]


def route_index(server_ip: str) -> int | None:
    """The interface index the kernel routes `server_ip` through (pyroute2)."""
    from pyroute2 import IPRoute  # type: ignore[import-untyped]

    with IPRoute() as ipr:
        routes = ipr.route("get", dst=server_ip)
        return routes[0].get_attr("RTA_OIF") if routes else None


def source_address(server_ip: str) -> str | None:
    """The local address data channels to `server_ip` should bind to (None: let the kernel
    choose); any failure to read the tables means None."""
    try:
        link = data_link(local_links(), route_index(server_ip), server_ip)
    except Exception:  # no netlink here (containers, other OSes): the kernel's choice
        return None
    if link is None or not link.infiniband:
        return None  # the routed interface is what the kernel picks anyway
    return link.address_towards(server_ip)


def rdma_devices() -> list[str]:
    """Names of this host's RDMA (verbs) devices."""
    try:
        import pyverbs.device as verbs  # type: ignore[import-not-found]

        return [d.name.decode() for d in verbs.get_device_list()]
    except ImportError:
        root = Path("/sys/class/infiniband")
        return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def rdma_usable(local: Sequence[str], remote: Sequence[str]) -> bool:
    """RDMA needs a verbs device on both ends."""
    return bool(local) and bool(remote)
