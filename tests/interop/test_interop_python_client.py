"""Our generated client and RpcClient against the rpcgen (-N -M) C server on libtirpc.

Every test runs twice: over TCP on 127.0.0.1 and over a Unix socket (svcunix_create).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from alltypes_cases import CASE_NAMES, Case, differences
from alltypes_echo import call_echo

from cricket_xdr.rpc import errors
from cricket_xdr.rpc.auth import AuthSys, AuthSysParams
from cricket_xdr.rpc.client import Address, RpcClient
from cricket_xdr.rpc.message import AUTH_TOOWEAK

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def rpc(c_server: Address) -> Iterator[RpcClient]:
    client = RpcClient(c_server, timeout=60)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def clients(alltypes: ModuleType, rpc: RpcClient) -> tuple[Any, Any]:
    return alltypes.ALLTYPES_V1_Client(rpc), alltypes.ALLTYPES_V2_Client(rpc)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_c_server_echoes_every_value(
    name: str, cases: dict[str, Case], clients: tuple[Any, Any]
) -> None:
    case = cases[name]
    assert differences(call_echo(*clients, case), case.value) == []


def test_every_case_pipelined_on_one_connection(
    cases: dict[str, Case], clients: tuple[Any, Any]
) -> None:
    pending = [call_echo(*clients, cases[name], suffix="_async") for name in CASE_NAMES]
    for name, call in zip(CASE_NAMES, pending, strict=True):
        assert differences(call.result(timeout=60), cases[name].value) == [], name


def test_void_procedures_of_both_versions(cases: dict[str, Case], clients: tuple[Any, Any]) -> None:
    v1, v2 = clients
    assert v1.PING() is None
    assert v1.SINK(cases["scalars_max"].value) is None
    assert v2.PING2() is None


def test_null_procedure(alltypes: ModuleType, rpc: RpcClient) -> None:
    for version in (alltypes.ALLTYPES_V1, alltypes.ALLTYPES_V2):
        assert bytes(rpc.call(alltypes.ALLTYPES_PROG, version, 0, b"")) == b""


def test_pipelined_calls_come_back_in_order(
    cases: dict[str, Case], clients: tuple[Any, Any]
) -> None:
    v1, _ = clients
    texts = [f"call {i}" for i in range(50)]
    pending = [v1.ECHO_TEXT_async(text) for text in texts]
    assert [p.result(timeout=60) for p in pending] == texts


def test_unknown_version_is_prog_mismatch_with_the_served_range(
    alltypes: ModuleType, rpc: RpcClient
) -> None:
    with pytest.raises(errors.ProgMismatch) as caught:
        rpc.call(alltypes.ALLTYPES_PROG, 3, 0, b"")
    assert (caught.value.low, caught.value.high) == (1, 2)


def test_unknown_procedure_is_proc_unavail(alltypes: ModuleType, rpc: RpcClient) -> None:
    with pytest.raises(errors.ProcUnavail):
        rpc.call(alltypes.ALLTYPES_PROG, alltypes.ALLTYPES_V1, 99, b"")


def test_unknown_program_is_prog_unavail(alltypes: ModuleType, rpc: RpcClient) -> None:
    with pytest.raises(errors.ProgUnavail):
        rpc.call(alltypes.ALLTYPES_PROG + 1, 1, 0, b"")


def test_truncated_arguments_are_garbage_args(alltypes: ModuleType, rpc: RpcClient) -> None:
    with pytest.raises(errors.GarbageArgs):
        rpc.call(alltypes.ALLTYPES_PROG, alltypes.ALLTYPES_V1, alltypes.ECHO_SCALARS, b"\0\0\0")


@pytest.mark.parametrize(
    "params",
    [
        AuthSysParams("py-host", 1000, 100, (5, 6)),
        AuthSysParams("m" * 255, 2**32 - 2, 2**32 - 2, tuple(range(16)), stamp=2**32 - 1),
    ],
    ids=["small", "largest"],
)
def test_c_server_accepts_our_auth_sys(
    params: AuthSysParams, alltypes: ModuleType, c_server: Address, cases: dict[str, Case]
) -> None:
    """libtirpc's svcauth_unix parses our AUTH_SYS body (it answers AUTH_BADCRED if not)."""
    with RpcClient(c_server, timeout=60, auth=AuthSys(params)) as rpc:
        v1 = alltypes.ALLTYPES_V1_Client(rpc)
        assert v1.PING() is None
        value = cases["scalars_min"].value
        assert differences(v1.ECHO_SCALARS(value), value) == []


def test_c_server_reads_our_auth_sys_machine_name(alltypes: ModuleType, c_server: Address) -> None:
    """c/server.c denies PING to AUTH_SYS machine "reject-me" with AUTH_TOOWEAK."""
    auth = AuthSys(AuthSysParams("reject-me", 1000, 100))
    with (
        RpcClient(c_server, timeout=60, auth=auth) as rpc,
        pytest.raises(errors.AuthError) as caught,
    ):
        alltypes.ALLTYPES_V1_Client(rpc).PING()
    assert caught.value.stat == AUTH_TOOWEAK
