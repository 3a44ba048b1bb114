"""Protocol version 2 (rpc_spec/cricket.x): the reply of a pipelined call (a launch sent at
once) waits on the server until the reply of the next call the client waits for, so it never
wakes a client that waits for something else; waiting for it alone asks for it. A client of
version 1 gets it as before, once the server has nothing left to run. Runs on
CRICKET_TEST_BACKEND."""

from __future__ import annotations

import select
from typing import Any

from behaviour_helpers import check

import cricket_client
from cricket_client import driver as cuda
from cricket_xdr.rpc import RpcClient
from rpc_spec import cricket_rpc as proto

E = cuda.CUresult


def _readable(rpc: RpcClient, seconds: float) -> bool:
    poller = select.poll()
    poller.register(rpc._fd, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def test_a_launch_reply_comes_with_the_next_reply_or_when_waited_for_alone(
    session: cricket_client.Connection, kernels: Any
) -> None:
    assert session.info.protocol_version == 2
    empty = check(cuda.cuModuleGetFunction(kernels, b"empty"))
    for _ in range(3):
        check(cuda.cuCtxSynchronize())  # nothing outstanding: the next launch leaves at once
        check(cuda.cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, 0, None, 0))
        assert session.pipeline.pending  # its reply is still to come
        assert not _readable(session._rpc, 0.2)  # and does not come on its own
        assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)  # it came with this reply
        assert not session.pipeline.pending
    check(cuda.cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, 0, None, 0))
    assert session.drain() == 0  # waited for alone: asked for by a NULL call


def test_a_version_1_client_gets_a_pipelined_reply_when_the_server_is_idle(
    server_address: str,
) -> None:
    host, port = server_address.rsplit(":", 1)
    with RpcClient((host, int(port)), timeout=60) as rpc:
        stub = proto.CRICKET_V1_Client(rpc)
        hello = stub.HELLO(proto.hello_args(1, b"", "version 1"))
        assert hello.err == 0 and hello.value.protocol_version == 1
        batch = rpc.call_async(proto.CRICKET_PROG, proto.CRICKET_V1, proto.CU_LAUNCH_KERNEL_BATCH,
                               b"\0\0\0\0")  # fmt: skip
        assert _readable(rpc, 30)  # no later call needed
        batch.result()
