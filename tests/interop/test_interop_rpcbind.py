"""Our server and port mapper client against Debian's rpcbind and libtirpc's rpcinfo."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from types import ModuleType

import pytest
from alltypes_echo import PyServer

from cricket_xdr.portmap import IPPROTO_TCP, PMAP_PORT, PortmapClient
from cricket_xdr.rpc.server import RpcServer

pytestmark = pytest.mark.interop

RPCINFO_TIMEOUT_S = 60


def rpcinfo_run(rpcinfo: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [rpcinfo, *args], capture_output=True, text=True, timeout=RPCINFO_TIMEOUT_S
    )


def rpcinfo_p(rpcinfo: str) -> set[tuple[int, int, str, int]]:
    """(program, version, protocol, port) rows of `rpcinfo -p 127.0.0.1`."""
    proc = rpcinfo_run(rpcinfo, "-p", "127.0.0.1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = set()
    for line in proc.stdout.splitlines()[1:]:  # after the "program vers proto port" header
        prog, vers, proto, port = line.split()[:4]
        rows.add((int(prog), int(vers), proto, int(port)))
    return rows


def universal_address(port: int) -> str:
    """The TCP universal address of 127.0.0.1:port (RFC 5665), for `rpcinfo -a`."""
    return f"127.0.0.1.{port >> 8}.{port & 0xFF}"


def ready(prog: int, vers: int) -> str:
    return f"program {prog} version {vers} ready and waiting"


@pytest.fixture
def registered(
    alltypes: ModuleType, py_server: PyServer, rpcbind: None
) -> Iterator[tuple[RpcServer, int]]:
    """A second server of our echo services and its port, registered by RpcServer.register."""
    server = RpcServer([py_server.v1, py_server.v2])
    _, port = server.listen_tcp("127.0.0.1", 0)
    server.start()
    try:
        server.register()
        yield server, port
    finally:
        server.unregister()
        server.shutdown()


def test_register_then_unregister(
    alltypes: ModuleType, registered: tuple[RpcServer, int], rpcinfo: str
) -> None:
    server, port = registered
    prog = alltypes.ALLTYPES_PROG
    ours = {(prog, 1, "tcp", port), (prog, 2, "tcp", port)}
    assert ours <= rpcinfo_p(rpcinfo)
    with PortmapClient(("127.0.0.1", PMAP_PORT)) as pm:
        assert pm.getport(prog, 1) == port
        assert pm.getport(prog, 2) == port
        dumped = {(m.prog, m.vers, m.prot, m.port) for m in pm.dump()}
        assert {(prog, 1, IPPROTO_TCP, port), (prog, 2, IPPROTO_TCP, port)} <= dumped

    server.unregister()

    assert not ours & rpcinfo_p(rpcinfo)
    with PortmapClient(("127.0.0.1", PMAP_PORT)) as pm:
        assert pm.getport(prog, 1) == 0
        assert all(m.prog != prog for m in pm.dump())


def test_rpcinfo_null_calls_a_registered_server(
    alltypes: ModuleType, registered: tuple[RpcServer, int], rpcinfo: str
) -> None:
    prog, port = alltypes.ALLTYPES_PROG, registered[1]
    for vers in (1, 2):
        proc = rpcinfo_run(rpcinfo, "-t", "127.0.0.1", str(prog), str(vers))
        assert (proc.returncode, proc.stdout.strip()) == (0, ready(prog, vers)), proc.stderr
    proc = rpcinfo_run(rpcinfo, "-n", str(port), "-t", "127.0.0.1", str(prog), "1")
    assert (proc.returncode, proc.stdout.strip()) == (0, ready(prog, 1)), proc.stderr


def test_portmap_client_set_getport_dump_unset(
    alltypes: ModuleType, py_server: PyServer, rpcbind: None, rpcinfo: str
) -> None:
    prog, port = alltypes.ALLTYPES_PROG, py_server.port
    with PortmapClient.local() as local, PortmapClient(("127.0.0.1", PMAP_PORT)) as tcp:
        local.unset(prog, 1)
        assert local.set(prog, 1, port)
        try:
            assert (prog, 1, "tcp", port) in rpcinfo_p(rpcinfo)
            assert tcp.getport(prog, 1) == port
            assert (prog, 1, IPPROTO_TCP, port) in {
                (m.prog, m.vers, m.prot, m.port) for m in tcp.dump()
            }
            proc = rpcinfo_run(rpcinfo, "-t", "127.0.0.1", str(prog), "1")
            assert (proc.returncode, proc.stdout.strip()) == (0, ready(prog, 1)), proc.stderr
        finally:
            assert local.unset(prog, 1)
        assert (prog, 1, "tcp", port) not in rpcinfo_p(rpcinfo)
        assert tcp.getport(prog, 1) == 0
        assert all(m.prog != prog for m in tcp.dump())


@pytest.mark.parametrize("vers", [1, 2])
def test_rpcinfo_null_call_at_an_address(
    vers: int, alltypes: ModuleType, py_server: PyServer, rpcinfo: str
) -> None:
    prog = alltypes.ALLTYPES_PROG
    proc = rpcinfo_run(
        rpcinfo, "-a", universal_address(py_server.port), "-T", "tcp", str(prog), str(vers)
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, ready(prog, vers)), proc.stderr


def test_rpcinfo_finds_the_served_versions(
    alltypes: ModuleType, py_server: PyServer, rpcinfo: str
) -> None:
    """Without a version rpcinfo asks for version 0: our PROG_MISMATCH reply says 1..2."""
    prog = alltypes.ALLTYPES_PROG
    proc = rpcinfo_run(rpcinfo, "-a", universal_address(py_server.port), "-T", "tcp", str(prog))
    assert proc.stdout.splitlines() == [ready(prog, 1), ready(prog, 2)], proc.stderr


def test_rpcinfo_reports_an_unserved_version(
    alltypes: ModuleType, py_server: PyServer, rpcinfo: str
) -> None:
    prog = alltypes.ALLTYPES_PROG
    proc = rpcinfo_run(
        rpcinfo, "-a", universal_address(py_server.port), "-T", "tcp", str(prog), "3"
    )
    assert proc.returncode == 1
    assert f"program {prog} version 3 is not available" in proc.stdout + proc.stderr
