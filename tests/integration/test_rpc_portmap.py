"""The port mapper client and RpcServer.register(), against a port mapper served in-process."""

from __future__ import annotations

import pytest
from server_harness import serving

from cricket_xdr.portmap import IPPROTO_TCP, IPPROTO_UDP, PortmapClient, mapping
from cricket_xdr.portmap_rpc import PMAP_VERS_Server, pmaplist
from cricket_xdr.rpc import RpcServer
from cricket_xdr.stubs import Procedure
from cricket_xdr.xdr import xdr_void


class FakePortmapper(PMAP_VERS_Server):
    """Keeps registrations in a dict, as rpcbind does for version 2."""

    def __init__(self) -> None:
        self.table: dict[tuple[int, int, int], int] = {}

    def PMAPPROC_SET(self, ctx, m):
        key = (m.prog, m.vers, m.prot)
        if key in self.table:
            return False
        self.table[key] = m.port
        return True

    def PMAPPROC_UNSET(self, ctx, m):
        keys = [k for k in self.table if k[:2] == (m.prog, m.vers)]
        for k in keys:
            del self.table[k]
        return bool(keys)

    def PMAPPROC_GETPORT(self, ctx, m):
        return self.table.get((m.prog, m.vers, m.prot), 0)

    def PMAPPROC_DUMP(self, ctx):
        head = None
        for (prog, vers, prot), port in sorted(self.table.items(), reverse=True):
            head = pmaplist(mapping(prog, vers, prot, port), head)
        return head


class Served:
    def __init__(self, prog: int, vers: int) -> None:
        self.PROGRAM, self.VERSION = prog, vers
        self.PROCEDURES = {1: Procedure(1, "NOTHING", (), xdr_void)}


@pytest.fixture
def portmapper():
    fake = FakePortmapper()
    with serving(RpcServer([fake])) as address:
        fake.address = address
        yield fake


def test_set_getport_dump_unset(portmapper):
    with PortmapClient(portmapper.address) as pm:
        pm.null()
        assert pm.set(0x20000099, 1, 4242) is True
        assert pm.set(0x20000099, 1, 4243) is False  # taken
        assert pm.set(0x20000099, 1, 5000, IPPROTO_UDP) is True
        assert pm.getport(0x20000099, 1) == 4242
        assert pm.getport(0x20000099, 1, IPPROTO_UDP) == 5000
        assert pm.dump() == [
            mapping(0x20000099, 1, IPPROTO_TCP, 4242),
            mapping(0x20000099, 1, IPPROTO_UDP, 5000),
        ]
        assert pm.unset(0x20000099, 1) is True
        assert pm.getport(0x20000099, 1) == 0
        assert pm.dump() == []


def test_server_registers_every_version_and_unregisters_on_shutdown(portmapper):
    srv = RpcServer([Served(0x20000099, 1), Served(0x20000099, 2), Served(0x2000009A, 1)])
    _, port = srv.listen_tcp("127.0.0.1", 0)
    srv.start()
    portmapper.table[(0x20000099, 1, IPPROTO_TCP)] = 1  # a stale registration is replaced
    try:
        srv.register(portmap=portmapper.address)
        assert portmapper.table == {
            (0x20000099, 1, IPPROTO_TCP): port,
            (0x20000099, 2, IPPROTO_TCP): port,
            (0x2000009A, 1, IPPROTO_TCP): port,
        }
    finally:
        srv.shutdown()
    assert portmapper.table == {}


def test_register_needs_a_tcp_listener(portmapper):
    srv = RpcServer([Served(0x20000099, 1)])
    with pytest.raises(RuntimeError, match="listen_tcp"):
        srv.register(portmap=portmapper.address)
    srv.shutdown()
