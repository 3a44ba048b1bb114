"""D6: launches made while earlier work is outstanding travel as CU_LAUNCH_KERNEL_BATCH calls;
each launch still behaves as if it came alone: program order against other calls, every
launch attempted, the first failure reported at the next synchronizing call with its place,
and each launch counted as one call for checkpoint replay. Runs on CRICKET_TEST_BACKEND."""

from __future__ import annotations

import ctypes
import re
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from behaviour_helpers import KERNELS, check, open_session
from checkpoint_helpers import ServerProcess, read, server_list, start_restart, start_server

import cricket_client
from cricket_client import driver as cuda

E = cuda.CUresult
ONE = ((1,), (ctypes.c_int,))


def _counter(kernels: Any) -> tuple[Any, Any]:
    counter, _size = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
    add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
    check(cuda.cuMemsetD32(counter, 0, 1))
    return counter, add


def _value(counter: Any) -> int:
    word = bytearray(4)
    check(cuda.cuMemcpyDtoH(word, counter, 4))
    return int(struct.unpack("<i", word)[0])


def test_a_bad_launch_inside_a_batch_is_named_and_the_others_all_run(
    session: cricket_client.Connection, kernels: Any
) -> None:
    counter, add = _counter(kernels)
    for i in range(1000):
        block = 2048 if i == 499 else 1  # over the 1024 threads a block allows
        result = cuda.cuLaunchKernel(add, 1, 1, 1, block, 1, 1, 0, 0, ONE, 0)
        assert result in ((E.CUDA_SUCCESS,), (E.CUDA_ERROR_INVALID_VALUE,))
    assert cuda.cuCtxSynchronize() == (E.CUDA_ERROR_INVALID_VALUE,)
    message = cricket_client.last_error_message()
    assert "cuLaunchKernel" in message
    assert re.search(r"launch \d+ of \d+ in a batch", message), message
    assert cuda.cuCtxSynchronize() == (E.CUDA_SUCCESS,)  # not sticky
    assert _value(counter) == 999  # launches after the bad one in its batch ran too


def test_launches_keep_their_order_against_other_pipelined_calls(
    session: cricket_client.Connection, kernels: Any
) -> None:
    counter, add = _counter(kernels)
    stream = check(cuda.cuStreamCreate(0))
    try:
        for _ in range(300):
            check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, stream, ONE, 0))
        check(cuda.cuMemsetD32Async(counter, 1000, 1, stream))  # overwrites the 300
        for _ in range(7):
            check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, stream, ONE, 0))
        check(cuda.cuStreamSynchronize(stream))
        assert _value(counter) == 1007
    finally:
        check(cuda.cuStreamDestroy(stream))


def test_launches_from_several_threads_all_arrive(
    session: cricket_client.Connection, kernels: Any
) -> None:
    import threading

    counter, add = _counter(kernels)

    def launch_many() -> None:
        with session.active():
            for _ in range(500):
                check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, ONE, 0))

    threads = [threading.Thread(target=launch_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(cuda.cuCtxSynchronize())
    assert _value(counter) == 2000


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield from server_list()


def counter_after_replay(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch,
    prepare: Callable[[Any], tuple[Callable[[], None], Callable[[], None]]],
) -> int:  # fmt: skip
    """700 launches adding 1 to the kernels' counter while nothing is logged (batched), the
    server's call count checked against the client's, a checkpoint, 5 launches more (logged),
    the server killed and restarted from the checkpoint: the counter as the resumed session
    reads it (705 when every launch counted as one call). `prepare(add_to_counter)` gives
    (one launch, wait for the launches)."""
    server = start_server(servers, tmp_path)
    conn = open_session(server.address, make_default=True)
    try:
        kernels = check(cuda.cuModuleLoadData((KERNELS / "test_kernels.sm_90.cubin").read_bytes()))
        _counter_global, add = _counter(kernels)
        launch, wait = prepare(add)
        for _ in range(700):  # batched: no checkpoint has been taken, nothing is logged
            launch()
        wait()
        assert conn._stub.SESSION_CALLS().value == conn.replay_log.seq
        cricket_client.checkpoint(tmp_path / "ckpt")
        for _ in range(5):  # logged now, replayed after the crash
            launch()
        wait()
        server.kill()
        restarted = start_restart(servers, tmp_path, tmp_path / "ckpt")
        monkeypatch.setenv(cricket_client.ADDRESS_ENV, restarted.address)
        new_counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        return int(struct.unpack("<i", read(new_counter, 4))[0])
    finally:
        conn.close()


def test_batched_launches_count_one_call_each_for_replay(
    tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    def prepare(add: Any) -> tuple[Callable[[], None], Callable[[], None]]:
        return (
            lambda: check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, ONE, 0)),
            lambda: check(cuda.cuCtxSynchronize()),
        )

    assert counter_after_replay(tmp_path, servers, monkeypatch, prepare) == 705


def test_a_malformed_batch_is_refused_and_the_session_goes_on(
    session: cricket_client.Connection, kernels: Any
) -> None:
    from cricket_xdr.rpc.errors import GarbageArgs

    counter, add = _counter(kernels)
    prog, vers = session.proto.CRICKET_PROG, session.proto.CRICKET_V1
    for body in (b"\0\0\0\5", b"\0\0\4\1" + bytes(48), b"\0\0\0\1" + bytes(40)):
        with pytest.raises(GarbageArgs):
            session._rpc.call(prog, vers, session.proto.CU_LAUNCH_KERNEL_BATCH, body)
    check(cuda.cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, 0, ONE, 0))
    assert _value(counter) == 1
