"""The rpcgen (-N -M) C client on libtirpc against our RpcServer and generated V_Server.

The C client sends each case's value and checks the echo (c/client.c); our server records
what it decoded, which must equal the Python value of the same case.
"""

from __future__ import annotations

import subprocess

import pytest
from alltypes_cases import CASE_NAMES, Case, differences
from alltypes_echo import ECHO_PROCEDURE, PyServer
from cbuild import CPeers

from cricket_xdr.rpc.message import AUTH_SYS

pytestmark = pytest.mark.interop

CLIENT_TIMEOUT_S = 120


@pytest.fixture(params=["tcp", "unix"])
def where(request: pytest.FixtureRequest, py_server: PyServer) -> str:
    """Our server's address as c/client.c takes it: a port on 127.0.0.1 or unix:PATH."""
    return str(py_server.port) if request.param == "tcp" else f"unix:{py_server.unix_path}"


def run_c_client(c_peers: CPeers, where: str, case: str) -> None:
    proc = subprocess.run(
        [str(c_peers.client), where, case],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
    )
    assert (proc.returncode, proc.stdout) == (0, f"{case} ok\n"), proc.stdout + proc.stderr


@pytest.mark.parametrize("name", CASE_NAMES)
def test_c_client_gets_every_value_back(
    name: str, c_peers: CPeers, where: str, py_server: PyServer, cases: dict[str, Case]
) -> None:
    case = cases[name]
    run_c_client(c_peers, where, name)
    assert differences(py_server.last(ECHO_PROCEDURE[case.type]), case.value) == []


def test_c_client_runs_every_case_on_one_connection(
    c_peers: CPeers, where: str, py_server: PyServer
) -> None:
    proc = subprocess.run(
        [str(c_peers.client), where], capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S
    )
    expected = [f"{name} ok" for name in ["ping", "ping2", "sink", *CASE_NAMES]]
    assert (proc.returncode, proc.stdout.splitlines()) == (0, expected), proc.stderr


@pytest.mark.parametrize("procedure", ["PING", "PING2"])
def test_c_client_calls_void_procedures(
    procedure: str, c_peers: CPeers, where: str, py_server: PyServer
) -> None:
    py_server.v1.received.clear()
    py_server.v2.received.clear()
    run_c_client(c_peers, where, procedure.lower())
    assert py_server.last(procedure) is None


def test_c_client_sinks_a_value(
    c_peers: CPeers, where: str, py_server: PyServer, cases: dict[str, Case]
) -> None:
    run_c_client(c_peers, where, "sink")
    assert differences(py_server.last("SINK"), cases["scalars_max"].value) == []


def test_c_client_auth_sys_credentials_reach_the_handler(
    c_peers: CPeers, where: str, py_server: PyServer, cases: dict[str, Case]
) -> None:
    """libtirpc's authunix_create() credentials, as c/client.c -s sends them."""
    proc = subprocess.run(
        [str(c_peers.client), "-s", where, "ping", "scalars_max"],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
    )
    assert (proc.returncode, proc.stdout) == (0, "ping ok\nscalars_max ok\n"), proc.stderr
    cred = dict(py_server.v1.credentials)["PING"]
    assert cred.flavor == AUTH_SYS
    params = cred.principal
    assert (params.machinename, params.uid, params.gid, params.gids) == (
        "interop-host",
        4242,
        777,
        (1, 2, 3),
    )
